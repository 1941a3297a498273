"""Step checkpoints in process: a failed BOOKMARKS step resumes, settings key the thread."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bookmarks_world import scripted_model_as, write_storyline

from personae.graphs.bookmarks.graph import BookmarksContext, graph
from personae.graphs.bookmarks.step_checkpoints import JOURNAL_DIR, StepCheckpoints, step_thread
from personae.testing import ScriptedChatModel

STEP = {"character": "Haruhi", "position": 40}


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    with scripted_model_as("t") as scripted:
        yield scripted


def context(tmp_path: Path, **fields: Any) -> BookmarksContext:
    story = write_storyline(tmp_path / "club.jsonl")
    return BookmarksContext(
        storyline_path=str(story),
        memory_dir=str(tmp_path / "mem"),
        model="openai:t",
        fast_model="openai:t",
        **{"prompts": "personae", **fields},
    )


def names(model: ScriptedChatModel, start: int = 0) -> list[str]:
    return [name for name, _ in model.calls[start:]]


async def test_a_failed_step_resumes_without_paying_for_finished_calls(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    answer = model.responders["BehaviorSummary"]

    def server_down(messages: Any) -> Any:
        raise RuntimeError("the LLM server went away")

    model.responders["BehaviorSummary"] = server_down  # fails after all 8 evidence checks
    ctx, memory = context(tmp_path), tmp_path / "mem"
    async with StepCheckpoints(memory) as steps:
        with pytest.raises(RuntimeError, match="went away"):
            await steps.invoke(graph, STEP, ctx)
        before = len(model.calls)
        assert names(model).count("EvidenceVerdicts") == 8
        model.responders["BehaviorSummary"] = answer
        run = await steps.invoke(graph, STEP, ctx)
    assert run.resumed and run.output["action"] == "Haruhi smiles at the brigade."
    # Propose, the finished syncs and the eight evidence checks are not asked again.
    assert names(model, before) == ["BehaviorSummary", "NextAction"]
    assert run.output["stats"]["llm_calls"] == 13  # the whole step's calls, as never failed
    assert not (memory / JOURNAL_DIR).exists()


async def test_fresh_starts_over_and_a_finished_step_leaves_no_thread(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    ctx = context(tmp_path)
    async with StepCheckpoints(tmp_path / "mem") as steps:
        first = await steps.invoke(graph, STEP, ctx)
        assert not first.resumed
        thread = step_thread(graph.name, STEP, ctx)
        assert [c async for c in steps._saver.alist({"configurable": {"thread_id": thread}})] == []
        calls = len(model.calls)
        again = await steps.invoke(graph, STEP, ctx, fresh=True)
    assert not again.resumed and names(model, calls)[0] == "ProposedQuestions"


def test_the_thread_is_keyed_by_settings_not_by_retry_budget_or_journal(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    same = dataclasses.replace(ctx, llm_retry_seconds=5.0, call_journal="/elsewhere")
    assert step_thread(graph.name, STEP, ctx) == step_thread(graph.name, STEP, same)
    for change in ({"k_questions": 3}, {"fast_model": "openai:other"}, {"derive": False}):
        other = dataclasses.replace(ctx, **change)
        assert step_thread(graph.name, STEP, ctx) != step_thread(graph.name, STEP, other)
    later = {"character": "Haruhi", "position": 41}
    assert step_thread(graph.name, STEP, ctx) != step_thread(graph.name, later, ctx)
    assert step_thread(graph.name, STEP, ctx).startswith("bookmarks:Haruhi-40:")


async def test_without_a_memory_folder_nothing_is_kept(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    ctx = dataclasses.replace(context(tmp_path), memory_dir=None)
    async with StepCheckpoints(None) as steps:
        run = await steps.invoke(graph, STEP, ctx)
    assert not run.resumed and run.output["action"]
    assert not list(tmp_path.glob("**/.checkpoints.sqlite"))
