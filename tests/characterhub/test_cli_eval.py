"""`personae characterhub eval` in-process: report and table, comparison, cache, one-line errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_errors import assert_one_line_error
from fake_web import FakeMediaWiki, FakeWeb
from langchain_core.messages import BaseMessage
from profile_eval_world import (
    FIXTURE,
    first_prompt,
    judge_input,
    keyword_judge,
    scripted_model,
    sentence_extractor,
    write_profiles,
)
from profiler_world import fake_web
from profiler_world import scripted_model as profiler_model

from personae.cli import main
from personae.loopback import LoopbackWebServer, free_port
from personae.testing import ScriptedChatModel, override_models


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model()
    override_models(specs={"openai:eval-test": scripted})
    yield scripted


def profile_texts(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for c in report["characters"] for t in c["texts"] if t["text"] == "profile"]


def evaluate(*args: str, model: bool = True) -> int:
    flags = ["--model", "openai:eval-test"] if model else []
    # The world plants a point whose evidence quotes nothing: the filter (opt-in) drops it.
    return main(["characterhub", "eval", *args, *flags, "--verify-evidence"])


def files_under(root: Path) -> list[str]:
    """Every file under ``root`` except the caches."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != "cache"
    )


def test_compares_allowed_and_excluded_profiles(
    model: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, excluded = write_profiles(tmp_path)
    out = tmp_path / "report.json"
    code = evaluate(str(allowed), str(excluded), "--reference", str(FIXTURE), "--out", str(out))
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    profiles = profile_texts(report)
    assert [p["reference_in_sources"] for p in profiles] == [True, False]
    assert profiles[0]["overall"]["support_score"] == pytest.approx(3.5 / 6)
    assert profiles[1]["overall"]["support_score"] == pytest.approx(1.5 / 6)
    assert report["settings"] == {
        "judge": {"model": "openai:eval-test"},
        "extractor": {"model": "openai:eval-test"},  # the same model extracts and judges
    }
    stdout = capsys.readouterr().out
    assert "Table 1 layout" in stdout and "leakage: Toki (planned (allowed))" in stdout
    assert f"report: {out}" in stdout
    assert "| Overall | Profile |" in out.with_suffix(".md").read_text(encoding="utf-8")
    assert out.with_suffix(".html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert not list(tmp_path.glob(".report.*"))  # no temporary file left


def test_rerun_is_served_from_the_judge_cache(
    model: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = write_profiles(tmp_path)
    assert evaluate(str(allowed), "--reference", str(FIXTURE)) == 0
    calls = len(model.calls)
    assert calls == 1 + 4  # the page; each text judged and its density extracted
    assert evaluate(str(allowed), "--reference", str(FIXTURE), "--concurrency", "1") == 0
    assert len(model.calls) == calls
    report = json.loads((allowed.parent / "eval-report.json").read_text(encoding="utf-8"))
    assert report["usage"]["llm_calls"] == 0 and report["usage"]["cache_hits"] == 5
    assert "LLM calls 0, cache hits 5" in capsys.readouterr().out


def test_judge_model_comes_from_its_own_setting(
    model: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge, flagged = scripted_model(), scripted_model()
    override_models(specs={"openai:eval-judge": judge})
    override_models(specs={"openai:eval-flag-judge": flagged})
    allowed, _ = write_profiles(tmp_path)
    monkeypatch.setenv("PERSONAE_JUDGE_MODEL", "openai:eval-judge")
    assert evaluate(str(allowed), "--reference", str(FIXTURE)) == 0
    # The judge of PERSONAE_JUDGE_MODEL also extracts, unless --extractor-model says.
    assert (len(model.calls), len(judge.calls)) == (0, 5)
    estimate = capsys.readouterr().err.splitlines()[0]  # before any call: who will be paid
    assert estimate.startswith("estimated: ") and "LLM calls" in estimate
    assert estimate.endswith("judge openai:eval-judge, extractor the judge")
    report = json.loads((allowed.parent / "eval-report.json").read_text(encoding="utf-8"))
    assert report["settings"]["extractor"] == {"model": "openai:eval-judge"}
    out = tmp_path / "flag.json"
    flags = ["--judge-model", "openai:eval-flag-judge", "--out", str(out)]
    flags += ["--extractor-model", "openai:eval-test", "--temperature", "0.7,judge=0"]
    monkeypatch.setenv("PERSONAE_TOP_P", "0.8")
    assert evaluate(str(allowed), "--reference", str(FIXTURE), *flags) == 0
    assert len(flagged.calls) == 2 and len(model.calls) == 3  # 2 judged; 3 extractions
    assert json.loads(out.read_text())["settings"] == {
        "judge": {"model": "openai:eval-flag-judge", "temperature": 0.0, "top_p": 0.8},
        "extractor": {"model": "openai:eval-test", "temperature": 0.7, "top_p": 0.8},
    }


def test_reference_url_fetched_from_a_wiki(model: ScriptedChatModel, tmp_path: Path) -> None:
    wiki = FakeMediaWiki({"Toki": FIXTURE.read_text(encoding="utf-8")})
    with LoopbackWebServer(FakeWeb(wiki=wiki).route) as server:
        url = f"{server.url}/wiki/Toki"
        allowed, excluded = write_profiles(tmp_path, reference_url=url)
        assert evaluate(str(allowed), str(excluded), "--reference", url) == 0
    report = json.loads((allowed.parent / "eval-report.json").read_text(encoding="utf-8"))
    reference = report["characters"][0]["reference"]
    assert (reference["url"], reference["found_by"]) == (url, "given")
    assert reference["knowledge_points"] == 6
    assert [p["leaked_source_ids"] for p in profile_texts(report)] == [["S1"], []]


@pytest.mark.parametrize(
    ("case", "code", "message"),
    [
        ("missing profile", 2, "profile file .*missing.json does not exist"),
        ("malformed profile", 2, "is not valid JSON"),
        ("not a profile", 2, "is not a Personae profile.json"),
        ("missing reference", 2, "reference file .*nowhere.html does not exist"),
        ("empty reference", 2, "has no content"),
        ("unreachable reference", 3, "cannot fetch the reference http://127.0.0.1"),
        ("no model", 2, "no LLM is configured; set OPENAI_API_KEY"),
        ("bad concurrency", 2, "--concurrency must be at least 1"),
        ("bad temperature", 2, "temperature 'hot' is not a number"),
        ("bad role", 2, "top_p names an unknown role 'critic'"),
        ("bad judge batch", 2, "--judge-batch must be at least 1"),
        ("missing references", 2, "references file .*refs.csv does not exist"),
    ],
)
def test_bad_input_is_one_line_nonzero_and_writes_nothing(
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    code: int,
    message: str,
) -> None:
    allowed, _ = write_profiles(tmp_path)
    profile, reference, extra = str(allowed), str(FIXTURE), []
    if case == "missing profile":
        profile = str(tmp_path / "missing.json")
    elif case == "malformed profile":
        profile = str(tmp_path / "broken.json")
        Path(profile).write_text('{"character": "Toki", ', encoding="utf-8")
    elif case == "not a profile":
        profile = str(tmp_path / "card.json")
        Path(profile).write_text(json.dumps({"spec": "chara_card_v3"}), encoding="utf-8")
    elif case == "missing reference":
        reference = str(tmp_path / "nowhere.html")
    elif case == "empty reference":
        reference = str(tmp_path / "empty.html")
        Path(reference).write_text("<html><body></body></html>", encoding="utf-8")
    elif case == "unreachable reference":
        reference = f"http://127.0.0.1:{free_port()}/wiki/Toki"
    elif case == "bad concurrency":
        extra = ["--concurrency", "0"]
    elif case == "bad temperature":
        extra = ["--temperature", "hot"]
    elif case == "bad role":
        extra = ["--top-p", "critic=0.5"]
    elif case == "bad judge batch":
        extra = ["--judge-batch", "0"]
    chosen = ["--reference", reference]
    if case == "missing references":
        chosen = ["--references", str(tmp_path / "refs.csv")]
    before = files_under(tmp_path)
    out = tmp_path / "out" / "report.json"
    result = evaluate(profile, *chosen, "--out", str(out), *extra, model=case != "no model")
    assert result == code
    assert_one_line_error(capsys.readouterr().err, message)
    assert not out.exists() and files_under(tmp_path) == before
    assert model.calls == []


def test_judge_failure_writes_nothing_and_the_rerun_resumes_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = write_profiles(tmp_path)
    broken = scripted_model()
    good_judge = broken.responders["AlignmentList"]

    def flaky(messages: list[BaseMessage]) -> Any:
        if "# Toki" in first_prompt(messages):  # the DRInfo text
            return "I cannot decide."  # no tool call: malformed, retried, then degraded
        return good_judge(messages)

    broken.responders["AlignmentList"] = flaky
    override_models(specs={"openai:eval-test": broken})
    code = evaluate(str(allowed), "--reference", str(FIXTURE), "--concurrency", "1")
    assert code == 3
    err = capsys.readouterr().err
    # The DRInfo batch fails, then each of its 6 points alone: 6 of 12 judgments degraded.
    assert err.splitlines()[-1].startswith(
        "personae: error: stopped: 6 of 12 judgments degraded, more than --max-failures 10% (1)"
    )
    assert "Traceback" not in err
    assert not (allowed.parent / "eval-report.json").exists()
    assert not (allowed.parent / "eval-report.md").exists()
    judged_before = sum("# Toki" not in first_prompt(m) for m in broken.calls_for("AlignmentList"))
    assert judged_before <= 1  # the profile may have been judged before DRInfo failed

    fixed = scripted_model()
    override_models(specs={"openai:eval-test": fixed})
    assert evaluate(str(allowed), "--reference", str(FIXTURE)) == 0
    rejudged = [first_prompt(m) for m in fixed.calls_for("AlignmentList")]
    assert any("# Toki" in p for p in rejudged) and len(rejudged) <= 2
    report = json.loads((allowed.parent / "eval-report.json").read_text(encoding="utf-8"))
    assert profile_texts(report)[0]["overall"]["n"] == 6


def test_degraded_judgments_are_left_out_counted_and_printed_below_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = write_profiles(tmp_path)
    model = scripted_model()
    good_judge = model.responders["AlignmentList"]

    def no_label_for_white_hair(messages: list[BaseMessage]) -> Any:
        items, _ = judge_input(messages)
        if any("white hair" in item["knowledge"] for item in items):
            return "I cannot decide."
        return good_judge(messages)

    model.responders["AlignmentList"] = no_label_for_white_hair
    override_models(specs={"openai:eval-test": model})
    out = tmp_path / "r.json"
    argv = [str(allowed), "--reference", str(FIXTURE), "--out", str(out), "--no-density"]
    assert evaluate(*argv, "--max-failures", "2") == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["degraded"] == {"total": 2, "judgments": 2, "characters_left_out": 0}
    for text in report["characters"][0]["texts"]:
        assert text["overall"]["n"] == 5 and text["unjudged_points"] == 1
        assert sum(j["verdict"] is None for j in text["judgments"]) == 1
    assert "degraded: 2 (judgments 2)\n" in capsys.readouterr().err
    assert "**Degraded:** 2 model answer(s)" in out.with_suffix(".md").read_text()


def test_profiles_with_the_reference_allowed_and_excluded_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented workflow: profile twice (once with --exclude-url), then compare."""
    web, _, _ = fake_web()
    profiler = profiler_model(score=0.9)
    evaluator = ScriptedChatModel(
        responders={
            "ExtractedKnowledge": sentence_extractor,
            "AlignmentList": keyword_judge("Hokuto Shinken"),
        }
    )
    override_models(specs={"openai:profiler": profiler})
    override_models(specs={"openai:evaluator": evaluator})
    with LoopbackWebServer(web.route) as server:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:profiler")
        reference = f"{server.url}/wiki/Kenshiro"
        for folder, extra in (("with", []), ("without", ["--exclude-url", reference])):
            args = [
                "profile",
                "Kenshiro",
                "--wiki",
                server.url,
                "--out",
                str(tmp_path / folder),
            ]
            assert main([*args, *extra]) == 0
        profiles = [
            str(tmp_path / folder / "kenshiro" / "profile.json") for folder in ("with", "without")
        ]
        out = tmp_path / "report.json"
        code = main(
            ["characterhub", "eval", *profiles, "--reference", reference, "--out", str(out)]
            + ["--model", "openai:evaluator", "--verify-evidence"]
        )
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    allowed, excluded = profile_texts(report)
    assert allowed["reference_in_sources"] is True and allowed["leaked_source_ids"]
    assert excluded["reference_in_sources"] is False and excluded["leaked_source_ids"] == []
    (character,) = report["characters"]
    points = character["knowledge_points"]
    assert character["reference"]["knowledge_points"] == len(points)
    masters = next(p for p in points if "masters Hokuto Shinken" in p["statement"])
    assert masters["type"] == "other"  # heading "Abilities" does not name the dimension
    for result in (allowed, excluded):
        assert result["overall"]["supported"] == 2  # the two sentences naming Hokuto Shinken
        assert result["density"]["tokens"] > 0
    assert "Table 1 layout" in capsys.readouterr().out


def test_a_folder_of_characters_and_methods_one_report_references_from_csv_or_fandom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two characters × two methods in one folder: Toki's reference from the CSV, Raoh's found
    on the franchise's Fandom wiki (a loopback wiki mounted where the template points)."""
    from profile_eval_world import (
        ALLOWED_DRINFO,
        ALLOWED_PROFILE,
        ALLOWED_VERDICTS,
        DRINFO_VERDICTS,
        EXCLUDED_PROFILE,
        EXCLUDED_VERDICTS,
        judge,
        profiler_result,
    )
    from profile_eval_world import extract as table9

    from personae.memory.characterhub.profile_store import write_profile

    raoh_page = "<p>Raoh is gentle to nobody.</p>"
    wiki = FakeMediaWiki({"Raoh": raoh_page})
    tables: dict[str, dict[str, str]] = {}
    with LoopbackWebServer(FakeWeb(wikis={"/fistofthenorthstar": wiki}).route) as server:
        raoh_url = f"{server.url}/fistofthenorthstar/wiki/Raoh"
        for name in ("Toki", "Raoh"):
            for method, profile in (("paper", ALLOWED_PROFILE), ("planned", EXCLUDED_PROFILE)):
                text = profile.replace("Toki", name)
                tables[text] = ALLOWED_VERDICTS if method == "paper" else EXCLUDED_VERDICTS
                drinfo = ALLOWED_DRINFO.replace("Toki", name)
                tables[drinfo] = DRINFO_VERDICTS
                urls = [raoh_url] if name == "Raoh" and method == "paper" else []
                result = profiler_result(text, urls, drinfo=drinfo, method=method, name=name)
                result["wiki_page"] = None
                write_profile(tmp_path / "runs" / method, result)
        csv_file = tmp_path / "refs.csv"
        csv_file.write_text(f"character,reference\ntoki,{FIXTURE}\n", encoding="utf-8")
        model = ScriptedChatModel(
            responders={"ExtractedKnowledge": table9, "AlignmentList": judge(tables)}
        )
        override_models(specs={"openai:eval-many": model})
        monkeypatch.setenv("PERSONAE_FANDOM_TEMPLATE", server.url + "/{slug}")
        monkeypatch.delenv("TAVILY_API_KEY", raising=False)
        code = main(
            ["characterhub", "eval", str(tmp_path / "runs"), "--references", str(csv_file)]
            + [
                "--model",
                "openai:eval-many",
                "--out",
                str(tmp_path / "report"),
                "--verify-evidence",
            ]
        )
    assert code == 0
    report = json.loads((tmp_path / "report" / "eval-report.json").read_text(encoding="utf-8"))
    references = {c["character"]: c["reference"] for c in report["characters"]}
    assert (references["Toki"]["found_by"], references["Raoh"]["found_by"]) == ("given", "fandom")
    assert references["Raoh"]["url"] == raoh_url
    assert sorted(report["summary"]) == ["paper", "planned"]
    paper = report["summary"]["paper"]["profile"]["overall"]
    assert paper["n"] == 6 + 1  # points of both characters pooled
    assert paper["support_score"] == pytest.approx((3.5 + 1) / 7)  # Raoh: personality supported
    markdown = (tmp_path / "report" / "eval-report.md").read_text(encoding="utf-8")
    assert "| Raoh | " + raoh_url + " | fandom | 1 | 1 |" in markdown
    assert "Raoh (paper): the reference page is among the sources (S1)" in markdown
    err = capsys.readouterr().err
    assert f"Raoh: reference found by fandom: {raoh_url}" in err
