"""The fair-benchmark invariant, checked at the source: which storyline actions each step touched.

The prompt audit in test_bookmarks_graph.py sees what reached a model; here the storyline's
action tuple itself records every index any node reads (slices, items, iteration), so a read at
or after the target fails even if its text never reached a prompt. Runs on the synthetic
storyline and, when ../shared is present, on the real haruhi storyline.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, SupportsIndex

import pytest
from bookmarks_world import future_reads, scripted_model_as, write_storyline

from personae.graphs.bookmarks import graph as bookmarks
from personae.graphs.bookmarks.graph import BookmarksContext, graph
from personae.graphs.bookmarks.resources import BookmarkResources, resources_for
from personae.memory.bookmarks.storyline import StoryAction, Storyline
from personae.testing import ScriptedChatModel
from personae.tools.bookmarks.storyline_index import StorylineIndex


class RecordingActions(tuple[StoryAction, ...]):
    """A storyline's actions that remember every position read."""

    touched: set[int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            self.touched.update(range(*key.indices(len(self))))
        else:
            index = int(key) if isinstance(key, SupportsIndex) else key
            self.touched.add(index if index >= 0 else len(self) + index)
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[StoryAction]:
        self.touched.update(range(len(self)))
        return super().__iter__()


def recording(resources: BookmarkResources) -> tuple[BookmarkResources, RecordingActions]:
    """The same bank over a storyline whose reads are recorded (index built before recording)."""
    original = resources.storyline
    actions = RecordingActions(original.actions)
    actions.touched = set()
    spy = Storyline(original.name, actions, original.chapters, original.major_characters)
    index = StorylineIndex(spy)
    actions.touched.clear()
    return BookmarkResources(spy, index, resources.bank, resources.unknown), actions


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    with scripted_model_as("bm-inv") as scripted:
        yield scripted


def haruhi(shared_dir: Path) -> Path:
    return shared_dir / "data" / "bookmarks" / "title2action_series.haruhi.json"


async def run_targets(
    story: Path,
    memory: Path,
    model: ScriptedChatModel,
    monkeypatch: pytest.MonkeyPatch,
    steps: list[tuple[str, int]],
) -> None:
    spy, actions = recording(resources_for(str(story), str(memory)))
    monkeypatch.setattr(bookmarks, "resources_for", lambda *args: spy)
    context = BookmarksContext(
        storyline_path=str(story),
        memory_dir=str(memory),
        model="openai:bm-inv",
        fast_model="openai:bm-inv",
        prompts="personae",
    )
    for character, target in steps:
        actions.touched.clear()
        before = len(model.calls)
        await graph.ainvoke({"character": character, "position": target}, context=context)
        assert actions.touched, "the step read the storyline"
        assert max(actions.touched) < target, f"{character}@{target} read {max(actions.touched)}"
        assert future_reads(model.calls[before:], target) == []


async def test_no_step_touches_the_target_or_later_synthetic(
    tmp_path: Path, model: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    steps = [("Haruhi", 40), ("Kyon", 140), ("Haruhi", 41), ("Nagato", 90), ("Kyon", 13)]
    await run_targets(story, tmp_path / "mem", model, monkeypatch, steps)


@pytest.mark.endtoend
async def test_no_step_touches_the_target_or_later_on_haruhi(
    shared_dir: Path, tmp_path: Path, model: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = [("Haruhi", 500), ("Kyon", 503), ("Haruhi", 900), ("Kyon", 310), ("Haruhi", 502)]
    await run_targets(haruhi(shared_dir), tmp_path / "mem", model, monkeypatch, steps)
