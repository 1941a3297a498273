"""ETA's extractor and aggregator roles: prompts, caps, clean-up and retries."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.agents.profile_extractor import (
    MAX_FACTS_PER_CHUNK,
    aggregate_profile,
    extract_facts,
    render_chunk_facts,
)
from personae.errors import RemoteError
from personae.memory.storyline import StoryAction
from personae.testing import ScriptedChatModel, prompt_text

CHUNK = (
    StoryAction(64, "ch 2", "Haruhi slams the door", ("Haruhi",)),
    StoryAction(65, "ch 2", "Kyon sighs at Haruhi", ("Kyon",)),
)


async def test_extract_shows_the_chunk_and_cleans_the_facts() -> None:
    model = ScriptedChatModel(
        responders={
            "ExtractedFacts": lambda _: {
                "facts": ["Haruhi is  impatient", "haruhi is impatient", " ", "Haruhi leads"]
            }
        }
    )
    facts, usage = await extract_facts(model, character="Haruhi", story="haruhi", chunk=CHUNK)
    assert facts == ["Haruhi is impatient", "Haruhi leads"]
    assert usage.calls == 1
    (prompt,) = model.calls_for("ExtractedFacts")
    text = prompt_text(prompt)
    assert "[64] (Haruhi) Haruhi slams the door" in text
    assert "[65] (Kyon) Kyon sighs at Haruhi" in text
    assert text.rstrip().endswith("What does this passage reveal about Haruhi?")


async def test_extract_retries_an_answer_over_the_cap() -> None:
    answers = iter(
        [
            {"facts": [f"fact {i}" for i in range(MAX_FACTS_PER_CHUNK + 1)]},
            {"facts": ["Haruhi is bored"]},
        ]
    )
    model = ScriptedChatModel(responders={"ExtractedFacts": lambda _: next(answers)})
    facts, usage = await extract_facts(model, character="Haruhi", story="haruhi", chunk=CHUNK)
    assert facts == ["Haruhi is bored"]
    assert usage.calls == 2
    retry = prompt_text(model.calls_for("ExtractedFacts")[1])
    assert f"give at most {MAX_FACTS_PER_CHUNK} statements" in retry


async def test_aggregate_gets_facts_in_story_order_and_returns_the_profile() -> None:
    def profile(messages: list[BaseMessage]) -> dict[str, Any]:
        return {"statements": ["Haruhi leads the club", "Haruhi leads the club"]}

    model = ScriptedChatModel(responders={"CharacterProfile": profile})
    chunks = [("Actions 0-63", ["Haruhi founds a club"]), ("Actions 64-79", ["Haruhi leads"])]
    statements, usage = await aggregate_profile(
        model, character="Haruhi", story="haruhi", chunks=chunks
    )
    assert statements == ["Haruhi leads the club"]
    text = prompt_text(model.calls_for("CharacterProfile")[0])
    assert text.index("### Actions 0-63") < text.index("### Actions 64-79")
    assert "- Haruhi founds a club" in text and "later passage" in text


async def test_aggregate_rejects_an_empty_profile() -> None:
    model = ScriptedChatModel(responders={"CharacterProfile": lambda _: {"statements": [" "]}})
    with pytest.raises(RemoteError, match="malformed CharacterProfile output 3 times"):
        await aggregate_profile(
            model, character="Haruhi", story="haruhi", chunks=[("Actions 0-15", ["x"])]
        )


def test_render_chunk_facts_drops_empty_passages() -> None:
    assert render_chunk_facts([("A", []), ("B", ["b1", "b2"])]) == "### B\n- b1\n- b2"
    assert render_chunk_facts([("A", [])]) == "(no facts)"
