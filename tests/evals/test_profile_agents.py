"""Knowledge extractor (quotes verified in code) and support judge (closed verdict set)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from pydantic import ValidationError

from personae.agents.knowledge_extractor import (
    ExtractedKnowledge,
    ExtractedPoint,
    extract_knowledge,
    merge_chunk_points,
    quote_occurs,
    verify_points,
)
from personae.agents.query_planner import DIMENSIONS
from personae.agents.support_judge import SupportJudgment, judge_support
from personae.errors import RemoteError
from personae.evals.judge_cache import JudgeCache
from personae.testing import ScriptedChatModel, prompt_text

CHUNK = "Toki is the second of the four Hokuto brothers.\nHe was exposed to “nuclear fallout”."


@pytest.mark.parametrize(
    ("evidence", "occurs"),
    [
        ("second of the four Hokuto brothers", True),
        ("SECOND  of the\nfour hokuto Brothers.", True),  # case and whitespace
        ('exposed to "nuclear fallout"', True),  # typographic quotes
        ("brothers. He was", True),  # across the line break
        ("the eldest of the four Hokuto brothers", False),  # paraphrase
        ("Toki is ... brothers", False),  # ellipsis
        ("  . ", False),  # nothing but punctuation
        ("", False),
    ],
)
def test_quote_check_normalises_case_space_and_quotes_only(evidence: str, occurs: bool) -> None:
    assert quote_occurs(evidence, CHUNK) is occurs


def test_points_without_a_real_quote_are_dropped_and_duplicates_merged() -> None:
    extracted = ExtractedKnowledge(
        points=[
            ExtractedPoint(
                statement="Toki is the second Hokuto brother.",
                evidence="the second of the four Hokuto brothers",
                type="identity",
            ),
            ExtractedPoint(statement="Toki can fly.", evidence="Toki flies", type="ability"),
            ExtractedPoint(
                statement="toki is the second  hokuto brother.",
                evidence="Toki is the second",
                type="identity",
            ),
            ExtractedPoint(
                statement="Toki was irradiated.",
                evidence="exposed to “nuclear fallout”",
                type="experience",
            ),
        ]
    )
    kept, dropped = verify_points(extracted, chunk_id="C2", text=CHUNK)
    assert [(p.statement, p.type, p.chunk_id) for p in kept] == [
        ("Toki is the second Hokuto brother.", "identity", "C2"),
        ("Toki was irradiated.", "experience", "C2"),
    ]
    assert dropped == 2


def test_a_fact_kept_from_an_earlier_chunk_is_dropped_as_a_duplicate() -> None:
    point = ExtractedPoint(
        statement="Toki is the second Hokuto brother.",
        evidence="four Hokuto brothers",
        type="identity",
    )
    first, _ = verify_points(ExtractedKnowledge(points=[point]), chunk_id="C1", text=CHUNK)
    again, _ = verify_points(ExtractedKnowledge(points=[point]), chunk_id="C2", text=CHUNK)
    merged, dropped = merge_chunk_points([first, again])
    assert [p.chunk_id for p in merged] == ["C1"]
    assert dropped == 1


def test_point_type_is_one_of_the_seven_dimensions() -> None:
    def point(said: str) -> ExtractedPoint:
        return ExtractedPoint.model_validate({"statement": "s", "evidence": "e", "type": said})

    assert point(" Abilities ").type == "ability"
    assert point("Personality").type == "personality"
    with pytest.raises(ValidationError):
        point("hobbies")
    schema = ExtractedKnowledge.model_json_schema()
    assert schema["$defs"]["ExtractedPoint"]["properties"]["type"]["enum"] == list(DIMENSIONS)


async def test_extractor_retries_a_bad_type_then_keeps_verified_points() -> None:
    answers: list[dict[str, Any]] = [
        {"points": [{"statement": "Toki is a brother.", "evidence": "x", "type": "hobbies"}]},
        {
            "points": [
                {
                    "statement": "Toki is a Hokuto brother.",
                    "evidence": "four Hokuto brothers",
                    "type": "relationship",
                },
                {"statement": "Toki sings.", "evidence": "Toki sings", "type": "other"},
            ]
        },
    ]

    def respond(messages: list[BaseMessage]) -> dict[str, Any]:
        return answers.pop(0)

    model = ScriptedChatModel(responders={"ExtractedKnowledge": respond})
    kept, dropped, usage = await extract_knowledge(
        model, name="Toki", chunk_id="C1", heading="Introduction", text=CHUNK
    )
    assert [p.statement for p in kept] == ["Toki is a Hokuto brother."]
    assert dropped == 1
    assert usage.calls == 2
    first_prompt = prompt_text(model.calls_for("ExtractedKnowledge")[0])
    assert "[C1] (Introduction)" in first_prompt and CHUNK in first_prompt
    assert "hobbies" in prompt_text(model.calls_for("ExtractedKnowledge")[1])


@pytest.mark.parametrize(
    ("said", "verdict"),
    [
        ("supported", "supported"),
        ("Partially Supported", "partially_supported"),
        ("partial", "partially_supported"),
        ("Irrelevant", "irrelevant"),
        ("contradiction", "contradicted"),
    ],
)
def test_judge_verdict_spellings_map_to_the_four_labels(said: str, verdict: str) -> None:
    assert SupportJudgment.model_validate({"reason": "r", "verdict": said}).verdict == verdict


async def test_judge_sees_profile_and_point_and_an_unknown_verdict_fails_cleanly() -> None:
    model = ScriptedChatModel(
        responders={"SupportJudgment": lambda _m: {"reason": "unsure", "verdict": "maybe"}}
    )
    with pytest.raises(RemoteError, match="malformed SupportJudgment output 3 times"):
        await judge_support(
            model,
            name="Toki",
            profile="I am Toki.",
            statement="Toki has white hair.",
            evidence="Toki has long white hair.",
            dimension="appearance",
        )
    prompt = prompt_text(model.calls_for("SupportJudgment")[0])
    assert "I am Toki." in prompt
    assert "## Knowledge point (appearance)\nToki has white hair." in prompt
    assert '"Toki has long white hair."' in prompt

    good = ScriptedChatModel(
        responders={"SupportJudgment": lambda _m: {"reason": "says so", "verdict": "supported"}}
    )
    judgment, usage = await judge_support(
        good,
        name="Toki",
        profile="I have long white hair.",
        statement="Toki has white hair.",
        evidence="Toki has long white hair.",
        dimension="appearance",
    )
    assert (judgment.verdict, judgment.reason, usage.calls) == ("supported", "says so", 1)


async def test_with_a_cache_a_repeated_prompt_costs_no_call(
    tmp_path: Path,
) -> None:
    point = {"statement": "Toki is a Hokuto brother.", "evidence": "four Hokuto brothers"}
    model = ScriptedChatModel(
        responders={
            "ExtractedKnowledge": lambda _m: {"points": [{**point, "type": "relationship"}]},
            "SupportJudgment": lambda _m: {"reason": "says so", "verdict": "supported"},
        }
    )
    cache = JudgeCache(tmp_path)
    extracted = [
        await extract_knowledge(
            model,
            name="Toki",
            chunk_id=chunk_id,
            heading="Introduction",
            text=text,
            cache=cache,
            model_name="m",
        )
        for chunk_id, text in [("C1", CHUNK), ("C1", CHUNK), ("C1", "Toki heals.")]
    ]
    judged = [
        await judge_support(
            model,
            name="Toki",
            profile="I am a Hokuto brother.",
            statement=point["statement"],
            evidence=point["evidence"],
            dimension="relationship",
            cache=cache,
            model_name="m",
        )
        for _ in range(2)
    ]
    assert [usage.calls for _, _, usage in extracted] == [1, 0, 1]
    assert [[p.statement for p in kept] for kept, _, _ in extracted[:2]] == [
        [point["statement"]]
    ] * 2
    assert extracted[2][:2] == ([], 1)  # another chunk is another prompt: its quote is absent
    assert [(j.verdict, usage.calls) for j, usage in judged] == [("supported", 1), ("supported", 0)]
    assert (len(model.calls), cache.hits, cache.misses) == (3, 2, 3)
