"""Profiler roles called directly with a scripted model: coverage, anchoring, citation integrity."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from pydantic import ValidationError

from personae.agents.characterhub.coverage_reflector import (
    CoverageReview,
    DimensionCoverage,
    review_coverage,
    settle_coverage,
)
from personae.agents.characterhub.evidence_summarizer import (
    CitedFact,
    evidence_notes_schema,
    keep_cited_facts,
    summarize_round,
)
from personae.agents.characterhub.profile_rewriter import rewrite_first_person
from personae.agents.characterhub.query_planner import (
    PlannedQuery,
    QueryPlan,
    complete_plan,
    plan_search_queries,
)
from personae.errors import RemoteError
from personae.llm import InvalidAnswerError
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.testing import ScriptedChatModel, prompt_text

SOURCES = [("S1", "Kenshiro", "Kenshiro has seven scars."), ("S2", "Raoh", "Raoh is his brother.")]


async def test_planner_covers_all_seven_dimensions_and_names_the_character() -> None:
    model = ScriptedChatModel(
        responders={
            "QueryPlan": lambda m: {
                "queries": [
                    {"dimension": "ability", "query": "hokuto shinken techniques"},
                    {"dimension": "ability", "query": "Kenshiro signature moves"},
                    {"dimension": "ability", "query": "Kenshiro third ability query"},
                ]
            }
        }
    )
    queries, usage, dropped = await plan_search_queries(
        model, name="Kenshiro", franchise="Fist of the North Star", per_dimension=2
    )
    assert {q.dimension for q in queries} == set(DIMENSIONS)
    assert all("Kenshiro" in q.query and "Fist of the North Star" in q.query for q in queries)
    abilities = [q.query for q in queries if q.dimension == "ability"]
    assert abilities[0] == "Kenshiro hokuto shinken techniques Fist of the North Star"
    assert len(abilities) == 2 and usage.calls == 1  # capped at per_dimension
    assert dropped == 1  # the third ability query: counted, not silently lost


def test_the_plan_counts_empty_and_repeated_queries_but_not_its_own_fills() -> None:
    plan = QueryPlan.model_validate(
        {
            "queries": [
                {"dimension": "identity", "query": "Kenshiro origin"},
                {"dimension": "identity", "query": "  "},
                {"dimension": "appearance", "query": "kenshiro ORIGIN"},
                {"dimension": "appearance", "query": "Kenshiro scars"},
            ]
        }
    )
    kept, dropped = complete_plan(plan, name="Kenshiro", franchise=None, per_dimension=1)
    assert [q.query for q in kept][:2] == ["Kenshiro origin", "Kenshiro scars"]
    assert len(kept) == len(DIMENSIONS)  # five dimensions filled by the code, not counted
    assert dropped == 2  # the empty query and the repeat (its slot went to the next one)


async def test_summarizer_schema_offers_only_the_ids_shown_and_an_invented_one_is_retried() -> None:
    # "[S99]" in a wiki page, or an example id of a prompt: the schema's enum holds only the
    # ids shown, so a constrained model cannot cite it and any other model is told which ids.
    answers = iter(
        [
            {"facts": [{"dimension": "appearance", "text": "Scars.", "source_ids": ["S99"]}]},
            {"facts": [{"dimension": "appearance", "text": "Scars.", "source_ids": ["S1"]}]},
        ]
    )
    model = ScriptedChatModel(responders={"EvidenceNotes": lambda m: next(answers)})
    facts, usage, dropped = await summarize_round(
        model, name="Kenshiro", franchise=None, sources=SOURCES
    )
    assert [(f.text, f.source_ids) for f in facts] == [("Scars.", ["S1"])]
    assert usage.calls == 2 and dropped == 0
    assert "Input should be 'S1' or 'S2'" in prompt_text(model.calls_for("EvidenceNotes")[1])
    schema = evidence_notes_schema(("S1", "S2"))
    fact = schema.model_json_schema()["$defs"]["CitedFact"]["properties"]["source_ids"]
    assert fact["items"]["enum"] == ["S1", "S2"] and fact["minItems"] == 1
    prompt = prompt_text(model.calls_for("EvidenceNotes")[0])
    assert "[S1] Kenshiro" in prompt and '"S5"' not in prompt  # no example ids to copy


@pytest.mark.parametrize(
    "fact",
    [
        {"dimension": "identity", "text": "No source given.", "source_ids": []},
        {"dimension": "identity", "text": "  ", "source_ids": ["S2"]},
        {"dimension": "identity", "text": "Invented.", "source_ids": ["S7"]},
    ],
)
def test_the_notes_schema_rejects_facts_without_a_known_source_or_text(
    fact: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError):
        evidence_notes_schema(("S1", "S2")).model_validate({"facts": [fact]})


async def test_a_summary_still_invalid_after_retries_is_an_invalid_answer_error() -> None:
    model = ScriptedChatModel(responders={"EvidenceNotes": lambda m: "no JSON at all"})
    with pytest.raises(InvalidAnswerError) as failed:
        await summarize_round(model, name="Kenshiro", franchise=None, sources=SOURCES)
    assert isinstance(failed.value, RemoteError) and failed.value.usage.calls == 3


def test_keep_cited_facts_drops_invented_ids_and_unsourced_facts() -> None:
    facts = [
        CitedFact(dimension="identity", text="Successor.", source_ids=["S1", "S7", "S1"]),
        CitedFact(dimension="identity", text="Invented only.", source_ids=["S7"]),
    ]
    kept = keep_cited_facts(facts, {"S1", "S2"})
    assert [(f.text, f.source_ids) for f in kept] == [("Successor.", ["S1"])]


def test_schemas_accept_only_the_seven_dimensions() -> None:
    with pytest.raises(ValidationError):
        CitedFact.model_validate({"dimension": "mood", "text": "Calm.", "source_ids": ["S1"]})
    for schema in (CitedFact, PlannedQuery, DimensionCoverage):
        enum = schema.model_json_schema()["properties"]["dimension"]["enum"]
        assert tuple(enum) == DIMENSIONS


def test_coverage_is_zero_without_facts_and_follow_ups_are_new_and_anchored() -> None:
    review = CoverageReview.model_validate(
        {
            "dimensions": [
                {"dimension": "appearance", "score": 1.0, "follow_up_queries": ["scars"]},
                {"dimension": "ability", "score": 0.9, "follow_up_queries": ["Kenshiro moves"]},
            ]
        }
    )
    scores, follow_ups, dropped = settle_coverage(
        review,
        facts_per_dimension={"appearance": 2},
        name="Kenshiro",
        franchise=None,
        done_queries=["Kenshiro moves"],
        per_dimension=1,
    )
    assert scores["appearance"] == 1.0
    assert scores["ability"] == 0.0  # no fact: a model cannot call it covered
    assert follow_ups == [("appearance", "Kenshiro scars")]
    assert dropped == 1  # "Kenshiro moves" was already run


def test_coverage_scores_are_bounded_by_the_schema() -> None:
    score = DimensionCoverage.model_json_schema()["properties"]["score"]
    assert (score["minimum"], score["maximum"]) == (0, 1)
    with pytest.raises(ValidationError):
        DimensionCoverage.model_validate({"dimension": "identity", "score": 1.7})


async def test_a_plan_or_review_still_invalid_after_retries_degrades_to_the_code_s_own() -> None:
    model = ScriptedChatModel(responders={"QueryPlan": str, "CoverageReview": str})
    queries, usage, _ = await plan_search_queries(model, name="Kenshiro", franchise=None)
    assert {q.dimension for q in queries} == set(DIMENSIONS) and usage.degraded == 1
    assert all(q.query.startswith("Kenshiro ") for q in queries) and usage.calls == 3
    review, used = await review_coverage(
        model,
        name="Kenshiro",
        franchise=None,
        facts_by_dimension={},
        done_queries=[],
        target=0.7,
    )
    assert review.dimensions == [] and used.degraded == 1


def test_follow_ups_beyond_the_cap_or_repeated_are_counted() -> None:
    review = CoverageReview.model_validate(
        {
            "dimensions": [
                {
                    "dimension": "appearance",
                    "score": 0.2,
                    "follow_up_queries": ["scars", "Kenshiro scars", "clothes", "height"],
                },
                {"dimension": "ability", "score": 0.1, "follow_up_queries": ["", "moves"]},
            ]
        }
    )
    scores, follow_ups, dropped = settle_coverage(
        review,
        facts_per_dimension={"appearance": 1, "ability": 1},
        name="Kenshiro",
        franchise=None,
        done_queries=[],
        per_dimension=2,
    )
    assert follow_ups == [
        ("appearance", "Kenshiro scars"),
        ("appearance", "Kenshiro clothes"),
        ("ability", "Kenshiro moves"),
    ]
    assert dropped == 3  # a repeat, one beyond the cap of two, an empty query


async def test_reflector_reads_each_dimension_s_cited_notes() -> None:
    model = ScriptedChatModel(responders={"CoverageReview": lambda m: {"dimensions": []}})
    fact = CitedFact(dimension="appearance", text="Seven scars.", source_ids=["S1", "S2"])
    await review_coverage(
        model,
        name="Kenshiro",
        franchise=None,
        facts_by_dimension={"appearance": [fact]},
        done_queries=["Kenshiro appearance"],
        target=0.7,
    )
    prompt = prompt_text(model.calls_for("CoverageReview")[0])
    assert "appearance: Seven scars. (S1, S2)\n" in prompt
    assert "ability: (nothing yet)" in prompt and "Kenshiro appearance" in prompt


async def test_rewriter_retries_an_empty_profile_or_an_invented_id_and_writes_first_person() -> (
    None
):
    def draft(profile: str, ids: list[str]) -> dict[str, Any]:
        return {
            "profile": profile,
            "canon": "manga",
            "facts": [{"dimension": "identity", "text": "I am the successor.", "source_ids": ids}],
        }

    answers = iter([draft("", ["S1"]), draft("I am Kenshiro.", ["S5"]), draft("I am K.", ["S1"])])

    def respond(messages: list[BaseMessage]) -> dict[str, Any]:
        return next(answers)

    model = ScriptedChatModel(responders={"ProfileDraft": respond})
    result, usage = await rewrite_first_person(
        model,
        name="Kenshiro",
        franchise="Fist of the North Star",
        facts_by_dimension={
            "identity": [CitedFact(dimension="identity", text="x", source_ids=["S1"])]
        },
        passages="[S1] Kenshiro\nKenshiro is the successor of Hokuto Shinken.",
        known_ids={"S1"},
        canon="Canon: Fist of the North Star.",
    )
    assert result.profile == "I am K." and result.facts[0].source_ids == ["S1"]
    assert usage.calls == 3
    first = prompt_text(model.calls_for("ProfileDraft")[0])
    assert "Canon: Fist of the North Star." in first
    assert "Kenshiro is the successor of Hokuto Shinken." in first  # it reads the passages
    assert "analyse it from the character's experiences" in first
    assert "at least 1 character" in prompt_text(model.calls_for("ProfileDraft")[1])
    assert "Input should be 'S1'" in prompt_text(model.calls_for("ProfileDraft")[2])
