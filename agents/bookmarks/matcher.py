"""The bookmark matcher: reuse an existing bookmark, derive from one, or start a new one.

The paper's "match" step for one proposed question, two ways. ``released`` (the paper's method):
the released runner's ``bookmark_relation`` prompt, one call per candidate in the candidates'
order (the released ``find_supporting_bookmark``: every same-type bookmark synced past 0 ranked
by ``overlap_rate``, shared stop-word-filtered tokens over the smaller token set, ties to the
newest, the top K' asked even at zero overlap), the first "reuse" or "derive" winning; its answer is one of the three words (an enum).
``personae`` (ours): all candidates in one call. The candidates (already filtered by the
bank: same type, synced by the target, sharing a content word) are shown as ``B1..Bn``. The
answer is one choice from an enum built for the call (``none``, ``reuse B1``, ``derive B1``,
...), so the model can never point at a bookmark that is not a candidate, nor reuse one without
naming it; the code maps the id back. A choice still invalid after retries degrades to "none"
(a new bookmark), counted. Two shortcuts skip the model: no candidates means "none", and a
candidate asking the very same question (same content words) is reused.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from personae.agents.answer_schemas import one_of, per_call_schema
from personae.agents.bookmarks.question_proposer import question_key
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.bookmarks.bank_index import id_number
from personae.memory.bookmarks.bookmark import Bookmark
from personae.process_caches import clears_on_reset

Decision = Literal["reuse", "derive", "none"]

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, bookmark_relation (commit 2489d17):
# verbatim; the answer is one word, which the schema states (reuse / derive / none).
RELEASED_RELATION = """You are checking whether an existing bookmark can support a new bookmark.

Tag: {tag}

Existing bookmark query:
{old_query}

Existing bookmark answer:
{old_answer}

New bookmark query:
{new_query}

Decide the relation from the existing bookmark to the new bookmark.

Return exactly one word:

reuse
- The two queries should share the same maintained bookmark slot.
- They ask for essentially the same information over time.

derive
- The existing bookmark should not be reused as the same slot.
- But its current synchronized answer can be used to initialize the new bookmark.

none
- The existing bookmark is not sufficiently relevant.

Be conservative:
- Use "reuse" only for near-equivalent maintained memory targets.
- Use "derive" for closely related but non-identical queries.
- Use "none" otherwise.

Directly output one word: reuse, derive, or none.
"""  # the runner's f-string ends with this newline

RELEASED_STOPWORDS = frozenset(
    "a an the is are was were be being been do does did done to of in on at by for with about "
    "from into through during before after above below up down out off over under and or but "
    "if then else when while as what which who whom whose where why how this that these those "
    "it its he she they them their there now current currently right usually generally tend "
    "tends".split()
)
"""The released ``overlap_rate``'s stop words (src/bookmarks/bookmarks.py, commit 2489d17)."""


class Relation(BaseModel):
    """The released matcher's one word."""

    relation: Decision = Field(description="reuse, derive, or none.")


_RELEASED_WORD = re.compile(r"\b\w+\b")


@functools.lru_cache(maxsize=65536)
def released_tokens(text: str) -> frozenset[str]:
    r"""The released ``normalize_query``: word tokens of the lowercased text, stop words out.

    The runner's ``re.findall(r"\b\w+\b", ...)``: ``Haruhi's`` gives ``haruhi`` and ``s``.
    """
    return frozenset(t for t in _RELEASED_WORD.findall(text.lower()) if t not in RELEASED_STOPWORDS)


clears_on_reset("agents.bookmarks.matcher.released_tokens", released_tokens.cache_clear)


def overlap_rate(a: str, b: str) -> float:
    """The released candidate ranking: shared non-stop-word tokens over the smaller set."""
    left, right = released_tokens(a), released_tokens(b)
    if not left or not right:
        return 0.0
    return len(left & right) / min(len(left), len(right))


def released_candidates(question: str, candidates: Sequence[Bookmark], k: int) -> list[Bookmark]:
    """The released ``find_supporting_bookmark``'s top ``k`` of ``candidates``.

    Those synced past position 0, sorted by ``(overlap_rate, creation order)`` descending:
    ties go to the newest bookmark (the larger ``bm-<n>``), and a zero overlap still counts.
    The bank's :meth:`~personae.memory.bookmarks.bank.BookmarkBank.ranked_candidates_many`
    ranks a whole scope the same way.
    """
    ranked = sorted(
        (b for b in candidates if b.position > 0),
        key=lambda b: (overlap_rate(question, b.question), id_number(b.id)),
        reverse=True,
    )
    return ranked[: max(0, k)]


