"""The evaluation runner: profile loading, leakage, scores, bounded concurrency, judge cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from profile_eval_world import (
    ALLOWED_PROFILE,
    ALLOWED_VERDICTS,
    EXCLUDED_PROFILE,
    FIXTURE,
    REFERENCE_URL,
    keyword_judge,
    scripted_model,
    sentence_extractor,
    write_profiles,
)

from personae.agents.query_planner import DIMENSIONS
from personae.errors import InputError, RemoteError
from personae.evals.judge_cache import JudgeCache, prompt_key
from personae.evals.profile_eval import (
    ProfileDocument,
    ProfileEvalContext,
    evaluate_profiles,
    format_report,
    leaked_source_ids,
    load_profile_document,
    page_key,
    reference_urls,
)
from personae.evals.profile_metrics import score_verdicts
from personae.evals.profile_reference import read_reference_file
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
    model: ScriptedChatModel, cache_dir: Path | None, concurrency: int = 4
) -> ProfileEvalContext:
    return ProfileEvalContext(
        judge_model=model,
        judge_model_name="openai:judge",
        extractor_model=model,
        extractor_model_name="openai:extractor",
        concurrency=concurrency,
        cache_dir=cache_dir,
    )


async def run(
    tmp_path: Path, model: ScriptedChatModel, cache: Path | None, concurrency: int = 4
) -> dict[str, Any]:
    allowed, excluded = write_profiles(tmp_path / "profiles")
    profiles = [(p, load_profile_document(p)) for p in (allowed, excluded)]
    reference = read_reference_file(FIXTURE)
    report: dict[str, Any] = await evaluate_profiles(
        profiles, reference, context_for(model, cache, concurrency), reference_source=str(FIXTURE)
    )
    return report


async def test_report_scores_both_profiles_by_hand(tmp_path: Path) -> None:
    report = await run(tmp_path, scripted_model(), tmp_path / "judge")
    assert report["reference"]["knowledge_points"] == 6
    assert report["reference"]["dropped_points"] == 5  # one invented point per chunk
    assert [p["type"] for p in report["knowledge_points"]] == [
        "ability",
        "relationship",
        "identity",
        "appearance",
        "experience",
        "personality",
    ]
    assert [p["id"] for p in report["knowledge_points"]] == [f"K{i}" for i in range(1, 7)]
    allowed, excluded = report["profiles"]
    assert allowed["overall"]["support_score"] == pytest.approx(3.5 / 6)
    assert allowed["overall"]["irrelevant_rate"] == pytest.approx(1 / 6)
    assert allowed["overall"]["contradiction_rate"] == pytest.approx(1 / 6)
    assert excluded["overall"]["support_score"] == pytest.approx(1.5 / 6)
    assert excluded["overall"]["irrelevant_rate"] == pytest.approx(4 / 6)
    assert excluded["overall"]["contradiction_rate"] == 0.0
    per = allowed["per_dimension"]
    assert per["identity"]["support_score"] == 0.5
    assert per["experience"]["contradiction_rate"] == 1.0
    assert per["other"] == score_verdicts([]).as_dict()  # no point: counts 0, rates None
    assert [j["verdict"] for j in allowed["judgments"]] == list(ALLOWED_VERDICTS.values())
    assert allowed["judgments"][0]["point"] == "K1"
    assert (allowed["reference_in_sources"], allowed["leaked_source_ids"]) == (True, ["S1"])
    assert (excluded["reference_in_sources"], excluded["leaked_source_ids"]) == (False, [])


async def test_density_counts_credited_points_per_thousand_tokens(tmp_path: Path) -> None:
    report = await run(tmp_path, scripted_model(), None)
    density = report["profiles"][0]["density"]
    assert density["profile"]["points"] == 3.5
    tokens = density["profile"]["tokens"]
    assert 0 < tokens < 40
    assert density["profile"]["per_1k_tokens"] == pytest.approx(3500 / tokens)
    evidence = density["evidence"]
    assert evidence["tokens"] > 20 * tokens  # two sources of raw passages
    assert evidence["per_1k_tokens"] == pytest.approx(3500 / evidence["tokens"])
    assert report["reference"]["density"]["points"] == 6


async def test_concurrency_is_bounded_by_the_semaphore(tmp_path: Path) -> None:
    scripted = scripted_model()
    model = CountingModel(responders=scripted.responders, latency=0.01)
    await run(tmp_path, model, None, concurrency=3)
    assert model.peak == 3  # 12 judge calls were ready at once; never more than 3 ran
    assert len(model.calls_for("SupportJudgment")) == 12


async def test_rerun_makes_no_model_call_and_a_changed_profile_only_rejudges_itself(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "judge"
    first_model = scripted_model()
    first = await run(tmp_path / "one", first_model, cache)
    assert len(first_model.calls) == 5 + 12
    assert first["usage"]["llm_calls"] == 17 and first["usage"]["cache_hits"] == 0

    again = scripted_model()
    second = await run(tmp_path / "two", again, cache)
    assert again.calls == []
    assert second["usage"]["llm_calls"] == 0 and second["usage"]["cache_hits"] == 17
    assert second["profiles"][0]["overall"] == first["profiles"][0]["overall"]

    changed = "I am Toki of Hokuto."
    model = scripted_model({changed: ALLOWED_VERDICTS, EXCLUDED_PROFILE: ALLOWED_VERDICTS})
    allowed, excluded = write_profiles(tmp_path / "three")
    document = load_profile_document(allowed).model_copy(update={"profile": changed})
    await evaluate_profiles(
        [(allowed, document), (excluded, load_profile_document(excluded))],
        read_reference_file(FIXTURE),
        context_for(model, cache),
    )
    assert model.calls_for("ExtractedKnowledge") == []
    assert len(model.calls_for("SupportJudgment")) == 6


def test_cache_ignores_damaged_entries_and_keys_on_model_and_prompt(tmp_path: Path) -> None:
    from langchain_core.messages import HumanMessage

    from personae.agents.support_judge import SupportJudgment

    prompt: list[BaseMessage] = [HumanMessage("judge this")]
    key = prompt_key("m1", SupportJudgment, prompt)
    assert key != prompt_key("m2", SupportJudgment, prompt)
    assert key != prompt_key("m1", SupportJudgment, [HumanMessage("judge that")])
    cache = JudgeCache(tmp_path)
    cache.put(key, "m1", SupportJudgment(reason="r", verdict="supported"))
    stored = cache.get(key, SupportJudgment)
    assert stored is not None and stored.verdict == "supported"
    (tmp_path / key[:2] / f"{key}.json").write_text("{trunc", encoding="utf-8")
    assert cache.get(key, SupportJudgment) is None
    assert JudgeCache(None).get(key, SupportJudgment) is None


async def test_no_surviving_point_is_a_clear_remote_error(tmp_path: Path) -> None:
    def invent(_messages: list[BaseMessage]) -> dict[str, Any]:
        return {"points": [{"statement": "Toki flies.", "evidence": "He flies", "type": "other"}]}

    model = ScriptedChatModel(responders={"ExtractedKnowledge": invent})
    with pytest.raises(RemoteError, match="no knowledge point of 'Toki' survived") as caught:
        await run(tmp_path, model, None)
    assert "\n" not in str(caught.value)


async def test_table_shows_overall_dimensions_density_and_comparison(tmp_path: Path) -> None:
    report = await run(tmp_path, scripted_model(), None)
    table = format_report(report)
    lines = table.splitlines()
    assert lines[0].startswith("Reference: Toki (https://hokuto.fandom.com/wiki/Toki): 6")
    assert any(
        line.split()[:9] == ["overall", "6", "3", "1", "1", "1", "0.583", "0.167", "0.167"]
        for line in lines
    )
    assert any(line.split() == ["other", "0", "0", "0", "0", "0", "-", "-", "-"] for line in lines)
    assert "reference page in sources: yes (S1)" in table
    density = report["profiles"][0]["density"]
    profile, evidence = density["profile"], density["evidence"]
    assert (
        "knowledge density (points per 1k tokens): "
        f"profile {profile['per_1k_tokens']:.2f} ({profile['tokens']:,} tokens), "
        f"evidence {evidence['per_1k_tokens']:.2f} ({evidence['tokens']:,} tokens)"
    ) in lines
    comparison = lines[lines.index("Comparison (reference allowed vs excluded)") + 2 :]
    assert comparison[0].split()[:4] == ["yes", "0.583", "0.167", "0.167"]
    assert comparison[1].split()[:4] == ["no", "0.250", "0.667", "0.000"]


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
        context_for(scripted_model(), None),
        reference_source="saved/toki.html",
    )
    assert report["profiles"][0]["reference_in_sources"] is None
    assert "reference page in sources: unknown (the reference has no URL)" in format_report(report)
    assert reference_urls(read_reference_file(FIXTURE), "https://w/wiki/Toki_(alias)") == [
        REFERENCE_URL,
        "https://w/wiki/Toki_(alias)",
    ]


async def test_real_fandom_page_end_to_end(shared_dir: Path, tmp_path: Path) -> None:
    page = shared_dir / "fixtures" / "wiki" / "hokuto_toki_2020.html"
    model = ScriptedChatModel(
        responders={
            "ExtractedKnowledge": sentence_extractor,
            "SupportJudgment": keyword_judge("Raoh"),
        }
    )
    allowed, _ = write_profiles(tmp_path)
    document = load_profile_document(allowed).model_copy(
        update={"profile": "I am Toki. Raoh is my older brother."}
    )
    report = await evaluate_profiles(
        [(allowed, document)], read_reference_file(page), context_for(model, None)
    )
    points = report["knowledge_points"]
    assert report["reference"]["dropped_points"] == 0  # exact quotes of real text all verify
    assert len(points) > 30
    assert any("柔の拳" in p["evidence"] for p in points)
    assert {p["type"] for p in points} <= set(DIMENSIONS)
    result = report["profiles"][0]
    assert result["overall"]["n"] == len(points)
    assert sum(s["n"] for s in result["per_dimension"].values()) == len(points)
    raoh = sum("Raoh" in p["statement"] for p in points)
    assert result["overall"]["supported"] == raoh > 0
    assert result["overall"]["irrelevant"] == len(points) - raoh
