"""The evaluation runner: profile loading, leakage, scores, bounded concurrency, judge cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from profile_eval_world import (
    ALLOWED_DRINFO,
    ALLOWED_PROFILE,
    ALLOWED_VERDICTS,
    DEFAULT_TABLES,
    DRINFO_VERDICTS,
    EXCLUDED_PROFILE,
    EXCLUDED_VERDICTS,
    FIXTURE,
    REFERENCE_URL,
    keyword_judge,
    profiler_result,
    scripted_model,
    sentence_extractor,
    write_profiles,
)

from personae.agents.answer_schemas import answers_by_key
from personae.agents.characterhub.support_judge import alignment_list_schema
from personae.answer_store import AnswerStore
from personae.errors import InputError
from personae.evals.characterhub.profile_eval import (
    CharacterCase,
    ProfileDocument,
    ProfileEvalContext,
    evaluate_characters,
    evaluate_profiles,
    leaked_source_ids,
    load_profile_document,
    page_key,
    reference_urls,
)
from personae.evals.characterhub.profile_metrics import score_verdicts
from personae.evals.characterhub.profile_reference import (
    ProfileReference,
    ReferenceSection,
    read_reference_file,
)
from personae.evals.characterhub.profile_report import format_report, html_report, markdown_report
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.memory.characterhub.profile_store import write_profile
from personae.testing import ScriptedChatModel


class CountingModel(ScriptedChatModel):
    """Records how many calls were in flight at once."""

    in_flight: int = 0
    peak: int = 0

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await super()._agenerate(messages, stop, run_manager, **kw)
        finally:
            self.in_flight -= 1


def context_for(
    model: ScriptedChatModel, cache_dir: Path | None, concurrency: int = 4, **changes: Any
) -> ProfileEvalContext:
    return ProfileEvalContext(
        judge_model=model,
        judge_model_name="openai:judge",
        extractor_model=model,
        extractor_model_name="openai:extractor",
        concurrency=concurrency,
        cache_dir=cache_dir,
        **{"verify_evidence": True, **changes},  # the world plants a point quoting nothing
    )


async def run(
    tmp_path: Path,
    model: ScriptedChatModel,
    cache: Path | None,
    concurrency: int = 4,
    out: Path | None = None,
) -> dict[str, Any]:
    allowed, excluded = write_profiles(tmp_path / "profiles")
    profiles = [(p, load_profile_document(p)) for p in (allowed, excluded)]
    reference = read_reference_file(FIXTURE)
    report = await evaluate_profiles(
        profiles,
        reference,
        context=context_for(model, cache, concurrency),
        reference_source=str(FIXTURE),
        out=out,
    )
    assert report.out == out and report.scored == len(report.record["characters"])
    return report.record


def texts_of(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [t for c in report["characters"] for t in c["texts"] if t["text"] == kind]


async def test_report_scores_profile_and_drinfo_by_hand(tmp_path: Path) -> None:
    out = tmp_path / "eval" / "report.json"
    report = await run(tmp_path, scripted_model(), tmp_path / "judge", out=out)
    # the runner writes the report and its renderings (what eval-profile prints the path of)
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert (
        "# CharacterHub profile evaluation" in out.with_suffix(".md").read_text()
        and out.with_suffix(".html").is_file()
    )
    (character,) = report["characters"]
    assert character["reference"]["knowledge_points"] == 6
    assert character["reference"]["dropped_points"] == 1  # the invented point
    assert [p["type"] for p in character["knowledge_points"]] == [
        "ability",
        "relationship",
        "identity",
        "appearance",
        "experience",
        "personality",
    ]
    assert [p["id"] for p in character["knowledge_points"]] == [f"K{i}" for i in range(1, 7)]
    allowed, excluded = texts_of(report, "profile")
    assert [allowed["method"], excluded["method"]] == ["planned (allowed)", "planned (excluded)"]
    assert allowed["overall"]["support_score"] == pytest.approx(3.5 / 6)
    assert allowed["overall"]["irrelevant_rate"] == pytest.approx(1 / 6)
    assert allowed["overall"]["contradiction_rate"] == pytest.approx(1 / 6)
    assert excluded["overall"]["support_score"] == pytest.approx(1.5 / 6)
    assert excluded["overall"]["irrelevant_rate"] == pytest.approx(4 / 6)
    assert excluded["overall"]["contradiction_rate"] == 0.0
    for drinfo in texts_of(report, "drinfo"):
        assert drinfo["overall"]["support_score"] == pytest.approx(2 / 6)
        assert drinfo["per_dimension"]["appearance"]["supported"] == 1
    per = allowed["per_dimension"]
    assert per["identity"]["support_score"] == 0.5
    assert per["experience"]["contradiction_rate"] == 1.0
    assert per["other"] == score_verdicts([]).as_dict()  # no point: counts 0, rates None
    expected = [v.replace(" ", "_") for v in ALLOWED_VERDICTS.values()]
    assert [j["verdict"] for j in allowed["judgments"]] == expected
    assert allowed["judgments"][0]["point"] == "K1"
    assert (allowed["reference_in_sources"], allowed["leaked_source_ids"]) == (True, ["S1"])
    assert (excluded["reference_in_sources"], excluded["leaked_source_ids"]) == (False, [])


async def test_judge_sees_the_list_and_the_text_only_and_extraction_the_whole_page(
    tmp_path: Path,
) -> None:
    model = scripted_model()
    await run(tmp_path, model, None)
    extraction = model.calls_for("ExtractedKnowledge")
    assert len(extraction) == 1 + 4  # the whole reference at once, then each text's density
    judge_prompts = [str(m[0].content) for m in model.calls_for("AlignmentList")]
    assert len(judge_prompts) == 4  # profile and DRInfo of two profiles, one call each
    for prompt in judge_prompts:
        assert prompt.startswith("You are an expert evaluator for role-playing")
        task = prompt.split("Input\n\n`knowledge_list`: ")[1]
        assert "FIGHTING STYLE" not in task  # reference evidence never reaches the judge
        assert "Hokuto Renkit" not in task  # nor the reference page
    assert any(ALLOWED_PROFILE in p for p in judge_prompts)


async def test_density_is_points_extracted_from_the_same_text_per_1k_tokens(
    tmp_path: Path,
) -> None:
    report = await run(tmp_path, scripted_model(), None)
    (character,) = report["characters"]
    reference = character["reference"]["density"]
    assert reference["points"] == 6
    assert reference["per_1k_tokens"] == pytest.approx(6000 / reference["tokens"])
    allowed_profile = texts_of(report, "profile")[0]["density"]
    assert allowed_profile["points"] == 1  # one sentence, one point (the invented one dropped)
    assert allowed_profile["per_1k_tokens"] == pytest.approx(1000 / allowed_profile["tokens"])
    allowed_drinfo = texts_of(report, "drinfo")[0]["density"]
    assert allowed_drinfo["points"] == 2
    assert allowed_drinfo["per_1k_tokens"] == pytest.approx(2000 / allowed_drinfo["tokens"])
    assert character["reference"]["types"]["other"] == 0
    no_density = await evaluate_profiles(
        [(Path("p"), load_profile_document(write_profiles(tmp_path / "n")[0]))],
        read_reference_file(FIXTURE),
        context=context_for(scripted_model(), None, density=False),
    )
    assert no_density.out is None
    assert texts_of(no_density.record, "profile")[0]["density"]["points"] is None


def toki_and_raoh(tmp_path: Path) -> list[CharacterCase]:
    """Two characters, two methods each: Toki (6 points) and Raoh (2 points)."""
    raoh_reference = ProfileReference(
        title="Raoh",
        infobox={"Fighting Style": "Hokuto Shinken"},
        sections=[
            ReferenceSection(heading="Personality", level=2, text="Raoh is gentle to nobody.")
        ],
    )
    cases = []
    for name, reference in (("Toki", read_reference_file(FIXTURE)), ("Raoh", raoh_reference)):
        documents = []
        for method, profile in (("paper", ALLOWED_PROFILE), ("planned", EXCLUDED_PROFILE)):
            text = profile.replace("Toki", name)
            drinfo = ALLOWED_DRINFO.replace("Toki", name) if method == "paper" else ""
            result = profiler_result(text, [], drinfo=drinfo, method=method, name=name)
            path = write_profile(tmp_path / method, result).profile_json
            documents.append((path, load_profile_document(path)))
        cases.append(CharacterCase(name, reference, "ref", "given", documents))
    return cases


async def test_micro_average_pools_all_points_of_all_characters(tmp_path: Path) -> None:
    tables = {}
    for name in ("Toki", "Raoh"):
        tables[ALLOWED_PROFILE.replace("Toki", name)] = ALLOWED_VERDICTS
        tables[EXCLUDED_PROFILE.replace("Toki", name)] = EXCLUDED_VERDICTS
        tables[ALLOWED_DRINFO.replace("Toki", name)] = DRINFO_VERDICTS
    report = await evaluate_characters(
        toki_and_raoh(tmp_path), context_for(scripted_model(tables), None)
    )
    summary = report["summary"]
    assert sorted(summary) == ["paper", "planned"]
    assert sorted(summary["paper"]) == ["drinfo", "profile"]
    assert list(summary["planned"]) == ["profile"]  # no DRInfo stored: not scored
    # Raoh's 2 points: ability (supported under ALLOWED) and personality (supported).
    # Micro: paper profile = (3.5 + 2) / (6 + 2); a macro mean would be (3.5/6 + 1) / 2.
    paper = summary["paper"]["profile"]["overall"]
    assert (paper["n"], paper["supported"]) == (8, 5)
    assert paper["support_score"] == pytest.approx(5.5 / 8)
    planned = summary["planned"]["profile"]
    # EXCLUDED: Toki 1 Sup + 1 Par of 6; Raoh ability irrelevant, personality partial.
    assert planned["overall"]["support_score"] == pytest.approx((1.5 + 0.5) / 8)
    assert planned["per_dimension"]["personality"]["n"] == 2
    assert planned["per_dimension"]["personality"]["partially_supported"] == 2
    assert planned["characters"] == 2
    drinfo = summary["paper"]["drinfo"]["overall"]
    assert drinfo["support_score"] == pytest.approx(2 / 8)  # Raoh: both irrelevant
    per_character = [
        (c["character"], [t["method"] for t in c["texts"]]) for c in report["characters"]
    ]
    assert per_character == [
        ("Toki", ["paper", "paper", "planned"]),
        ("Raoh", ["paper", "paper", "planned"]),
    ]


async def test_reports_carry_table_1_layout_per_character_and_leakage(tmp_path: Path) -> None:
    tables = {}
    for name in ("Toki", "Raoh"):
        tables[ALLOWED_PROFILE.replace("Toki", name)] = ALLOWED_VERDICTS
        tables[EXCLUDED_PROFILE.replace("Toki", name)] = EXCLUDED_VERDICTS
        tables[ALLOWED_DRINFO.replace("Toki", name)] = DRINFO_VERDICTS
    report = await evaluate_characters(
        toki_and_raoh(tmp_path), context_for(scripted_model(tables), None)
    )
    markdown = markdown_report(report)
    lines = markdown.splitlines()
    assert (
        "| Type | Source | paper SS | paper IR | paper CR | planned SS | planned IR | planned CR |"
        in lines
    )
    table = lines[lines.index("## Table 1 layout") + 2 :]
    order = [row.split(" | ")[0].strip("| ") for row in table[2:18:2]]
    assert order == [
        "Personality",
        "Ability",
        "Experience",
        "Relationship",
        "Identity",
        "Appearance",
        "Other",
        "Overall",
    ]
    assert "| Overall | Profile | 68.75 | " in markdown
    assert "| Overall | DRInfo | 25.00 | 75.00 | 0.00 | - | - | - |" in markdown
    assert "| Raoh | planned | Profile | 2 | 25.00 | 50.00 | 0.00 |" in markdown
    page = html_report(report)
    assert page.startswith("<!doctype html>") and "<td>68.75</td>" in page
    assert "Table 1 layout" in format_report(report)


async def test_concurrency_is_bounded_by_the_semaphore(tmp_path: Path) -> None:
    scripted = scripted_model()
    model = CountingModel(responders=scripted.responders, latency=0.01)
    await run(tmp_path, model, None, concurrency=2)
    assert model.peak == 2  # 8 calls were ready at once; never more than 2 ran
    assert len(model.calls_for("AlignmentList")) == 4


async def test_judge_batches_split_the_list_and_keep_ids(tmp_path: Path) -> None:
    model = scripted_model()
    allowed, _ = write_profiles(tmp_path)
    report = await evaluate_profiles(
        [(allowed, load_profile_document(allowed))],
        read_reference_file(FIXTURE),
        context=context_for(model, None, judge_batch=4, density=False),
    )
    prompts = [str(m[0].content).split("Input\n\n")[1] for m in model.calls_for("AlignmentList")]
    assert len(prompts) == 4  # 6 points in batches of 4, for profile and DRInfo
    assert any('"id": 5' in p and '"id": 1' not in p for p in prompts)
    assert texts_of(report.record, "profile")[0]["overall"]["support_score"] == pytest.approx(
        3.5 / 6
    )


async def test_a_judge_answer_missing_or_inventing_ids_is_retried(tmp_path: Path) -> None:
    good = scripted_model().responders["AlignmentList"]
    answers: list[str] = []

    def sloppy(messages: list[BaseMessage]) -> Any:
        answer = good(messages)
        if not answers:
            answers.append("bad")
            del answer["1"]
            answer["99"] = {"evaluation": "supported"}
        return answer

    model = scripted_model()
    model.responders["AlignmentList"] = sloppy
    report = await run(tmp_path, model, None, concurrency=1)
    retried = [m for m in model.calls_for("AlignmentList") if len(m) > 1]
    assert "\n1\n  Field required" in str(retried[0][-1].content)  # the missing id, named
    assert texts_of(report, "drinfo")[0]["overall"]["n"] == 6
    schema = alignment_list_schema([1, 2]).model_json_schema()
    assert schema["required"] == ["1", "2"] and schema["additionalProperties"] is False


async def test_rerun_makes_no_model_call_and_a_changed_profile_only_rejudges_itself(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "judge"
    first_model = scripted_model()
    first = await run(tmp_path / "one", first_model, cache)
    assert len(first_model.calls) == 1 + 8
    assert first["usage"]["llm_calls"] == 9 and first["usage"]["cache_hits"] == 0

    again = scripted_model()
    second = await run(tmp_path / "two", again, cache)
    assert again.calls == []
    assert second["usage"]["llm_calls"] == 0 and second["usage"]["cache_hits"] == 9
    assert texts_of(second, "profile")[0]["overall"] == texts_of(first, "profile")[0]["overall"]

    changed = "I am Toki of Hokuto."
    model = scripted_model({**DEFAULT_TABLES, changed: ALLOWED_VERDICTS})
    allowed, excluded = write_profiles(tmp_path / "three")
    document = load_profile_document(allowed).model_copy(update={"profile": changed})
    await evaluate_profiles(
        [(allowed, document), (excluded, load_profile_document(excluded))],
        read_reference_file(FIXTURE),
        context=context_for(model, cache),
    )
    assert len(model.calls_for("ExtractedKnowledge")) == 1  # the changed profile's density
    assert len(model.calls_for("AlignmentList")) == 1


async def test_cache_ignores_damaged_entries_and_keys_on_model_and_prompt(
    tmp_path: Path,
) -> None:
    from langchain_core.messages import HumanMessage

    AlignmentList = alignment_list_schema([1])  # noqa: N806 (a class built per call)
    prompt: list[BaseMessage] = [HumanMessage("judge this")]
    cache = AnswerStore(tmp_path)
    key = cache.key("m1", {}, AlignmentList, prompt)
    assert key != cache.key("m2", {}, AlignmentList, prompt)
    assert key != cache.key("m1", {}, AlignmentList, [HumanMessage("judge that")])
    answer = {"1": {"evaluation": "supported"}}
    await cache.keep(key, "m1", answer, {"llm_calls": 1})
    found = await cache.find(key, AlignmentList.model_validate)
    assert found is not None and answers_by_key(found[0])["1"].evaluation == "supported"
    (tmp_path / key[:2] / f"{key}.json").write_text("{trunc", encoding="utf-8")
    assert await cache.find(key, AlignmentList.model_validate) is None
    assert await AnswerStore(None).find(key, AlignmentList.model_validate) is None
    assert (cache.hits, cache.misses) == (1, 1)


async def test_a_character_with_no_surviving_point_is_left_out_with_its_points(
    tmp_path: Path,
) -> None:
    def invent(_messages: list[BaseMessage]) -> dict[str, Any]:
        return {
            "knowledge_points": [
                {"knowledge": "Toki flies.", "evidence": "He flies", "type": "other"}
            ]
        }

    model = ScriptedChatModel(responders={"ExtractedKnowledge": invent})
    report = await run(tmp_path, model, None)
    assert report["characters"] == [] and report["degraded"]["characters_left_out"] == 1
    [left] = report["left_out"]
    assert left["left_out"].startswith("no knowledge point of 'Toki' survived --verify-evidence")
    # The extracted points were paid for: kept in the report, marked unquoted.
    assert [(p["statement"], p["quoted"]) for p in left["knowledge_points"]] == [
        ("Toki flies.", False)
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("{oops", "is not valid JSON"),
        ("[1, 2]", "is not a Personae profile.json"),
        (
            json.dumps({"character": "Toki"}),
            r"is not a Personae profile.json \(profile: Field required",
        ),
        (json.dumps({"character": "Toki", "profile": "  "}), "empty profile text"),
    ],
)
def test_bad_profile_files_give_one_line_errors(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "profile.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as caught:
        load_profile_document(path)
    assert "\n" not in str(caught.value)


def test_profile_folder_is_accepted_and_old_profiles_without_content_load(tmp_path: Path) -> None:
    allowed, _ = write_profiles(tmp_path)
    assert load_profile_document(allowed.parent).character == "Toki"
    old = {"character": "Toki", "profile": "I am Toki.", "sources": [{"id": "S1", "url": "u"}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    assert load_profile_document(path).sources[0].content == ""


def test_leakage_matches_any_form_of_the_reference_url() -> None:
    assert page_key("https://Hokuto.fandom.com/wiki/Toki_(Hokuto)#History") == page_key(
        "https://hokuto.fandom.com/wiki/Toki%20(Hokuto)/"
    )
    document = ProfileDocument.model_validate(
        {
            "character": "Toki",
            "profile": ALLOWED_PROFILE,
            "sources": [
                {"id": "S1", "url": "https://example.org/toki"},
                {"id": "S2", "url": "https://hokuto.fandom.com/wiki/Toki#Fighting_Style"},
                {"id": "S3", "url": "https://hokuto.fandom.com/wiki/Toki_Gaiden"},
                {"id": "S4", "url": "HTTPS://HOKUTO.FANDOM.COM:443/wiki/Toki"},
            ],
        }
    )
    assert leaked_source_ids(document, [REFERENCE_URL]) == ["S2", "S4"]
    assert leaked_source_ids(document, []) == []
    redirect = "https://hokuto.fandom.com/wiki/Toki_Gaiden"
    assert leaked_source_ids(document, [REFERENCE_URL, redirect]) == ["S2", "S3", "S4"]


async def test_leakage_is_unknown_when_the_reference_has_no_url(tmp_path: Path) -> None:
    allowed, _ = write_profiles(tmp_path)
    reference = read_reference_file(FIXTURE).model_copy(update={"url": ""})
    report = await evaluate_profiles(
        [(allowed, load_profile_document(allowed))],
        reference,
        context=context_for(scripted_model(), None),
        reference_source="saved/toki.html",
    )
    assert texts_of(report.record, "profile")[0]["reference_in_sources"] is None
    row = next(
        line
        for line in markdown_report(report.record).splitlines()
        if "| Toki | planned | Profile" in line
    )
    assert row.startswith("| Toki | planned | Profile | 6 | 58.33 | 16.67 | 16.67 |")
    assert row.endswith("| unknown |")
    assert reference_urls(read_reference_file(FIXTURE), "https://w/wiki/Toki_(alias)") == [
        REFERENCE_URL,
        "https://w/wiki/Toki_(alias)",
    ]


async def test_real_fandom_page_end_to_end(shared_dir: Path, tmp_path: Path) -> None:
    page = shared_dir / "fixtures" / "wiki" / "hokuto_toki_2020.html"
    model = ScriptedChatModel(
        responders={
            "ExtractedKnowledge": sentence_extractor,
            "AlignmentList": keyword_judge("Raoh"),
        }
    )
    allowed, _ = write_profiles(tmp_path)
    document = load_profile_document(allowed).model_copy(
        update={"profile": "I am Toki. Raoh is my older brother.", "drinfo": ""}
    )
    report = await evaluate_profiles(
        [(allowed, document)], read_reference_file(page), context=context_for(model, None)
    )
    (character,) = report.record["characters"]
    points = character["knowledge_points"]
    assert character["reference"]["dropped_points"] == 0  # exact quotes of real text all verify
    assert len(points) > 30
    assert any("柔の拳" in p["evidence"] for p in points)
    assert {p["type"] for p in points} <= set(DIMENSIONS)
    (result,) = character["texts"]
    assert result["overall"]["n"] == len(points)
    assert sum(s["n"] for s in result["per_dimension"].values()) == len(points)
    raoh = sum("Raoh" in p["statement"] for p in points)
    assert result["overall"]["supported"] == raoh > 0
    assert result["overall"]["irrelevant"] == len(points) - raoh