async def match_released(
    model: BaseChatModel,
    *,
    question: str,
    type: str,
    candidates: Sequence[Bookmark],
    target: int,
) -> tuple[Match, LLMUsage]:
    """The paper's matching: one released ``bookmark_relation`` call per candidate, in order.

    The first candidate judged "reuse" or "derive" wins and no later one is asked. A call still
    invalid after retries counts as "none" for that candidate (``usage.degraded``).
    """
    usage = LLMUsage()
    for bookmark in candidates:
        prompt = RELEASED_RELATION.format(
            tag=type,
            old_query=bookmark.question,
            old_answer=bookmark.answer_at(min(bookmark.position, target)) or "unknown",
            new_query=question,
        )
        try:
            answer, used = await call_structured(model, Relation, [HumanMessage(prompt)])
        except InvalidAnswerError as failed:
            usage = usage + failed.usage + LLMUsage(degraded=1)
            continue
        usage = usage + used
        if answer.relation != "none":
            return Match(answer.relation, bookmark), usage
    return Match("none", None), usage


# Ours (--method bookmarks-personae): all candidates in one call, ids as an enum.
MATCHER_SYSTEM = """You manage a bank of bookmarks: questions about a story, each with its answer
so far. Given a new question and candidate bookmarks, decide:
- "reuse <id>": a candidate asks the SAME thing (its answer, brought up to date, answers the
  new question), e.g. "reuse B2".
- "derive <id>": a candidate is closely related and its answer is a useful starting point,
  but the new question asks something different, e.g. "derive B1".
- "none": no candidate helps; a new bookmark will be started from scratch.
Only use the ids listed."""

MATCHER_USER = """## New {type} question
{question}

## Candidate bookmarks
{candidates}"""


class MatchChoice(BaseModel):
    """How the new question relates to the candidates."""

    choice: str = Field(description='"none", or "reuse" / "derive" and a candidate id.')


@per_call_schema(maxsize=32)
def match_choice_schema(count: int) -> type[MatchChoice]:
    """``MatchChoice`` over candidates ``B1..B<count>``: an enum of every allowed choice."""
    ids = [f"B{i}" for i in range(1, count + 1)]
    choices = ["none", *(f"{d} {i}" for i in ids for d in ("reuse", "derive"))]
    return create_model(
        "MatchChoice",
        __base__=MatchChoice,
        choice=(
            one_of(choices),
            Field(description='"none", or "reuse <id>" / "derive <id>" for a candidate listed.'),
        ),
    )


@dataclass(frozen=True)
class Match:
    """The matcher's decision with the candidate mapped back to a real bookmark."""

    decision: Decision
    bookmark: Bookmark | None
    """The reused or parent bookmark; ``None`` for "none"."""


def _candidate_line(short_id: str, bookmark: Bookmark, target: int) -> str:
    answer = bookmark.answer_at(min(bookmark.position, target)) or "(unknown so far)"
    return f"{short_id}: Q: {bookmark.question} | A: {answer}"


async def match_question(
    model: BaseChatModel,
    *,
    question: str,
    type: str,
    candidates: Sequence[Bookmark],
    target: int,
) -> tuple[Match, LLMUsage]:
    """Classify ``question`` against ``candidates`` as reuse / derive / none.

    Answers shown are those valid at ``min(candidate position, target)``, so nothing a
    candidate learned at or after ``target`` reaches the prompt.
    """
    if not candidates:
        return Match("none", None), LLMUsage()
    same = [b for b in candidates if question_key(b.question) == question_key(question)]
    if same:
        return Match("reuse", same[0]), LLMUsage()
    by_id = {f"B{i}": bookmark for i, bookmark in enumerate(candidates, start=1)}

    messages = [
        SystemMessage(MATCHER_SYSTEM),
        HumanMessage(
            MATCHER_USER.format(
                type=type,
                question=question,
                candidates="\n".join(_candidate_line(i, b, target) for i, b in by_id.items()),
            )
        ),
    ]
    try:
        answer, usage = await call_structured(model, match_choice_schema(len(by_id)), messages)
    except InvalidAnswerError as failed:  # degrade: a new bookmark, as for "none"
        return Match("none", None), failed.usage + LLMUsage(degraded=1)
    decision, _, short_id = answer.choice.partition(" ")
    if decision == "reuse":
        return Match("reuse", by_id[short_id]), usage
    if decision == "derive":
        return Match("derive", by_id[short_id]), usage
    return Match("none", None), usage
