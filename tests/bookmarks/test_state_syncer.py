"""The state syncer role: operations applied by code, answers validated, prompt content."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from personae.agents.bookmarks.state_syncer import STATE_SYNC_SYSTEM, update_state_answer
from personae.errors import RemoteError
from personae.memory.bookmarks.storyline import StoryAction
from personae.testing import ScriptedChatModel, prompt_text

CHUNK = [
    StoryAction(40, "Day 1", "Kyon walks up the hill.", ("Kyon",)),
    StoryAction(41, "Day 1", "Haruhi drags Kyon to the club room.", ("Haruhi",)),
]


def answering(*answers: dict[str, Any]) -> ScriptedChatModel:
    replies: Iterator[dict[str, Any]] = iter(answers)
    return ScriptedChatModel(responders={"StateUpdate": lambda m: next(replies)})


async def test_no_change_keeps_the_answer_verbatim_whatever_the_model_wrote() -> None:
    model = answering({"operation": "no_change", "answer": "Something else entirely."})
    step, usage = await update_state_answer(
        model, question="Where is Kyon?", character="Kyon", answer="On the hill.", chunk=CHUNK
    )
    assert (step.operation, step.answer) == ("no_change", "On the hill.")
    assert usage.calls == 1


async def test_reset_and_update_take_the_models_answer() -> None:
    for operation in ("reset", "update"):
        model = answering({"operation": operation, "answer": "  In the club room.  "})
        step, _ = await update_state_answer(
            model, question="Where is Kyon?", character="Kyon", answer="On the hill.", chunk=CHUNK
        )
        assert (step.operation, step.answer) == (operation, "In the club room.")


async def test_an_update_without_an_answer_is_rejected_and_retried() -> None:
    model = answering(
        {"operation": "update", "answer": " "},
        {"operation": "update", "answer": "In the club room."},
    )
    step, usage = await update_state_answer(
        model, question="Where is Kyon?", character="Kyon", answer="", chunk=CHUNK
    )
    assert step.answer == "In the club room." and usage.calls == 2
    retry = prompt_text(model.calls_for("StateUpdate")[1])
    assert "String should match pattern" in retry  # the schema says: not blank


async def test_a_model_that_never_answers_properly_is_a_one_line_remote_error() -> None:
    model = ScriptedChatModel(responders={"StateUpdate": lambda m: {"operation": "explode"}})
    with pytest.raises(RemoteError, match="malformed StateUpdate output 3 times"):
        await update_state_answer(model, question="Q?", character="Kyon", answer="", chunk=CHUNK)


async def test_prompt_shows_question_answer_and_the_chunk_in_order() -> None:
    model = answering({"operation": "no_change", "answer": "unchanged"})
    await update_state_answer(
        model, question="Where is Kyon?", character="Kyon", answer="", chunk=CHUNK
    )
    text = prompt_text(model.calls_for("StateUpdate")[0])
    assert "Where is Kyon?" in text and "(unknown so far)" in text
    assert text.index("[40] (Kyon) Kyon walks") < text.index("[41] (Haruhi) Haruhi drags")
    assert "reset" in STATE_SYNC_SYSTEM and "no longer holds" in STATE_SYNC_SYSTEM
