"""Knowledge extractor (quotes verified in code) and support judge (closed verdict set)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from pydantic import ValidationError

from personae.agents.characterhub.knowledge_extractor import (
    EXTRACTOR_PROMPT,
    IGNORE_LIST,
    ExtractedKnowledge,
    ExtractedPoint,
    extract_knowledge,
    merge_chunk_points,
    quote_occurs,
    verify_points,
)
from personae.agents.characterhub.support_judge import JUDGE_PROMPT, Alignment, judge_alignment
from personae.answer_store import AnswerStore
from personae.llm import InvalidAnswerError
from personae.memory.characterhub.dimensions import DIMENSIONS
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
        knowledge_points=[
            ExtractedPoint(
                knowledge="Toki is the second Hokuto brother.",
                evidence="the second of the four Hokuto brothers",
                type="identity",
            ),
            ExtractedPoint(knowledge="Toki can fly.", evidence="Toki flies", type="ability"),
            ExtractedPoint(
                knowledge="toki is the second  hokuto brother.",
                evidence="Toki is the second",
                type="identity",
            ),
            ExtractedPoint(
                knowledge="Toki was irradiated.",
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
        knowledge="Toki is the second Hokuto brother.",
        evidence="four Hokuto brothers",
        type="identity",
    )
    first, _ = verify_points(
        ExtractedKnowledge(knowledge_points=[point]), chunk_id="C1", text=CHUNK
    )
    again, _ = verify_points(
        ExtractedKnowledge(knowledge_points=[point]), chunk_id="C2", text=CHUNK
    )
    merged, dropped = merge_chunk_points([first, again])
    assert [p.chunk_id for p in merged] == ["C1"]
    assert dropped == 1


def test_point_type_is_one_of_the_seven_dimensions() -> None:
    def point(said: str) -> ExtractedPoint:
        return ExtractedPoint.model_validate({"knowledge": "s", "evidence": "e", "type": said})

    assert point(" Abilities ").type == "ability"
    assert point("Personality").type == "personality"
    with pytest.raises(ValidationError):
        point("hobbies")
    schema = ExtractedKnowledge.model_json_schema()
    assert schema["$defs"]["ExtractedPoint"]["properties"]["type"]["enum"] == list(DIMENSIONS)


async def test_extractor_retries_a_bad_type_then_keeps_verified_points() -> None:
    answers: list[dict[str, Any]] = [
        {
            "knowledge_points": [
                {"knowledge": "Toki is a brother.", "evidence": "x", "type": "hobbies"}
            ]
        },
        {
            "knowledge_points": [
                {
                    "knowledge": "Toki is a Hokuto brother.",
                    "evidence": "four Hokuto brothers",
                    "type": "relationship",
                },
                {"knowledge": "Toki sings.", "evidence": "Toki sings", "type": "other"},
            ]
        },
    ]

    def respond(messages: list[BaseMessage]) -> dict[str, Any]:
        return answers.pop(0)

    model = ScriptedChatModel(responders={"ExtractedKnowledge": respond})
    kept, dropped, usage = await extract_knowledge(
        model, input_text='{"content": {"Introduction": "..."}}', plain_text=CHUNK
    )
    assert [p.statement for p in kept] == ["Toki is a Hokuto brother."]
    assert dropped == 1
    assert usage.calls == 2
    assert "hobbies" in prompt_text(model.calls_for("ExtractedKnowledge")[1])


def test_extraction_prompt_is_table_9_with_its_ignore_list_and_merge_rule() -> None:
    for item in IGNORE_LIST:
        assert f"- {item}" in EXTRACTOR_PROMPT
    assert "IGNORE any information that is irrelevant to character role-playing" in EXTRACTOR_PROMPT
    assert "combine them into one richer description" in EXTRACTOR_PROMPT
    for dimension in DIMENSIONS:
        assert f" - {dimension}: " in EXTRACTOR_PROMPT
    assert "Do **not** create or use any other category." in EXTRACTOR_PROMPT
    source = (
        Path(__file__)
        .parents[2]
        .joinpath("agents", "characterhub", "knowledge_extractor.py")
        .read_text()
    )
    assert "CharacterHub, Appendix F, Table 9" in source


def test_judge_prompt_is_table_10_with_its_rules_and_worked_example() -> None:
    assert "**partially supported**: The text supports some but not all aspects" in JUDGE_PROMPT
    assert "Do NOT treat narrative perspective or tense as evidence" in JUDGE_PROMPT
    assert "Missing details or partial lack of coverage should be labeled **irrelevant**" in (
        JUDGE_PROMPT
    )
    assert "Eren was born in the Shiganshina District." in JUDGE_PROMPT
    assert "He describes himself as reckless and impatient." in JUDGE_PROMPT
    source = (
        Path(__file__).parents[2].joinpath("agents", "characterhub", "support_judge.py").read_text()
    )
    assert "CharacterHub, Appendix F, Table 10" in source


@pytest.mark.parametrize(
    ("said", "verdict"),
    [
        ("supported", "supported"),
        ("Partially Supported", "partially_supported"),
        ("partially_supported", "partially_supported"),
        ("partial", "partially_supported"),
        ("Irrelevant", "irrelevant"),
        ("contradiction", "contradicted"),
    ],
)
def test_judge_label_spellings_map_to_the_four_labels(said: str, verdict: str) -> None:
    assert Alignment.model_validate({"id": 1, "evaluation": said}).verdict == verdict


async def test_judge_sees_list_and_text_only_and_an_unknown_label_fails_cleanly() -> None:
    def unsure(_m: list[BaseMessage]) -> dict[str, Any]:
        return {"1": {"evaluation": "maybe"}}

    model = ScriptedChatModel(responders={"AlignmentList": unsure})
    with pytest.raises(InvalidAnswerError, match="malformed AlignmentList output 3 times"):
        await judge_alignment(model, statements=["Toki has white hair."], text="I am Toki.")
    prompt = prompt_text(model.calls_for("AlignmentList")[0])
    assert prompt.endswith('`text`: "I am Toki."')
    assert '"knowledge": "Toki has white hair."' in prompt

    def says_so(_m: list[BaseMessage]) -> dict[str, Any]:
        return {"1": {"evaluation": "supported", "evidence": "says so"}}

    good = ScriptedChatModel(responders={"AlignmentList": says_so})
    (judgment,), usage = await judge_alignment(
        good, statements=["Toki has white hair."], text="I have long white hair."
    )
    assert (judgment.verdict, judgment.evidence, usage.calls) == ("supported", "says so", 1)


async def test_with_a_cache_a_repeated_prompt_costs_no_call(tmp_path: Path) -> None:
    point = {"knowledge": "Toki is a Hokuto brother.", "evidence": "four Hokuto brothers"}
    model = ScriptedChatModel(
        responders={
            "ExtractedKnowledge": lambda _m: {
                "knowledge_points": [{**point, "type": "relationship"}]
            },
            "AlignmentList": lambda _m: {"1": {"evaluation": "supported"}},
        }
    )
    cache = AnswerStore(tmp_path)
    extracted = [
        await extract_knowledge(
            model, input_text=data, plain_text=text, cache=cache, model_name="m"
        )
        for data, text in [("A", CHUNK), ("A", CHUNK), ("B", "Toki heals.")]
    ]
    judged = [
        await judge_alignment(
            model,
            statements=[point["knowledge"]],
            text="I am a Hokuto brother.",
            cache=cache,
            model_name="m",
        )
        for _ in range(2)
    ]
    assert [usage.calls for _, _, usage in extracted] == [1, 0, 1]
    assert [[p.statement for p in kept] for kept, _, _ in extracted[:2]] == [
        [point["knowledge"]]
    ] * 2
    assert extracted[2][:2] == ([], 1)  # another input is another prompt: its quote is absent
    assert [(j[0].verdict, usage.calls) for j, usage in judged] == [
        ("supported", 1),
        ("supported", 0),
    ]
    assert (len(model.calls), cache.hits, cache.misses) == (3, 2, 3)
