"""BOOKMARKS graph nodes called directly: bookmarks synced ahead of a target never leak, and a
step writes the bank once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from bookmarks_world import scripted_model_as, write_storyline
from langgraph.runtime import Runtime
from langgraph.types import Send

from personae.graphs.bookmarks.graph import (
    BookmarksContext,
    BookmarksState,
    SyncTask,
    characters_before,
    ground_context,
    route_syncs,
    save_bookmarks,
    sync_bookmark,
)
from personae.graphs.bookmarks.resources import resources_for
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import BookmarkType
from personae.testing import ScriptedChatModel


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    with scripted_model_as("bm-nodes") as scripted:
        yield scripted


@pytest.fixture
def runtime(tmp_path: Path, model: ScriptedChatModel) -> Runtime[BookmarksContext]:
    story = write_storyline(tmp_path / "club.jsonl")
    context = BookmarksContext(
        storyline_path=str(story),
        memory_dir=str(tmp_path / "mem"),
        model="openai:bm-nodes",
        fast_model="openai:bm-nodes",
        prompts="personae",
    )
    return Runtime(context=context)


def bank_of(runtime: Runtime[BookmarksContext]) -> BookmarkBank:
    return resources_for(runtime.context.storyline_path, runtime.context.memory_dir).bank


def ahead_bookmark(bank: BookmarkBank) -> str:
    """A state bookmark answered at 40 and again at 120 (synced far ahead)."""
    bookmark = bank.create(question="Where is Kyon now?", type=BookmarkType.STATE, character="Kyon")
    for position, answer in [(40, "at school [39]"), (120, "at the station [119]")]:
        bookmark.position, bookmark.answer = position, answer
        bank.save(bookmark)
    return str(bookmark.id)


def state(
    character: str,
    position: int,
    active_ids: list[str],
    synced: list[dict[str, Any]] | None = None,
) -> BookmarksState:
    # A partial state: only the keys the nodes under test read.
    partial = {
        "character": character,
        "position": position,
        "active": [
            {"id": i, "decision": "reuse", "question": {}, "created": ""} for i in active_ids
        ],
        "synced": synced or [],
    }
    return cast(BookmarksState, partial)


async def synced_then_grounded(
    runtime: Runtime[BookmarksContext], bookmark_id: str, target: int
) -> dict[str, Any]:
    """The sync, save and ground nodes for one active bookmark, as the graph runs them."""
    task = SyncTask(bookmark_id=bookmark_id, created="", position=target)
    records = (await sync_bookmark(task, runtime))["synced"]
    step = state("Haruhi", target, [bookmark_id], records)
    step.update(await save_bookmarks(step, runtime))  # type: ignore[typeddict-item]
    grounded: dict[str, Any] = await ground_context(step, runtime)
    return grounded


async def test_ground_uses_the_answer_valid_at_the_target(
    runtime: Runtime[BookmarksContext], model: ScriptedChatModel
) -> None:
    bookmark_id = ahead_bookmark(bank_of(runtime))
    grounded = await synced_then_grounded(runtime, bookmark_id, 60)
    assert grounded["grounding"] == ["Q: Where is Kyon now? A: at school [39]"]
    assert grounded["bookmarks"] == [
        {
            "id": bookmark_id,
            "type": "state",
            "question": "Where is Kyon now?",
            "answer": "at school [39]",
            "position": 120,
        }
    ]
    early = await synced_then_grounded(runtime, bookmark_id, 30)
    assert early["grounding"] == [] and early["bookmarks"] == []  # nothing known before 40
    assert not model.calls


async def test_sync_of_a_bookmark_already_ahead_reads_nothing(
    runtime: Runtime[BookmarksContext], model: ScriptedChatModel
) -> None:
    bank = bank_of(runtime)
    bookmark_id = ahead_bookmark(bank)
    update = await sync_bookmark(
        SyncTask(bookmark_id=bookmark_id, created="", position=60), runtime
    )
    [record] = update["synced"]
    assert (record["actions_read"], record["llm_calls"]) == (0, 0)
    assert record["actions_from_scratch"] == 60
    assert not model.calls
    assert bank.get(bookmark_id).position == 120


async def test_a_save_that_lost_the_race_keeps_the_stored_bookmark(
    runtime: Runtime[BookmarksContext],
) -> None:
    bank = bank_of(runtime)
    bookmark_id = ahead_bookmark(bank)
    stale = bank.get(bookmark_id).model_copy(update={"position": 80, "answer": "late"})
    [kept] = bank.save_step([stale], at=80)
    assert (kept.position, kept.answer) == (120, "at the station [119]")
    assert kept.answer_at(80) == "at school [39]"


async def test_sync_node_moves_a_bookmark_forward_and_the_save_node_stores_it(
    runtime: Runtime[BookmarksContext], model: ScriptedChatModel
) -> None:
    bank = bank_of(runtime)
    bookmark = bank.create(question="Where is Kyon now?", type=BookmarkType.STATE, character="Kyon")
    update = await sync_bookmark(
        SyncTask(bookmark_id=bookmark.id, created="", position=70), runtime
    )
    [record] = update["synced"]
    assert (record["actions_read"], record["actions_from_scratch"]) == (70, 70)
    assert record["llm_calls"] == 2  # chunks [0, 64) and [64, 70)
    assert bank.get(bookmark.id).position == 0  # the sync alone writes nothing
    step = state("Kyon", 70, [bookmark.id], update["synced"])
    [entry] = (await save_bookmarks(step, runtime))["saved"]
    assert (entry["position"], entry["answer"]) == (70, "as of [69] in the club room")
    stored = bank.get(bookmark.id)
    assert (stored.position, stored.answer) == (70, "as of [69] in the club room")


def test_route_sends_one_sync_per_distinct_bookmark() -> None:
    routed = route_syncs(state("Kyon", 9, ["bm-2", "bm-0", "bm-2"]))
    assert isinstance(routed, list) and all(isinstance(s, Send) for s in routed)
    assert [s.arg["bookmark_id"] for s in routed] == ["bm-2", "bm-0"]
    assert {s.arg["position"] for s in routed} == {9}
    assert route_syncs(state("Kyon", 9, [])) == "save_bookmarks"


async def test_characters_before_a_target_only(runtime: Runtime[BookmarksContext]) -> None:
    storyline = resources_for(runtime.context.storyline_path, runtime.context.memory_dir).storyline
    assert characters_before(storyline, 0) == []
    assert characters_before(storyline, 2) == ["Haruhi", "Kyon"]
    assert set(characters_before(storyline, 4)) == {"Haruhi", "Kyon", "Nagato", "Mikuru"}
