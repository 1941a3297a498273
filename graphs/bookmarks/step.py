"""One question's BOOKMARKS step, shared by the graph and the ``storyline_memory`` tool.

Match -> (derive) -> activate, then sync, then save the step: the graph runs these for every
proposed question (its match, sync and save nodes), the tool for the one question it is asked.
Nothing is written to the bank before the step's syncs are done: new and derived bookmarks get
their ids when activated, and :func:`save_step` writes every bookmark of the step in one upsert
and records the unknown answers in one write of the list (the bank's cost per step is one
write, not one per bookmark; a step killed mid-way leaves the bank as it was).
Keeping them in one place is the point: the tool once re-implemented them and drifted (no
unknown list, a fixed K', its own sync settings). Both read their settings from a
:class:`BookmarkStepSettings` built from the same context fields.

The models come from the caller (the graph's role preset): under the paper's roles (§5.1) every
call here (match, derive, sync checks and summaries) runs on the fast model; under the released
runner's, match, derive and summaries run on the strong one. ``settings.sync.prompts`` picks the
released runner's prompts and candidate ranking (the paper's method) or ours.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from typing_extensions import TypedDict

from personae.agents.bookmarks.deriver import derive_answer
from personae.agents.bookmarks.matcher import (
    Decision,
    Match,
    match_question,
    match_released,
    overlap_rate,
)
from personae.graphs.bookmarks import sync as bookmark_sync
from personae.graphs.bookmarks.resources import BookmarkResources
from personae.llm import LLMUsage
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import Bookmark, BookmarkType
from personae.memory.bookmarks.storyline import StoryAction

logger = logging.getLogger(__name__)


class Question(TypedDict):
    """A question to resolve: what the proposer (or the tool's caller) asked."""

    type: str
    """``behavioral``, ``state`` or ``concept``."""
    question: str
    keyword: str | None
    """Concept questions: the entity's name as written in the story."""


class GroundingEntry(TypedDict):
    """A bookmark as the actor is shown it at a target."""

    id: str
    type: str
    question: str
    answer: str
    """The answer valid at the target (``""``: unknown so far)."""
    position: int
    """Where the bookmark is synced to."""


@dataclass(frozen=True)
class BookmarkStepSettings:
    """What one step may do: the context's K', derive switch and sync sizes."""

    k_candidates: int = 5
    """K': candidates the lexical filter keeps (0: never reuse, every question is new)."""
    derive: bool = True
    """Whether a "derive" decision derives (off: it starts a new bookmark, an ablation)."""
    sync: bookmark_sync.SyncSettings = bookmark_sync.SyncSettings()


@dataclass(frozen=True)
class Activation:
    """The bookmark a question activated and how."""

    bookmark: Bookmark
    decision: Decision
    """``reuse``, ``derive``, or ``none`` (a new bookmark)."""
    usage: LLMUsage


@dataclass(frozen=True)
class SyncOutcome:
    """A synced bookmark (not stored yet), with what the sync read and cost."""

    bookmark: Bookmark
    actions_read: int
    actions_from_scratch: int
    usage: LLMUsage


def activate(
    bank: BookmarkBank,
    match: Match,
    *,
    question: Question,
    character: str,
    answer: str = "",
) -> Bookmark:
    """The bookmark a match activates: the reused one, a derived child, or a new empty one.

    A derived child starts at its parent's position (at most the target, since candidates are
    synced by it) with ``answer``, the answer derived from the parent's; a new one starts empty
    at position 0. New and derived bookmarks get their id here but are not stored yet: the
    step's :func:`save_step` writes them, synced.
    """
    if match.decision == "reuse" and match.bookmark is not None:
        return match.bookmark
    parent = match.bookmark if match.decision == "derive" else None
    return bank.new(
        question=question["question"],
        type=BookmarkType(question["type"]),
        character=character,
        answer=answer if parent else "",
        position=parent.position if parent else 0,
        parent_id=parent.id if parent else None,
        keyword=question.get("keyword"),
    )


@dataclass(frozen=True)
class Resolution:
    """How a question relates to the bank, before anything is written."""

    match: Match
    answer: str
    """A derived child's first answer (``""`` otherwise)."""
    usage: LLMUsage


def find_candidates(
    resources: BookmarkResources,
    questions: Sequence[Question],
    *,
    character: str,
    target: int,
    settings: BookmarkStepSettings,
) -> list[list[Bookmark]]:
    """Each question's K' bank candidates synced by ``target``, found together.

    The paper's method (released prompts): the released runner's ``find_supporting_bookmark``
    order, every same-scope bookmark ranked by its ``overlap_rate`` (ties to the newest, zero
    overlap included). Ours: one embedding call, one product per scope, the lexical filter.
    One read of the winners. Blocks (embedding, Chroma): async callers use a thread.
    """
    queries = [(q["question"], BookmarkType(q["type"]), character) for q in questions]
    if settings.sync.prompts == "released":  # the runner's ranking over the whole scope
        return resources.bank.ranked_candidates_many(
            queries, synced_by=target, k=settings.k_candidates, score=overlap_rate
        )
    return resources.bank.candidates_many(queries, synced_by=target, k=settings.k_candidates)


async def resolve_question(
    resources: BookmarkResources,
    question: Question,
    *,
    character: str,
    target: int,
    fast_model: BaseChatModel,
    settings: BookmarkStepSettings,
    scene: Sequence[StoryAction] = (),
    candidates: Sequence[Bookmark] | None = None,
) -> Resolution:
    """Match ``question`` to the bank's K' candidates synced by ``target``; derive if so.

    ``candidates``: from :func:`find_candidates` (the graph finds a step's together); ``None``
    searches the bank for this question alone. A derive decision makes one more fast-model
    call that writes the child's first answer from the parent's answer at the parent's
    position; with ``settings.derive`` off it becomes a new bookmark instead. Nothing is
    written, and :func:`activate` gives new bookmarks their ids in question order, so ids never
    depend on which model call finished first.
    """
    if candidates is None:
        # Chroma reads and the embedding block: a thread keeps the event loop moving.
        [candidates] = await asyncio.to_thread(
            find_candidates,
            resources,
            [question],
            character=character,
            target=target,
            settings=settings,
        )
    matcher = match_released if settings.sync.prompts == "released" else match_question
    match, usage = await matcher(
        fast_model,
        question=question["question"],
        type=question["type"],
        candidates=list(candidates),
        target=target,
    )
    if match.decision == "derive" and not settings.derive:
        match = Match("none", None)
    answer = ""
    if match.decision == "derive" and match.bookmark is not None:
        parent = match.bookmark
        answer, cost = await derive_answer(
            fast_model,
            question=question["question"],
            parent_question=parent.question,
            parent_answer=parent.answer_at(parent.position),
            scene=scene,
        )
        usage = usage + cost
    return Resolution(match, answer, usage)


async def activate_question(
    resources: BookmarkResources,
    question: Question,
    *,
    character: str,
    target: int,
    fast_model: BaseChatModel,
    settings: BookmarkStepSettings,
    scene: Sequence[StoryAction] = (),
) -> Activation:
    """:func:`resolve_question` then :func:`activate`: one question, start to bookmark."""
    resolution = await resolve_question(
        resources,
        question,
        character=character,
        target=target,
        fast_model=fast_model,
        settings=settings,
        scene=scene,
    )
    bookmark = await asyncio.to_thread(
        activate,
        resources.bank,
        resolution.match,
        question=question,
        character=character,
        answer=resolution.answer,
    )
    return Activation(bookmark, resolution.match.decision, resolution.usage)


def grounding_entry(bookmark: Bookmark, target: int) -> GroundingEntry:
    """A bookmark as grounding at ``target`` shows it."""
    return GroundingEntry(
        id=bookmark.id,
        type=str(bookmark.type),
        question=bookmark.question,
        answer=bookmark.answer_at(target),
        position=bookmark.position,
    )


async def sync_active(
    resources: BookmarkResources,
    bookmark: Bookmark | str,
    *,
    target: int,
    fast_model: BaseChatModel,
    settings: BookmarkStepSettings,
    model: BaseChatModel | None = None,
) -> SyncOutcome:
    """Sync one active bookmark (a new one, or a bank id) to ``target``; nothing is stored.

    ``fast_model`` makes the state and evidence checks, ``model`` (default the same) the
    behavior summaries and concept answers. :func:`save_step` stores the step's synced
    bookmarks together.
    """
    if isinstance(bookmark, str):
        # ``at``: a bookmark already synced past the target brings back the versions it needs.
        bookmark = await asyncio.to_thread(resources.bank.get, bookmark, at=target)
    result = await bookmark_sync.sync_bookmark(
        bookmark,
        target,
        storyline=resources.storyline,
        index=resources.index,
        settings=settings.sync,
        fast_model=fast_model,
        model=model or fast_model,  # §5.1: summaries are "other calls", on the fast model too
    )
    scratch = bookmark_sync.actions_from_scratch(
        bookmark,
        target,
        storyline=resources.storyline,
        index=resources.index,
        settings=settings.sync,
    )
    return SyncOutcome(result.bookmark, result.actions_read, scratch, result.usage)


def save_step(
    resources: BookmarkResources,
    synced: Sequence[Bookmark],
    *,
    created: Iterable[str] = (),
    character: str,
    target: int,
) -> list[GroundingEntry]:
    """Write the step's synced bookmarks (one upsert) and its unknown answers (one write).

    ``created``: ids of the step's new and derived bookmarks (not in the bank yet). A bookmark
    another step synced further meanwhile is kept as stored (positions only move forward).
    An answer still unknown at ``target`` is recorded for ``character`` at ``target``: later
    steps are told not to ask it again, earlier ones never see the entry. Returns each
    bookmark's grounding entry at ``target``, in order. Blocks: async callers use a thread.
    """
    stored = resources.bank.save_step(list(synced), created=created, at=target)
    entries = [grounding_entry(bookmark, target) for bookmark in stored]
    unknown = [entry["question"] for entry in entries if not entry["answer"]]
    resources.unknown.record_all(character, unknown, target)
    return entries


class ActiveBookmark(TypedDict):
    """The bookmark one question activated."""

    id: str
    decision: Decision
    """``reuse``, ``derive``, or ``none`` (a new bookmark)."""
    question: Question
    created: str
    """A new or derived bookmark: its whole record as JSON (it is not in the bank until the
    step saves it); ``""`` for a reused one, which the sync reads from the bank."""


class SyncRecord(TypedDict):
    """One synced bookmark as the graph's fan-in collects it (and a checkpoint keeps it)."""

    id: str
    """The active bookmark's id."""
    record: str
    """The synced bookmark as JSON, for the step's one write."""
    created: bool
    """Whether the step created it (new or derived: not in the bank yet)."""
    actions_read: int
    actions_from_scratch: int
    llm_calls: int
    input_tokens: int
    output_tokens: int
    degraded: int
    """Model answers of this sync still invalid after retries (kept unchanged, counted)."""


def active_bookmark(question: Question, bookmark: Bookmark, decision: Decision) -> ActiveBookmark:
    """What the graph's state keeps of an activation (the record of a not-yet-stored one)."""
    created = "" if decision == "reuse" else bookmark.model_dump_json()
    return ActiveBookmark(id=bookmark.id, decision=decision, question=question, created=created)


def outcome_record(outcome: SyncOutcome, *, created: bool) -> SyncRecord:
    """A sync outcome as the graph's fan-in record (the synced bookmark, reads, usage)."""
    return SyncRecord(
        id=outcome.bookmark.id,
        record=outcome.bookmark.model_dump_json(),
        created=created,
        actions_read=outcome.actions_read,
        actions_from_scratch=outcome.actions_from_scratch,
        llm_calls=outcome.usage.calls,
        input_tokens=outcome.usage.input_tokens,
        output_tokens=outcome.usage.output_tokens,
        degraded=outcome.usage.degraded,
    )


def save_records(
    resources: BookmarkResources, records: Sequence[SyncRecord], *, character: str, target: int
) -> list[GroundingEntry]:
    """:func:`save_step` for the graph's fan-in records (one per distinct bookmark, in order)."""
    unique = list({record["id"]: record for record in records}.values())
    return save_step(
        resources,
        [Bookmark.model_validate_json(record["record"]) for record in unique],
        created=[record["id"] for record in unique if record["created"]],
        character=character,
        target=target,
    )
