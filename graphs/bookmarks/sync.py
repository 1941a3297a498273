"""The BOOKMARKS sync operators: bring a bookmark from its position p to a target t.

Why incremental: a bookmark at position p already reflects actions [0, p), so syncing it to t
reads only the unseen suffix [p, t) (plus, for context, a few earlier actions) instead of the
whole story. Each bookmark type has its own operator (the paper's three):

- state: fixed-size chunks of [p, t), each checked by the fast model: reset, update or keep
  the answer (the released prompts: a check, then an update call on "update"; ours: one call);
- behavioral: the proposing character's actions in [p, t), each checked in its 10-action local
  scene as direct evidence for the pattern (behind a classifier interface), then a summary of
  all the evidence gathered so far (later evidence favoured) when new evidence arrived;
- concept: keyword hits in [p, t), merged +-radius context windows, the best windows
  summarised with the previous answer (the released runner's substring hits and
  ``build_merge_rank_spans`` for the paper's method; ours through the storyline index).

``SyncSettings.prompts`` picks the released runner's prompts (the paper's method) or ours;
``incremental_behavior`` is the paper's IBU ablation. The BOOKMARKS graph gives the checks the
fast model and the summaries the model its role preset names (§5.1: the fast one too).

The fairness invariant: no operator ever reads a position >= t. Every storyline read goes
through :func:`_read`, which refuses such a window, and the tests audit every prompt. Positions
follow :mod:`personae.memory.bookmarks.bookmark`: ``position = p`` means synced through actions [0, p).

This module holds no graph: the BOOKMARKS graph's sync node fans out over active bookmarks,
calls :func:`sync_bookmark` and saves the returned copy in the bank.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel

from personae.agents.bookmarks.behavior_checker import (
    BehaviorEvidenceClassifier,
    BehaviorItem,
    LLMBehaviorClassifier,
    ReleasedBehaviorClassifier,
    summarize_behavior,
    summarize_behavior_released,
)
from personae.agents.bookmarks.concept_summarizer import (
    extract_keyword,
    summarize_concept,
    update_concept_released,
)
from personae.agents.bookmarks.state_syncer import update_state_answer, update_state_released
from personae.errors import ConfigurationError, InputError
from personae.llm import InvalidAnswerError, LLMUsage
from personae.memory.bookmarks.bookmark import Bookmark, BookmarkType, StateTransition
from personae.memory.bookmarks.storyline import StoryAction, Storyline
from personae.tools.bookmarks.storyline_index import StorylineIndex

MAX_TRANSITIONS = 32
"""State transitions kept on a bookmark (the latest), so its stored record stays bounded."""

_QUESTION_WORDS = frozenset(
    "what who whom whose where when why how which does do did is are was were has have had can "
    "could will would should a an the in at on of to i".split()
)
_CAPITALISED_RUN = re.compile(r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*")


PromptSet = Literal["released", "personae"]
"""``released``: the released runner's prompts (the paper's method); ``personae``: ours."""


@dataclass(frozen=True, kw_only=True)
class SyncSettings:
    """How the three operators read the story (the paper's defaults)."""

    prompts: PromptSet = "released"
    """Which prompts the operators use: the released runner's (the paper's method) or ours."""
    incremental_behavior: bool = False
    """The paper's IBU ablation (Table 3, "Incremental Behavior Update"): behavioral bookmarks
    synced like state ones, chunk by chunk, instead of by checked evidence."""

    state_chunk: int = 64
    """State operator: actions per chunk (one fast-model call each)."""
    behavior_batch: int = 1
    """Behavioral operator: actions checked per classifier call (1: one call per action, as
    the released code and the paper's distilled classifier check them; more batches the
    LLM check, fewer calls)."""
    local_scene: int = 10
    """Behavioral operator: actions shown before each checked action (the released code's
    10-action local scene; clipped at the story start)."""
    concept_radius: int = 8
    """Concept operator: +-radius context windows around each keyword hit."""
    concept_top_windows: int = 8
    """Concept operator: windows summarised (most hits first; ties: the latest)."""

    def __post_init__(self) -> None:
        """Reject settings that would make an operator read nothing or loop forever."""
        for name in ("state_chunk", "behavior_batch", "concept_top_windows"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"sync setting {name} must be at least 1", "raise it")
        for name in ("local_scene", "concept_radius"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"sync setting {name} must not be negative", "use 0+")


@dataclass(frozen=True)
class SyncResult:
    """What one sync produced."""

    bookmark: Bookmark
    """An updated copy (the input is never mutated): answer, position == target, memory."""
    actions_read: int
    """Distinct storyline positions this operator read (incl. local scenes / windows)."""
    usage: LLMUsage
    """LLM calls and tokens spent."""


def _read(storyline: Storyline, start: int, stop: int, *, target: int) -> tuple[StoryAction, ...]:
    """Actions in [start, stop): the one door to the story, closed at the target."""
    if stop > target:
        raise AssertionError(f"sync tried to read up to {stop} past its target {target}")
    actions: tuple[StoryAction, ...] = storyline.before(stop, start)
    return actions


def _covered(intervals: Iterable[tuple[int, int]]) -> int:
    """Distinct positions covered by half-open intervals."""
    total, reach = 0, -1
    for low, high in sorted(intervals):
        low = max(low, reach)
        if high > low:
            total += high - low
            reach = high
    return total


def _synced(bookmark: Bookmark, target: int, **changes: object) -> Bookmark:
    """A deep copy moved to ``target`` with ``changes`` applied."""
    updated = bookmark.model_copy(deep=True)
    for name, value in changes.items():
        setattr(updated, name, value)
    updated.position = target
    return updated


def _check_range(bookmark: Bookmark, target: int, storyline: Storyline) -> None:
    if not 0 <= target <= len(storyline):
        raise InputError(
            f"sync target {target} is out of range for {storyline.name} ({len(storyline)} actions)",
            f"use a target from 0 to {len(storyline)}",
        )
    if bookmark.position < 0:
        raise InputError(
            f"bookmark {bookmark.id} has a negative position {bookmark.position}",
            "repair the bank entry (positions start at 0)",
        )


def _unchanged(bookmark: Bookmark) -> SyncResult:
    return SyncResult(bookmark.model_copy(deep=True), 0, LLMUsage())


async def sync_state(
    bookmark: Bookmark,
    target: int,
    *,
    storyline: Storyline,
    fast_model: BaseChatModel,
    settings: SyncSettings = SyncSettings(),
) -> SyncResult:
    """State operator: chunks of ``state_chunk`` actions over [p, target), one call each.

    A chunk whose answer is still invalid after retries degrades the sync: the bookmark stays
    synced up to that chunk (its answer as it was there), so the next step reads it again.
    """
    start = bookmark.position
    if start >= target:
        return _unchanged(bookmark)
    answer, usage, synced_to = bookmark.answer, LLMUsage(), target
    transitions = list(bookmark.transitions)
    for low in range(start, target, settings.state_chunk):
        high = min(low + settings.state_chunk, target)
        chunk = _read(storyline, low, high, target=target)
        try:
            if settings.prompts == "released":
                step, cost = await update_state_released(
                    fast_model, question=bookmark.question, answer=answer, chunk=chunk
                )
            else:
                step, cost = await update_state_answer(
                    fast_model,
                    question=bookmark.question,
                    character=bookmark.character,
                    answer=answer,
                    chunk=chunk,
                )
        except InvalidAnswerError as failed:
            usage, synced_to = usage + failed.usage + LLMUsage(degraded=1), low
            break
        answer, usage = step.answer, usage + cost
        transitions.append(StateTransition(position=high, operation=step.operation, answer=answer))
    updated = _synced(
        bookmark, synced_to, answer=answer, transitions=transitions[-MAX_TRANSITIONS:]
    )
    return SyncResult(updated, synced_to - start, usage)


def _character_positions(storyline: Storyline, character: str, start: int, stop: int) -> list[int]:
    positions = storyline.positions_of(character)
    return list(positions[bisect_left(positions, start) : bisect_left(positions, stop)])


def _behavior_items(
    storyline: Storyline, positions: Sequence[int], scene_size: int, target: int, character: str
) -> list[BehaviorItem]:
    items = []
    for position in positions:
        window = _read(storyline, max(0, position - scene_size), position + 1, target=target)
        items.append(BehaviorItem(action=window[-1], scene=window[:-1], character=character))
    return items


async def sync_behavior(
    bookmark: Bookmark,
    target: int,
    *,
    storyline: Storyline,
    classifier: BehaviorEvidenceClassifier,
    model: BaseChatModel,
    settings: SyncSettings = SyncSettings(),
) -> SyncResult:
    """Behavioral operator: check the character's unseen actions, summarise new evidence.

    No action of the character in [p, target) -> no call at all; no new evidence -> the answer
    stays as it was and no summary is written. A summary still invalid after retries keeps the
    previous answer (the new evidence is kept: the next summary weighs it), counted.
    """
    if bookmark.position >= target:
        return _unchanged(bookmark)
    todo = _character_positions(storyline, bookmark.character, bookmark.position, target)
    if not todo:
        return SyncResult(_synced(bookmark, target), 0, LLMUsage())
    items = _behavior_items(storyline, todo, settings.local_scene, target, bookmark.character)
    verdicts, usage = await classifier.classify(bookmark.question, items)
    if len(verdicts) != len(items):
        raise ValueError(f"the classifier gave {len(verdicts)} verdicts for {len(items)} items")
    read = [(max(0, q - settings.local_scene), q + 1) for q in todo]
    found = [q for q, supports in zip(todo, verdicts, strict=True) if supports]
    if not found:
        return SyncResult(_synced(bookmark, target), _covered(read), usage)
    evidence = sorted(set(bookmark.evidence).union(found))
    shown = [q for q in evidence if q < target]  # all of it: the summary weighs every piece
    actions = [_read(storyline, q, q + 1, target=target)[0] for q in shown]
    summarize = (
        summarize_behavior_released if settings.prompts == "released" else summarize_behavior
    )
    try:
        answer, cost = await summarize(model, bookmark.question, bookmark.character, actions)
    except InvalidAnswerError as failed:
        answer, cost = bookmark.answer, failed.usage + LLMUsage(degraded=1)
    read += [(q, q + 1) for q in shown]
    updated = _synced(bookmark, target, answer=answer, evidence=evidence)
    return SyncResult(updated, _covered(read), usage + cost)


def question_entity(question: str) -> str | None:
    """The entity a concept question names: its longest run of capitalised words.

    Fallback for concept bookmarks stored without a keyword. Question words and articles that
    open a run ("What", "Who", "The") are dropped, a possessive ``'s`` is cut.
    """
    runs = []
    for match in _CAPITALISED_RUN.finditer(question):
        words = match.group().split()
        while words and words[0].casefold() in _QUESTION_WORDS:
            words = words[1:]
        if words:
            runs.append(re.sub(r"['’]s$", "", " ".join(words)))
    return max(runs, key=len) if runs else None


def _top_windows(
    windows: Sequence[tuple[int, int]], hits: Sequence[int], top: int
) -> list[tuple[int, int]]:
    """Ours: the ``top`` windows with most hits (ties to the most recent), back in story order."""

    def hit_count(window: tuple[int, int]) -> int:
        return bisect_left(hits, window[1]) - bisect_left(hits, window[0])

    return sorted(sorted(windows, key=lambda w: (-hit_count(w), -w[1]))[:top])


def released_spans(hits: Sequence[int], radius: int, *, end: int) -> list[tuple[int, int]]:
    """The released ``build_merge_rank_spans``: merged hit windows in the runner's rank order.

    Each hit's ``[hit - radius, hit + radius + 1)`` merges with the span before it only when
    they overlap (not when they merely touch); a merged span is kept whole however long; spans
    are ranked by ``(-hits, -first hit)``: most hits first, ties to the latest span. Ends are
    clipped to ``end`` (the runner slices the history before the target the same way).
    """
    merged: list[list[int]] = []  # [start, stop, count, first hit]
    for hit in sorted(set(hits)):
        low, high = max(0, hit - radius), hit + radius + 1
        if merged and low < merged[-1][1]:
            merged[-1][1], merged[-1][2] = max(merged[-1][1], high), merged[-1][2] + 1
        else:
            merged.append([low, high, 1, hit])
    merged.sort(key=lambda span: (-span[2], -span[3]))
    return [(low, min(high, end)) for low, high, _, _ in merged]


def _concept_windows(
    bookmark: Bookmark, start: int, target: int, index: StorylineIndex, settings: SyncSettings
) -> tuple[str | None, list[tuple[int, int]]]:
    """The keyword and the windows its sync reads, in the order the prompt shows them.

    The paper's method (released prompts): the runner's substring hits and its
    :func:`released_spans`, top ``concept_top_windows`` in rank order. Ours: token-phrase
    hits, merged windows cut into bounded pieces, the best ones in story order.
    """
    keyword = bookmark.keyword or question_entity(bookmark.question)
    if not keyword:
        return None, []
    top = settings.concept_top_windows
    if settings.prompts == "released":
        found = index.substring_positions(keyword, start, target)
        return keyword, released_spans(found, settings.concept_radius, end=target)[:top]
    hits = index.positions(keyword, start, target)
    merged = index.context_windows(hits, settings.concept_radius, end=target)
    span = 2 * (2 * settings.concept_radius + 1)
    windows = [piece for window in merged for piece in _split_window(window, span)]
    return keyword, _top_windows(windows, hits, top)


def _split_window(window: tuple[int, int], span: int) -> list[tuple[int, int]]:
    """A merged window cut into pieces of at most ``span`` actions, the last piece whole.

    Where the entity is mentioned densely, merging chains windows into runs of hundreds of
    actions; cutting them keeps every summarised passage (and so the prompt) bounded.
    """
    low, high = window
    pieces = []
    while high - low > span:
        pieces.append((high - span, high))
        high -= span
    pieces.append((low, high))
    return pieces[::-1]


async def sync_concept(
    bookmark: Bookmark,
    target: int,
    *,
    storyline: Storyline,
    index: StorylineIndex,
    model: BaseChatModel,
    settings: SyncSettings = SyncSettings(),
) -> SyncResult:
    """Concept operator: keyword hits in [p, target), best windows summarised with the answer.

    The keyword is ``bookmark.keyword``, else :func:`question_entity` of the question (then kept
    on the copy). Windows may reach back before p for context, never to target or beyond
    (see :func:`_concept_windows`: the runner's spans kept whole for the paper's method; ours
    cuts merged runs longer than two window spans into pieces so prompts stay bounded). No
    hits -> no call, answer unchanged. A summary still invalid after retries leaves the bookmark
    as it was (not advanced: the next step reads the windows again), counted.
    """
    if bookmark.position >= target:
        return _unchanged(bookmark)
    found = LLMUsage()
    if settings.prompts == "released" and not bookmark.keyword:
        try:  # the released runner extracts the keyword once per bookmark
            extracted, found = await extract_keyword(model, bookmark.question)
        except InvalidAnswerError as failed:
            unchanged = bookmark.model_copy(deep=True)
            return SyncResult(unchanged, 0, failed.usage + LLMUsage(degraded=1))
        bookmark = bookmark.model_copy(update={"keyword": extracted or None})
    keyword, windows = _concept_windows(bookmark, bookmark.position, target, index, settings)
    if keyword is None or not windows:
        return SyncResult(_synced(bookmark, target, keyword=keyword), 0, found)
    passages = [_read(storyline, low, high, target=target) for low, high in windows]
    update = update_concept_released if settings.prompts == "released" else summarize_concept
    try:
        answer, usage = await update(
            model,
            question=bookmark.question,
            keyword=keyword,
            windows=passages,
            previous_answer=bookmark.answer,
        )
    except InvalidAnswerError as failed:
        unchanged = bookmark.model_copy(deep=True, update={"keyword": keyword})
        return SyncResult(unchanged, 0, found + failed.usage + LLMUsage(degraded=1))
    updated = _synced(bookmark, target, answer=answer, keyword=keyword)
    return SyncResult(updated, _covered(windows), found + usage)


async def sync_bookmark(
    bookmark: Bookmark,
    target: int,
    *,
    storyline: Storyline,
    index: StorylineIndex,
    fast_model: BaseChatModel,
    model: BaseChatModel,
    settings: SyncSettings = SyncSettings(),
    classifier: BehaviorEvidenceClassifier | None = None,
) -> SyncResult:
    """Sync ``bookmark`` to ``target`` with its type's operator, reading only [p, target).

    A bookmark at or after ``target`` comes back unchanged (a copy, nothing read). The fast
    model checks (unless ``classifier``), ``model`` summarises. A target outside
    [0, len(storyline)] is an :class:`InputError`.
    """
    _check_range(bookmark, target, storyline)
    if bookmark.position >= target:
        return _unchanged(bookmark)
    kind = BookmarkType(bookmark.type)
    incremental = kind is BookmarkType.BEHAVIORAL and settings.incremental_behavior
    if kind is BookmarkType.STATE or incremental:  # IBU: behavior kept like a state
        return await sync_state(
            bookmark, target, storyline=storyline, fast_model=fast_model, settings=settings
        )
    if kind is BookmarkType.BEHAVIORAL:
        checker = classifier or default_classifier(fast_model, settings)
        return await sync_behavior(
            bookmark,
            target,
            storyline=storyline,
            classifier=checker,
            model=model,
            settings=settings,
        )
    return await sync_concept(
        bookmark, target, storyline=storyline, index=index, model=model, settings=settings
    )


def default_classifier(model: BaseChatModel, settings: SyncSettings) -> BehaviorEvidenceClassifier:
    """The LLM evidence check of the settings' prompt set (the released one: one action a call)."""
    if settings.prompts == "released":
        return ReleasedBehaviorClassifier(model)
    return LLMBehaviorClassifier(model, settings.behavior_batch)


def actions_from_scratch(
    bookmark: Bookmark,
    target: int,
    *,
    storyline: Storyline,
    index: StorylineIndex,
    settings: SyncSettings = SyncSettings(),
) -> int:
    """What the same operator would read syncing this bookmark from 0 to ``target`` (no LLM).

    State: ``target``. Behavioral: the character's actions before ``target`` plus their local
    scenes (distinct positions). Concept: distinct positions of the windows the operator would
    read, i.e. the top ``concept_top_windows`` merged windows of every keyword hit before
    ``target`` (the incremental operator counts its reads the same way).
    """
    _check_range(bookmark, target, storyline)
    kind = BookmarkType(bookmark.type)
    if kind is BookmarkType.STATE or (
        kind is BookmarkType.BEHAVIORAL and settings.incremental_behavior
    ):
        return target
    if kind is BookmarkType.BEHAVIORAL:
        todo = _character_positions(storyline, bookmark.character, 0, target)
        return _covered((max(0, q - settings.local_scene), q + 1) for q in todo)
    _, windows = _concept_windows(bookmark, 0, target, index, settings)
    return _covered(windows)
