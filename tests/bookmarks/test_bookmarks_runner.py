"""The BOOKMARKS runner as a library calls it: one grounded step, checkpointed, checked input."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from bookmarks_world import scripted_model_as, write_storyline

from personae import ActionStep, BookmarksContext, predict_action
from personae.errors import InputError, RunLockedError
from personae.run_lock import run_lock


def _context(story: Path, memory: Path | None) -> BookmarksContext:
    return BookmarksContext(
        storyline_path=str(story),
        memory_dir=str(memory) if memory else None,
        prompts="personae",
        model="openai:t",
        fast_model="openai:t",
    )


async def test_a_step_returns_the_action_its_bookmarks_and_keeps_the_bank(tmp_path: Path) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    with scripted_model_as("t") as model:
        step = await predict_action("Haruhi", 40, context=_context(story, tmp_path / "mem"))
        calls = len(model.calls)
    assert isinstance(step, ActionStep)
    assert (step.storyline, step.character, step.position) == ("club", "Haruhi", 40)
    assert step.action == "Haruhi smiles at the brigade." and not step.resumed
    assert step.bookmarks and step.bookmarks[0]["position"] == 40
    assert step.stats["llm_calls"] == calls and step.output["action"] == step.action
    assert any((tmp_path / "mem").iterdir())  # the bank persists in memory_dir


async def test_bad_input_fails_before_any_model_call(tmp_path: Path) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    with scripted_model_as("t") as model:
        with pytest.raises(InputError, match="Nobody"):
            await predict_action("Nobody", 40, context=_context(story, None))
        with pytest.raises(InputError, match="position"):
            await predict_action("Haruhi", 10_000, context=_context(story, None))
        (tmp_path / "file").write_text("x")
        with pytest.raises(InputError, match="--memory"):
            await predict_action("Haruhi", 40, context=_context(story, tmp_path / "file"))
    assert model.calls == []


async def test_two_steps_on_one_memory_run_one_after_the_other(tmp_path: Path) -> None:
    """One step per memory at a time: the second waits (saying for whom), then runs on the
    bank the first left; told not to wait, it stops naming the holder."""
    story = write_storyline(tmp_path / "club.jsonl")
    memory = tmp_path / "mem"
    lines: list[list[str]] = [[], []]
    with scripted_model_as("t"):
        steps = await asyncio.gather(
            *(
                predict_action(
                    "Haruhi", 40, context=_context(story, memory), progress=lines[i].append
                )
                for i in range(2)
            )
        )
        async with run_lock(memory, "act", what="a test"):
            with pytest.raises(RunLockedError) as refused:
                await predict_action("Haruhi", 40, context=_context(story, memory), wait=False)
    assert steps[0].action == steps[1].action
    assert lines[0] == [] and len(lines[1]) == 1
    assert lines[1][0].startswith(
        f"waiting: a BOOKMARKS step on the memory {memory} is running in pid {os.getpid()} since "
    )
    assert str(refused.value).startswith(f"a BOOKMARKS step on the memory {memory} is running in")
    assert refused.value.exit_code == 3
