"""The three sync operators: chunking, evidence, windows, bookkeeping and the no-future-read rule."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.agents.bookmarks.behavior_checker import BehaviorItem
from personae.errors import ConfigurationError, InputError
from personae.graphs.bookmarks.sync import (
    MAX_TRANSITIONS,
    SyncResult,
    SyncSettings,
    actions_from_scratch,
    question_entity,
    sync_behavior,
    sync_bookmark,
    sync_concept,
    sync_state,
)
from personae.llm import LLMUsage
from personae.memory.bookmarks.bookmark import Bookmark, BookmarkType, StateTransition
from personae.memory.bookmarks.storyline import StoryAction, Storyline, load_storyline
from personae.testing import ScriptedChatModel, prompt_text
from personae.tools.bookmarks.storyline_index import StorylineIndex, index_for

OURS = SyncSettings(prompts="personae")
"""These tests exercise our operators' prompts (``--method bookmarks-personae``); the released
ones (the paper's method) are tested in test_released_prompts.py."""
_POSITION = re.compile(r"\[(\d+)\]")
_ITEM_ID = re.compile(r"^(A\d+):", re.MULTILINE)


def story(rows: Sequence[tuple[str, str]], name: str = "toy") -> Storyline:
    """A storyline from (character, text) rows, one chapter."""
    actions = tuple(
        StoryAction(i, "ch1", f"{who} {text}", (who,)) for i, (who, text) in enumerate(rows)
    )
    return Storyline(name=name, actions=actions, chapters=("ch1",))


def plain_story(size: int, kyon_every: int = 3) -> Storyline:
    return story(
        [("Kyon" if i % kyon_every == 0 else "Haruhi", f"does thing {i}") for i in range(size)]
    )


def bookmark(kind: str, position: int = 0, **fields: Any) -> Bookmark:
    fields.setdefault("question", "What is going on?")
    return Bookmark(
        id="bm-1", type=BookmarkType(kind), character="Kyon", position=position, **fields
    )


def item_ids(messages: list[BaseMessage]) -> list[str]:
    return _ITEM_ID.findall(prompt_text(messages))


def scripted(
    *,
    state: Any = None,
    supports: Any = None,
    summary: str = "behaviour summary",
    concept: str = "concept note",
) -> ScriptedChatModel:
    """A model answering every sync schema; ``supports(position) -> bool`` for evidence."""

    def verdicts(messages: list[BaseMessage]) -> dict[str, Any]:
        text = prompt_text(messages)
        marked = [int(p) for p in re.findall(r"^>>> \[(\d+)\]", text, re.MULTILINE)]
        judge = supports or (lambda position: True)
        return {i: judge(p) for i, p in zip(item_ids(messages), marked, strict=True)}

    return ScriptedChatModel(
        responders={
            "StateUpdate": state or (lambda m: {"operation": "update", "answer": "state answer"}),
            "EvidenceVerdicts": verdicts,
            "BehaviorSummary": lambda m: {"answer": summary},
            "ConceptAnswer": lambda m: {"answer": concept},
        }
    )


class FakeClassifier:
    """The classifier protocol without a model: supports the positions given."""

    def __init__(self, supporting: set[int]) -> None:
        self.supporting = supporting
        self.seen: list[list[BehaviorItem]] = []

    async def classify(
        self, pattern: str, items: Sequence[BehaviorItem]
    ) -> tuple[list[bool], LLMUsage]:
        self.seen.append(list(items))
        return [i.action.position in self.supporting for i in items], LLMUsage(1, 10, 2)


def positions_in_prompts(model: ScriptedChatModel) -> set[int]:
    return {int(p) for _, messages in model.calls for p in _POSITION.findall(prompt_text(messages))}


# ---------------------------------------------------------------- state


async def test_state_chunks_cover_exactly_the_unseen_suffix() -> None:
    storyline = plain_story(200)
    model = scripted()
    result = await sync_state(
        bookmark("state", 10), 150, storyline=storyline, fast_model=model, settings=OURS
    )
    chunks = [
        sorted(int(p) for p in _POSITION.findall(prompt_text(m)))
        for m in model.calls_for("StateUpdate")
    ]
    assert [(c[0], c[-1]) for c in chunks] == [(10, 73), (74, 137), (138, 149)]
    assert [len(c) for c in chunks] == [64, 64, 12]
    assert [t.position for t in result.bookmark.transitions] == [74, 138, 150]
    assert result.actions_read == 140 and result.usage.calls == 3
    assert result.bookmark.position == 150 and result.bookmark.answer == "state answer"


async def test_a_state_chunk_still_invalid_stops_the_sync_before_it_for_the_next_step() -> None:
    def blank_on_the_second_chunk(messages: list[BaseMessage]) -> Any:
        if 74 in {int(p) for p in _POSITION.findall(prompt_text(messages))}:
            return {"operation": "update", "answer": " "}
        return {"operation": "update", "answer": "state answer"}

    model = scripted(state=blank_on_the_second_chunk)
    result = await sync_state(
        bookmark("state", 10), 150, storyline=plain_story(200), fast_model=model, settings=OURS
    )
    assert result.bookmark.position == 74 and result.bookmark.answer == "state answer"
    assert [t.position for t in result.bookmark.transitions] == [74]
    assert result.actions_read == 64 and result.usage.degraded == 1
    assert result.usage.calls == 1 + 3  # the first chunk, then the second one three times


async def test_a_behavior_or_concept_summary_still_invalid_keeps_the_answer() -> None:
    storyline = brigade_story()
    model = scripted()
    model.responders["BehaviorSummary"] = lambda m: {"answer": ""}
    model.responders["ConceptAnswer"] = lambda m: {"answer": "\n"}
    index = index_for(storyline)
    behavioral = bookmark("behavioral", 0, answer="He sighs.")
    result = await sync_bookmark(
        behavioral,
        40,
        storyline=storyline,
        index=index,
        fast_model=model,
        model=model,
        settings=OURS,
    )
    assert result.bookmark.answer == "He sighs." and result.bookmark.evidence
    assert result.bookmark.position == 40 and result.usage.degraded == 1
    concept = bookmark("concept", 0, keyword="SOS Brigade", answer="A club.")
    result = await sync_bookmark(
        concept, 40, storyline=storyline, index=index, fast_model=model, model=model, settings=OURS
    )
    assert result.bookmark.answer == "A club." and result.bookmark.position == 0  # read again
    assert result.usage.degraded == 1


async def test_state_reset_replaces_no_change_keeps_update_revises() -> None:
    decisions = iter(
        [
            {"operation": "update", "answer": "Kyon is at school with Haruhi."},
            {"operation": "no_change", "answer": "the model rambles here"},
            {"operation": "reset", "answer": "Kyon is home alone."},
        ]
    )
    model = scripted(state=lambda m: next(decisions))
    start = bookmark("state", 0, answer="Kyon is asleep.")
    before = start.model_dump()
    result = await sync_state(
        start,
        30,
        storyline=plain_story(40),
        fast_model=model,
        settings=SyncSettings(prompts="personae", state_chunk=10),
    )
    prompts = [prompt_text(m) for m in model.calls_for("StateUpdate")]
    assert "Kyon is asleep." in prompts[0]
    assert "Kyon is at school with Haruhi." in prompts[1]
    # no_change kept the answer verbatim: the third chunk still sees the update's answer.
    assert "Kyon is at school with Haruhi." in prompts[2] and "rambles" not in prompts[2]
    assert [(t.operation, t.answer) for t in result.bookmark.transitions] == [
        ("update", "Kyon is at school with Haruhi."),
        ("no_change", "Kyon is at school with Haruhi."),
        ("reset", "Kyon is home alone."),
    ]
    # reset replaces: nothing of the old answer survives.
    assert result.bookmark.answer == "Kyon is home alone."
    assert start.model_dump() == before  # the input is never mutated


async def test_state_transitions_are_capped_to_the_latest() -> None:
    old = [StateTransition(position=i + 1, operation="update", answer=f"a{i}") for i in range(31)]
    start = bookmark("state", 31, transitions=old)
    result = await sync_state(
        start,
        61,
        storyline=plain_story(80),
        fast_model=scripted(),
        settings=SyncSettings(prompts="personae", state_chunk=10),
    )
    kept = result.bookmark.transitions
    assert len(kept) == MAX_TRANSITIONS
    assert kept[-1].position == 61 and kept[0].position == 3  # oldest two dropped


# ---------------------------------------------------------------- behavioral


async def test_behavior_checks_each_unseen_action_of_the_character_in_its_scene() -> None:
    storyline = story(
        [("Kyon", "sighs")]
        + [("Haruhi", f"plans {i}") for i in range(1, 6)]
        + [("Kyon", "complains"), ("Haruhi", "grins"), ("Kyon", "sighs again"), ("Haruhi", "x")]
    )  # Kyon at 0, 6, 8
    classifier = FakeClassifier(supporting={8})
    model = scripted(summary="Kyon sighs and goes along.")
    start = bookmark("behavioral", 1, evidence=[0], answer="Kyon sighs.")
    settings = SyncSettings(prompts="personae", local_scene=3)
    result = await sync_behavior(
        start, 9, storyline=storyline, classifier=classifier, model=model, settings=settings
    )
    (items,) = classifier.seen
    assert [i.action.position for i in items] == [6, 8]
    assert [[a.position for a in i.scene] for i in items] == [[3, 4, 5], [5, 6, 7]]
    assert result.bookmark.evidence == [0, 8]
    assert result.bookmark.answer == "Kyon sighs and goes along."
    (summary_prompt,) = model.calls_for("BehaviorSummary")
    text = prompt_text(summary_prompt)
    assert text.index("[0] (Kyon) Kyon sighs") < text.index("[8] (Kyon) Kyon sighs again")
    assert "prioritize the pattern implied by the later" in text
    # read: items 6 and 8 with scenes [3, 9) plus the evidence at 0 shown to the summarizer
    assert result.actions_read == 7
    assert result.usage.calls == 2  # one (fake) classifier call + one summary


async def test_behavior_scene_is_clipped_at_the_story_start() -> None:
    storyline = story([("Haruhi", "runs"), ("Kyon", "follows"), ("Kyon", "stops")])
    classifier = FakeClassifier(supporting=set())
    result = await sync_behavior(
        bookmark("behavioral"),
        3,
        storyline=storyline,
        classifier=classifier,
        model=scripted(),
        settings=OURS,
    )
    assert [[a.position for a in i.scene] for i in classifier.seen[0]] == [[0], [0, 1]]
    assert result.actions_read == 3


async def test_behavior_without_new_evidence_keeps_answer_and_skips_the_summary() -> None:
    model = scripted()
    start = bookmark("behavioral", 0, evidence=[0], answer="old pattern")
    result = await sync_behavior(
        start,
        30,
        storyline=plain_story(40),
        classifier=FakeClassifier(set()),
        model=model,
        settings=OURS,
    )
    assert model.calls == []
    assert result.bookmark.answer == "old pattern" and result.bookmark.evidence == [0]
    assert result.bookmark.position == 30 and result.usage.calls == 1


async def test_behavior_with_no_action_of_the_character_calls_nothing() -> None:
    storyline = story([("Kyon", "a")] + [("Haruhi", f"b{i}") for i in range(20)])
    classifier = FakeClassifier({0})
    model = scripted()
    result = await sync_behavior(
        bookmark("behavioral", 1),
        21,
        storyline=storyline,
        classifier=classifier,
        model=model,
        settings=OURS,
    )
    assert classifier.seen == [] and model.calls == []
    assert result.actions_read == 0 and result.usage == LLMUsage()
    assert result.bookmark.position == 21


async def test_behavior_through_the_llm_classifier_batches_calls() -> None:
    storyline = plain_story(100, kyon_every=5)  # Kyon at 0, 5, ..., 95
    model = scripted(supports=lambda position: position % 10 == 0)
    result = await sync_bookmark(
        bookmark("behavioral", 0),
        95,
        storyline=storyline,
        index=index_for(storyline),
        fast_model=model,
        model=model,
        settings=SyncSettings(prompts="personae", behavior_batch=8),
    )  # 19 actions of Kyon in [0, 95)
    batches = model.calls_for("EvidenceVerdicts")
    assert len(batches) == 3  # ceil(19 / 8)
    assert [len(item_ids(m)) for m in batches] == [8, 8, 3]
    assert item_ids(batches[2]) == ["A1", "A2", "A3"]  # ids are per call, mapped back by code
    assert result.bookmark.evidence == list(range(0, 95, 10))
    assert len(model.calls_for("BehaviorSummary")) == 1


async def test_behavior_classifier_with_wrong_verdict_count_is_rejected() -> None:
    class Broken:
        async def classify(
            self, pattern: str, items: Sequence[BehaviorItem]
        ) -> tuple[list[bool], LLMUsage]:
            return [True], LLMUsage()

    with pytest.raises(ValueError, match="1 verdicts for 14 items"):
        await sync_behavior(
            bookmark("behavioral"),
            40,
            storyline=plain_story(40),
            classifier=Broken(),
            model=scripted(),
            settings=OURS,
        )


# ---------------------------------------------------------------- concept


def brigade_story() -> Storyline:
    rows = [("Kyon", f"walks {i}") for i in range(60)]
    for hit in (5, 7, 30, 50, 57):
        rows[hit] = ("Haruhi", f"founds the SOS Brigade ({hit})")
    return story(rows)


async def concept(
    start: Bookmark,
    target: int,
    model: ScriptedChatModel,
    storyline: Storyline | None = None,
    **settings: Any,
) -> SyncResult:
    """``sync_concept`` over ``storyline`` (default: the brigade story) and its index."""
    storyline = storyline or brigade_story()
    return await sync_concept(
        start,
        target,
        storyline=storyline,
        index=index_for(storyline),
        model=model,
        settings=SyncSettings(prompts="personae", **settings),
    )


async def test_concept_windows_are_merged_and_clipped_at_the_target() -> None:
    model = scripted(concept="The SOS Brigade is Haruhi's club.")
    start = bookmark("concept", 20, keyword="SOS Brigade", answer="A club.")
    result = await concept(start, 58, model, concept_radius=4)
    (call,) = model.calls_for("ConceptAnswer")
    text = prompt_text(call)
    passages = re.split(r"Passage \d+:", text)[1:]
    spans = [sorted(int(p) for p in _POSITION.findall(p)) for p in passages]
    # hits 30, 50, 57 in [20, 58): windows [26, 35) and [46, 55) ∪ [53, 58) merged into [46, 58)
    assert [(s[0], s[-1]) for s in spans] == [(26, 34), (46, 57)]
    assert "A club." in text
    assert result.bookmark.answer == "The SOS Brigade is Haruhi's club."
    assert result.actions_read == 9 + 12 and result.bookmark.position == 58


async def test_concept_windows_may_reach_back_before_p_but_hits_come_from_the_suffix() -> None:
    model = scripted()
    result = await concept(
        bookmark("concept", 29, keyword="SOS Brigade"), 40, model, concept_radius=4
    )
    assert sorted(positions_in_prompts(model)) == list(range(26, 35))  # hit 30 only, not 5 or 7
    assert result.actions_read == 9


async def test_concept_top_windows_rank_by_hits_then_recency() -> None:
    model = scripted()
    await concept(
        bookmark("concept", 0, keyword="SOS Brigade"),
        45,
        model,
        concept_radius=1,
        concept_top_windows=2,
    )  # windows [4, 9) (2 hits), [29, 32) (1 hit); [49, 52) etc. are after the target
    assert sorted(positions_in_prompts(model)) == [4, 5, 6, 7, 8, 29, 30, 31]
    model = scripted()
    await concept(
        bookmark("concept", 0, keyword="SOS Brigade"),
        60,
        model,
        concept_radius=1,
        concept_top_windows=2,
    )  # [4, 9) has most hits; then the latest single-hit window [56, 59) beats [29, 32), [49, 52)
    assert sorted(positions_in_prompts(model)) == [4, 5, 6, 7, 8, 56, 57, 58]


async def test_dense_mentions_are_cut_into_bounded_passages() -> None:
    storyline = story([("Haruhi", f"talks about the SOS Brigade {i}") for i in range(200)])
    model = scripted()
    result = await concept(
        bookmark("concept", 0, keyword="SOS Brigade"),
        200,
        model,
        storyline,
        concept_radius=2,
        concept_top_windows=3,
    )  # one merged run [0, 200) cut into 10-action pieces; all have 10 hits: latest win
    text = prompt_text(model.calls_for("ConceptAnswer")[0])
    spans = [
        sorted(int(p) for p in _POSITION.findall(p)) for p in re.split(r"Passage \d+:", text)[1:]
    ]
    assert [(s[0], s[-1]) for s in spans] == [(170, 179), (180, 189), (190, 199)]
    assert result.actions_read == 30
    assert (
        actions_from_scratch(
            bookmark("concept", 0, keyword="SOS Brigade"),
            200,
            storyline=storyline,
            index=index_for(storyline),
            settings=SyncSettings(prompts="personae", concept_radius=2, concept_top_windows=3),
        )
        == 30
    )


async def test_concept_without_hits_calls_nothing_and_keeps_the_answer() -> None:
    model = scripted()
    result = await concept(
        bookmark("concept", 8, keyword="SOS Brigade", answer="A club."), 29, model
    )
    assert model.calls == [] and result.actions_read == 0
    assert result.bookmark.answer == "A club." and result.bookmark.position == 29


async def test_concept_keyword_falls_back_to_the_question_entity() -> None:
    model = scripted()
    result = await concept(
        bookmark("concept", 0, question="What does the SOS Brigade do?"), 10, model
    )
    assert result.bookmark.keyword == "SOS Brigade"
    assert len(model.calls_for("ConceptAnswer")) == 1
    assert question_entity("Who is Mikuru Asahina's friend?") == "Mikuru Asahina"
    assert question_entity("What happened at the Festival?") == "Festival"
    assert question_entity("what happened?") is None


# ---------------------------------------------------------------- dispatcher and bookkeeping


@pytest.mark.parametrize("kind", ["state", "behavioral", "concept"])
@pytest.mark.parametrize("position", [50, 70])
async def test_bookmark_at_or_after_target_reads_nothing(kind: str, position: int) -> None:
    storyline = brigade_story()
    model = scripted()
    start = bookmark(kind, position, keyword="SOS Brigade", answer="kept")
    result = await sync_bookmark(
        start,
        50,
        storyline=storyline,
        index=index_for(storyline),
        fast_model=model,
        model=model,
        settings=OURS,
    )
    assert model.calls == [] and result.actions_read == 0 and result.usage == LLMUsage()
    assert result.bookmark == start and result.bookmark is not start
    assert result.bookmark.position == position  # never moved backwards


async def test_bad_targets_and_settings_are_clear_errors() -> None:
    storyline = plain_story(10)
    model = scripted()
    with pytest.raises(InputError, match="target 11 is out of range for toy"):
        await sync_bookmark(
            bookmark("state"),
            11,
            storyline=storyline,
            index=index_for(storyline),
            fast_model=model,
            model=model,
            settings=OURS,
        )
    with pytest.raises(InputError, match="out of range"):
        actions_from_scratch(
            bookmark("state"), -1, storyline=storyline, index=index_for(storyline), settings=OURS
        )
    with pytest.raises(ConfigurationError, match="state_chunk must be at least 1"):
        SyncSettings(prompts="personae", state_chunk=0)


def test_actions_from_scratch_arithmetic() -> None:
    rows = [("Haruhi", f"x{i}") for i in range(20)]
    for kyon in (0, 2, 10, 11):
        rows[kyon] = ("Kyon", f"k{kyon}")
    for apple in (3, 5, 15):
        rows[apple] = ("Haruhi", "eats an Apple")
    storyline = story(rows)
    index = StorylineIndex(storyline)
    settings = SyncSettings(prompts="personae", local_scene=3, concept_radius=2)

    def scratch(kind: str, target: int, **s: Any) -> int:
        mark = bookmark(kind, 7, keyword="Apple")
        used = SyncSettings(prompts="personae", **{"local_scene": 3, "concept_radius": 2, **s})
        count: int = actions_from_scratch(
            mark, target, storyline=storyline, index=index, settings=used
        )
        return count

    assert scratch("state", 20) == 20 and scratch("state", 0) == 0
    # Kyon at 0, 2, 10, 11 with 3-action scenes: {0, 1, 2} ∪ [7, 12) = 8; before 11: {0,1,2} ∪ [7, 11)
    assert scratch("behavioral", 20) == 8 and scratch("behavioral", 11) == 7
    # Apple at 3, 5, 15, radius 2: [1, 8) ∪ [13, 18) = 12; before 16: [1, 8) ∪ [13, 16) = 10
    assert scratch("concept", 20) == 12 and scratch("concept", 16) == 10
    assert scratch("concept", 20, concept_top_windows=1) == 7  # the 2-hit window only
    assert settings.state_chunk == 64


# ---------------------------------------------------------------- the invariant


@pytest.mark.parametrize("kind", ["state", "behavioral", "concept"])
async def test_no_operator_ever_reads_at_or_after_its_target(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    storyline = brigade_story()
    reads: list[tuple[int, int]] = []
    original = Storyline.before

    def audited(self: Storyline, position: int, start: int = 0) -> tuple[StoryAction, ...]:
        reads.append((start, position))
        actions: tuple[StoryAction, ...] = original(self, position, start)
        return actions

    monkeypatch.setattr(Storyline, "before", audited)
    audited_reads = 0
    index = index_for(storyline)
    rng = random.Random(f"no-future-{kind}")
    settings = SyncSettings(
        prompts="personae", state_chunk=7, behavior_batch=3, local_scene=3, concept_radius=4
    )
    for _ in range(60):
        target = rng.randrange(1, len(storyline) + 1)
        start = rng.randrange(0, target)
        model = scripted(supports=lambda position: position % 2 == 0)
        mark = bookmark(
            kind, start, keyword="SOS Brigade", evidence=list(range(0, start, 5)), answer="old"
        )
        result = await sync_bookmark(
            mark,
            target,
            storyline=storyline,
            index=index,
            fast_model=model,
            model=model,
            settings=settings,
        )
        seen = positions_in_prompts(model)
        assert all(q < target for q in seen), (kind, start, target, sorted(seen))
        assert all(stop <= target for _, stop in reads), (kind, start, target)
        audited_reads += len(reads)
        reads.clear()
        assert result.bookmark.position == target
        assert all(q < target for q in result.bookmark.evidence)
        assert all(t.position <= target for t in result.bookmark.transitions)
        scratch = actions_from_scratch(
            mark, target, storyline=storyline, index=index, settings=settings
        )
        if kind != "concept":  # the incremental read set is a subset of the full one
            assert result.actions_read <= scratch
        if kind == "state":
            assert seen == set(range(start, target))
    assert audited_reads > 20  # the audit saw the operator's reads


@pytest.mark.parametrize("kind", ["state", "behavioral", "concept"])
async def test_syncing_from_zero_reads_exactly_what_from_scratch_counts(kind: str) -> None:
    storyline = brigade_story()
    index = index_for(storyline)
    for target in (1, 9, 33, 60):
        model = scripted(supports=lambda position: False)
        mark = bookmark(kind, 0, keyword="SOS Brigade")
        result = await sync_bookmark(
            mark,
            target,
            storyline=storyline,
            index=index,
            fast_model=model,
            model=model,
            settings=OURS,
        )
        assert result.actions_read == actions_from_scratch(
            mark, target, storyline=storyline, index=index, settings=OURS
        )


@pytest.mark.endtoend
async def test_incremental_steps_on_haruhi_read_far_less_than_from_scratch(
    shared_dir: Path,
) -> None:
    storyline = load_storyline(shared_dir / "data/bookmarks/title2action_series.haruhi.json")
    index = index_for(storyline)
    model = scripted(supports=lambda position: position % 4 == 0)
    marks = {
        "state": bookmark("state", question="Where is Kyon right now?"),
        "behavioral": bookmark("behavioral", question="How does Kyon react to Haruhi's plans?"),
        "concept": bookmark("concept", question="What is the SOS Brigade?"),
    }
    read = dict.fromkeys(marks, 0)
    scratch = dict.fromkeys(marks, 0)
    for target in range(16, 700, 16):
        for kind, mark in marks.items():
            result = await sync_bookmark(
                mark,
                target,
                storyline=storyline,
                index=index,
                fast_model=model,
                model=model,
                settings=OURS,
            )
            marks[kind] = result.bookmark
            read[kind] += result.actions_read
            scratch[kind] += actions_from_scratch(
                mark, target, storyline=storyline, index=index, settings=OURS
            )
    assert all(q < 688 for q in positions_in_prompts(model))
    assert marks["concept"].keyword == "SOS Brigade" and marks["concept"].answer
    assert marks["behavioral"].evidence and marks["behavioral"].answer
    assert read["state"] == 688  # every action once
    for kind in marks:
        assert read[kind] < 0.2 * scratch[kind], (kind, read[kind], scratch[kind])


def test_the_released_defaults() -> None:
    """64-action state chunks, a 10-action local scene checked one action per call, +-8 concept
    windows and the top 8 (``BOOKMARKS_Koishiday_2026``'s runner defaults)."""
    settings = SyncSettings(prompts="personae")
    assert (settings.state_chunk, settings.local_scene, settings.behavior_batch) == (64, 10, 1)
    assert (settings.concept_radius, settings.concept_top_windows) == (8, 8)
