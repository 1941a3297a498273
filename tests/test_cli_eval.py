"""`personae eval profile` in-process: report and table, comparison, cache, one-line errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_web import FakeMediaWiki, FakeWeb
from langchain_core.messages import BaseMessage
from profile_eval_world import (
    FIXTURE,
    first_prompt,
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


def evaluate(*args: str, model: bool = True) -> int:
    flags = ["--model", "openai:eval-test"] if model else []
    return main(["eval", "profile", *args, *flags])


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
    assert [p["reference_in_sources"] for p in report["profiles"]] == [True, False]
    assert report["profiles"][0]["overall"]["support_score"] == pytest.approx(3.5 / 6)
    assert report["profiles"][1]["overall"]["support_score"] == pytest.approx(1.5 / 6)
    assert report["models"] == {
        "judge": "openai:eval-test",
        "extractor": "openai:eval-test",  # --model alone serves both roles
    }
    stdout = capsys.readouterr().out
    assert "Comparison (reference allowed vs excluded)" in stdout
    assert f"report: {out}" in stdout
    assert not list(tmp_path.glob(".report.json.*"))  # no temporary file left


def test_rerun_is_served_from_the_judge_cache(
    model: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = write_profiles(tmp_path)
    assert evaluate(str(allowed), "--reference", str(FIXTURE)) == 0
    calls = len(model.calls)
    assert calls == 5 + 6
    assert evaluate(str(allowed), "--reference", str(FIXTURE), "--concurrency", "1") == 0
    assert len(model.calls) == calls
    report = json.loads((allowed.parent / "eval-report.json").read_text(encoding="utf-8"))
    assert report["usage"]["llm_calls"] == 0 and report["usage"]["cache_hits"] == 11
    assert "LLM calls 0, cache hits 11" in capsys.readouterr().out


def test_judge_model_comes_from_its_own_setting(
    model: ScriptedChatModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge, flagged = scripted_model(), scripted_model()
    override_models(specs={"openai:eval-judge": judge})
    override_models(specs={"openai:eval-flag-judge": flagged})
    allowed, _ = write_profiles(tmp_path)
    monkeypatch.setenv("PERSONAE_JUDGE_MODEL", "openai:eval-judge")
    assert evaluate(str(allowed), "--reference", str(FIXTURE)) == 0
    # The extractor (5 chunks) ran on --model, the 6 judgements on PERSONAE_JUDGE_MODEL.
    assert (len(model.calls), len(judge.calls)) == (5, 6)
    report = json.loads((allowed.parent / "eval-report.json").read_text(encoding="utf-8"))
    assert report["models"] == {
        "judge": "openai:eval-judge",
        "extractor": "openai:eval-test",
    }
    out = tmp_path / "flag.json"
    flags = ["--judge-model", "openai:eval-flag-judge", "--out", str(out)]
    assert evaluate(str(allowed), "--reference", str(FIXTURE), *flags) == 0
    assert len(flagged.calls) == 6 and len(model.calls) == 5  # extractor points cached
    assert json.loads(out.read_text())["models"]["judge"] == "openai:eval-flag-judge"


def test_reference_url_fetched_from_a_wiki(model: ScriptedChatModel, tmp_path: Path) -> None:
    wiki = FakeMediaWiki({"Toki": FIXTURE.read_text(encoding="utf-8")})
    with LoopbackWebServer(FakeWeb(wiki=wiki).route) as server:
        url = f"{server.url}/wiki/Toki"
        allowed, excluded = write_profiles(tmp_path, reference_url=url)
        assert evaluate(str(allowed), str(excluded), "--reference", url) == 0
    report = json.loads((allowed.parent / "eval-report.json").read_text(encoding="utf-8"))
    assert report["reference"]["url"] == url
    assert report["reference"]["knowledge_points"] == 6
    assert [p["leaked_source_ids"] for p in report["profiles"]] == [["S1"], []]


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
    before = files_under(tmp_path)
    out = tmp_path / "out" / "report.json"
    result = evaluate(
        profile, "--reference", reference, "--out", str(out), *extra, model=case != "no model"
    )
    assert result == code
    err = capsys.readouterr().err
    assert err.startswith("personae: error: ") and err.count("\n") == 1
    assert "Traceback" not in err
    assert re.search(message, err), err
    assert not out.exists() and files_under(tmp_path) == before
    assert model.calls == []


def test_judge_failure_writes_nothing_and_the_rerun_resumes_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = write_profiles(tmp_path)
    broken = scripted_model()
    good_judge = broken.responders["SupportJudgment"]

    def flaky(messages: list[BaseMessage]) -> Any:
        if "## Knowledge point (appearance)" in first_prompt(messages):
            return "I cannot decide."  # no tool call: malformed, retried, then a RemoteError
        return good_judge(messages)

    broken.responders["SupportJudgment"] = flaky
    override_models(specs={"openai:eval-test": broken})
    code = evaluate(str(allowed), "--reference", str(FIXTURE), "--concurrency", "1")
    assert code == 3
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(
        "personae: error: the model gave malformed SupportJudgment output 3 times"
    )
    assert "Traceback" not in err
    assert not (allowed.parent / "eval-report.json").exists()
    judged_before = sum(
        "(appearance)" not in first_prompt(m) for m in broken.calls_for("SupportJudgment")
    )
    assert 3 <= judged_before < 6  # K1-K3 ran before K4 failed; the rest was cancelled

    fixed = scripted_model()
    override_models(specs={"openai:eval-test": fixed})
    assert evaluate(str(allowed), "--reference", str(FIXTURE)) == 0
    assert fixed.calls_for("ExtractedKnowledge") == []
    assert len(fixed.calls_for("SupportJudgment")) == 6 - judged_before
    report = json.loads((allowed.parent / "eval-report.json").read_text(encoding="utf-8"))
    assert report["profiles"][0]["overall"]["n"] == 6


def test_profiles_with_the_reference_allowed_and_excluded_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented workflow: profile twice (once with --exclude-url), then compare."""
    web, _, _ = fake_web()
    profiler = profiler_model(score=0.9)
    evaluator = ScriptedChatModel(
        responders={
            "ExtractedKnowledge": sentence_extractor,
            "SupportJudgment": keyword_judge("Hokuto Shinken"),
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
            ["eval", "profile", *profiles, "--reference", reference, "--out", str(out)]
            + ["--model", "openai:evaluator"]
        )
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    allowed, excluded = report["profiles"]
    assert allowed["reference_in_sources"] is True and allowed["leaked_source_ids"]
    assert excluded["reference_in_sources"] is False and excluded["leaked_source_ids"] == []
    points = report["knowledge_points"]
    assert report["reference"]["knowledge_points"] == len(points) == 7  # lead line is cut in two
    assert [p["type"] for p in points] == [
        "other",
        "other",
        "appearance",
        "personality",
        "other",
        "relationship",
        "other",
    ]
    masters = next(p for p in points if "masters Hokuto Shinken" in p["statement"])
    assert masters["type"] == "other"  # heading "Abilities" does not name the dimension
    for result in (allowed, excluded):
        assert result["overall"]["supported"] == 2  # the two sentences naming Hokuto Shinken
        assert result["density"]["evidence"]["tokens"] > 0
    assert "Comparison (reference allowed vs excluded)" in capsys.readouterr().out
