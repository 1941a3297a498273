"""The behavior checker role: which of a character's actions are evidence for a behavior pattern.

Two prompt sets. ``released`` (the paper's method): the released runner's
``update_behavioral_bookmark`` prompt, verbatim, one action per call (:func:`released_check_prompt`
renders it: the text the paper's DeBERTa classifier was distilled on), a yes / no answer, and the
released summary over the whole evidence list. ``personae`` (ours): the batched check below.

Behavioral bookmarks ask general, reusable questions ("How does Kyon react when Haruhi drags
him into a scheme?"). Syncing one means checking each unseen action of the character, in its
local scene, as direct evidence for the pattern, then summarising all the evidence. The check
follows the released BOOKMARKS code (``update_behavioral_bookmark``): "yes" only if the query's
situation actually holds in the scene AND the action is a concrete example of the behavior;
anything missing, unclear or weakly related is "no". The summary sees every piece of evidence,
oldest first, and favours the later ones when they conflict.

The check sits behind :class:`BehaviorEvidenceClassifier` (``classify(pattern, items) ->
(verdicts, usage)``), so the operator can run without an LLM. The paper replaces the LLM check
with a distilled DeBERTa-v3 NLI classifier; to do the same, implement ``classify`` with your
classifier (one verdict per item, from :func:`render_item`'s text or the item's actions) and
pass it as ``classifier=`` to :func:`personae.graphs.bookmarks.sync.sync_bookmark`.
:class:`LLMBehaviorClassifier` is the LLM implementation: it shows the model items under short
ids the code assigned (``A1``..``An``, one per call by default); those ids are the answer
schema's required keys, so a verdict for each of them, and no other, is what the schema allows.
A batch still invalid after retries is asked again one item per call; an item with no valid
verdict even alone counts as no evidence, and is counted (``usage.degraded``). A batch that
fails for another reason (the server is down) cancels the batches not started yet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import (
    answers_by_key,
    ask_in_batch_or_alone,
    keyed_answers,
    non_blank,
)
from personae.agents.bookmarks.actor import render_scene
from personae.fanout import gather_all
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.bookmarks.storyline import StoryAction

MAX_PARALLEL_BATCHES = 4
"""Classifier calls in flight at once for one bookmark (the graph already fans out)."""

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, update_behavioral_bookmark (commit
# 2489d17): the yes/no evidence check, verbatim (scene = the 10 actions before the checked one).
RELEASED_CHECK = """# Scene
{scene}
# Action by {character}
{action}

We are using the following behavioral query as a filter over past scenes:

# Query
{query}

Question:
Does THIS specific action by {character} in THIS scene provide direct evidence
for the behavior that the query is asking about?

Answer "yes" ONLY if BOTH of the following are true:
- The situation described in the query (characters, conditions, emotional state,
  context, etc.) actually holds in this scene.
- {character}'s action shown above is a concrete example of that behavior in
  this situation (not just vaguely related or partially matching).

If any required condition in the query is missing, unclear, or only weakly
related, answer "no".

Directly answer with a single word: yes or no.
"""  # the runner's f-string ends with this newline

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, update_behavioral_bookmark (commit
# 2489d17): the summary over all accumulated evidence, verbatim (action_list: a Python list).
RELEASED_SUMMARY = """You are given a list of filtered character actions for {character} that all match a particular behavioral query.

# Character action samples (chronologically ordered):
{action_list}

# Behavioral query:
{query}

Important:
- The action list is sorted chronologically from earliest to latest.
- If earlier and later actions appear to conflict, prioritize the pattern implied by the later actions.
- Focus ONLY on behavioral patterns grounded in the provided samples.

Your task:
Summarize how the character, {character}, behaves in a concise, general sentence or two.
Do NOT add new traits, motivations, or interpretations that are not supported by the actions.

Format:
Return ONLY the final summarized answer, no explanation."""

# Ours (--method bookmarks-personae), after the released filter: items batched under ids.
CHECK_SYSTEM = """We are using a behavioral query as a filter over past scenes of a story. Each
item shows the scene (the earlier actions) and then the action to judge (marked >>>).

For each item: does THIS specific action by the character in THIS scene provide direct evidence
for the behavior that the query is asking about?

Answer yes (supports = true) ONLY if BOTH of the following are true:
- The situation described in the query (characters, conditions, emotional state, context, etc.)
  actually holds in this scene.
- The character's marked action is a concrete example of that behavior in this situation (not
  just vaguely related or partially matching).

If any required condition in the query is missing, unclear, or only weakly related, answer no.
Judge only the marked action of each item. Give exactly one verdict for every item id shown."""

CHECK_USER = """## Query
{pattern}

## Items
{items}

Give a verdict for each id: {ids}."""

# Ours (--method bookmarks-personae): the released summary's rules as a system message.
SUMMARY_SYSTEM = """You are given a list of filtered character actions for {character} that all
match a particular behavioral query.

Important:
- The action list is sorted chronologically from earliest to latest.
- If earlier and later actions appear to conflict, prioritize the pattern implied by the later
  actions.
- Focus ONLY on behavioral patterns grounded in the provided samples.

Your task: summarize how the character, {character}, behaves in a concise, general sentence or
two. Do NOT add new traits, motivations, or interpretations that are not supported by the
actions."""

SUMMARY_USER = """## Character action samples (chronologically ordered)
{evidence}

## Behavioral query
{question}

Summarize how {character} behaves."""


@dataclass(frozen=True)
class BehaviorItem:
    """One action to check, with the local scene shown before it (never at or after it)."""

    action: StoryAction
    scene: tuple[StoryAction, ...]
    character: str = ""
    """The bookmark's character (whose action this is)."""


class BehaviorEvidenceClassifier(Protocol):
    """Decides, for each item, whether its action is evidence for ``pattern``."""

    async def classify(
        self, pattern: str, items: Sequence[BehaviorItem]
    ) -> tuple[list[bool], LLMUsage]:
        """One verdict per item, in the items' order, and what it cost."""
        ...


def evidence_verdicts_schema(ids: Sequence[str]) -> type[BaseModel]:
    """``EvidenceVerdicts`` for these item ids: one required true/false per id, no other."""
    return keyed_answers(
        "EvidenceVerdicts",
        "One verdict for every item shown.",
        tuple(ids),
        bool,
        "Item {key}: true if its marked action is evidence for the pattern.",
    )


class BehaviorSummary(BaseModel):
    """The behavior pattern described from the evidence."""

    answer: str = non_blank("A concise, general sentence or two.")


def render_item(item_id: str, item: BehaviorItem) -> str:
    """An item as the model reads it: its scene, then the marked action."""
    lines = [f"{item_id}:"]
    lines += [f"    {a.render()}" for a in item.scene]
    lines.append(f">>> {item.action.render()}")
    return "\n".join(lines)


def released_check_prompt(pattern: str, item: BehaviorItem) -> str:
    """The released yes/no prompt for one item: what the paper's classifier was distilled on.

    Exactly the runner's text: the scene and the action as plain action texts, as
    ``update_behavioral_bookmark`` shows them (no positions, no names of who acts).
    """
    return RELEASED_CHECK.format(
        scene=render_scene(item.scene, plain=True),
        character=item.character or ", ".join(item.action.characters),
        action=item.action.text,
        query=pattern,
    )


class EvidenceAnswer(BaseModel):
    """The released check's single word."""

    answer: Literal["yes", "no"] = Field(description="yes or no.")


class ReleasedBehaviorClassifier:
    """The paper's evidence filter: the released prompt, one action per call, yes / no."""

    def __init__(self, model: BaseChatModel) -> None:
        """Classify with ``model`` (the paper: the fast model, or a distilled classifier)."""
        self.model = model

    async def classify(
        self, pattern: str, items: Sequence[BehaviorItem]
    ) -> tuple[list[bool], LLMUsage]:
        """One call per item; an item with no valid answer after retries is "no" (counted)."""
        limit = asyncio.Semaphore(MAX_PARALLEL_BATCHES)

        async def ask(item: BehaviorItem) -> tuple[bool, LLMUsage]:
            prompt = released_check_prompt(pattern, item)
            async with limit:
                try:
                    answer, usage = await call_structured(
                        self.model, EvidenceAnswer, [HumanMessage(prompt)]
                    )
                except InvalidAnswerError as failed:
                    return False, failed.usage + LLMUsage(degraded=1)
            return answer.answer == "yes", usage

        results = await gather_all(ask(item) for item in items)
        return [found for found, _ in results], sum((u for _, u in results), LLMUsage())


async def summarize_behavior_released(
    model: BaseChatModel,
    question: str,
    character: str,
    evidence_actions: Sequence[StoryAction],
) -> tuple[str, LLMUsage]:
    """The released summary over every evidence action, oldest first (none: no call).

    ``action_list`` is the Python list of the actions' texts, as the released runner prints
    it. A summary still invalid after retries raises :class:`~personae.llm.InvalidAnswerError`.
    """
    ordered = sorted(evidence_actions, key=lambda a: a.position)
    if not ordered:
        return "", LLMUsage()
    prompt = RELEASED_SUMMARY.format(
        character=character, action_list=repr([a.text for a in ordered]), query=question
    )
    summary, usage = await call_structured(model, BehaviorSummary, [HumanMessage(prompt)])
    return summary.answer.strip(), usage


class LLMBehaviorClassifier:
    """The LLM classifier: ``batch_size`` items per call, short ids mapped back by the code."""

    def __init__(self, model: BaseChatModel, batch_size: int = 1) -> None:
        """Classify with ``model`` (the fast model), ``batch_size`` items per call."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model = model
        self.batch_size = batch_size

    async def classify(
        self, pattern: str, items: Sequence[BehaviorItem]
    ) -> tuple[list[bool], LLMUsage]:
        """Verdicts for ``items`` in order: ``ceil(len(items) / batch_size)`` model calls.

        An item no valid verdict came for, even alone, is ``False`` (counted in
        ``usage.degraded``). The first batch failing otherwise cancels the others.
        """
        batches = [
            list(range(start, min(start + self.batch_size, len(items))))
            for start in range(0, len(items), self.batch_size)
        ]
        limit = asyncio.Semaphore(MAX_PARALLEL_BATCHES)

        async def ask(indices: Sequence[int]) -> tuple[dict[int, bool], LLMUsage]:
            verdicts, used = await self._classify_batch(pattern, [items[i] for i in indices])
            return dict(zip(indices, verdicts, strict=True)), used

        async def run(batch: Sequence[int]) -> tuple[dict[int, bool], LLMUsage]:
            async with limit:
                return await ask_in_batch_or_alone(batch, ask)

        results = await gather_all(run(batch) for batch in batches)
        found = {i: v for batch_verdicts, _ in results for i, v in batch_verdicts.items()}
        usage = sum((u for _, u in results), LLMUsage())
        return [found.get(i, False) for i in range(len(items))], usage

    async def _classify_batch(
        self, pattern: str, batch: Sequence[BehaviorItem]
    ) -> tuple[list[bool], LLMUsage]:
        ids = [f"A{n}" for n in range(1, len(batch) + 1)]
        messages = [
            SystemMessage(CHECK_SYSTEM),
            HumanMessage(
                CHECK_USER.format(
                    pattern=pattern,
                    items="\n\n".join(
                        render_item(i, item) for i, item in zip(ids, batch, strict=True)
                    ),
                    ids=", ".join(ids),
                )
            ),
        ]
        answer, usage = await call_structured(self.model, evidence_verdicts_schema(ids), messages)
        by_id = answers_by_key(answer)
        return [bool(by_id[i]) for i in ids], usage


async def summarize_behavior(
    model: BaseChatModel,
    question: str,
    character: str,
    evidence_actions: Sequence[StoryAction],
) -> tuple[str, LLMUsage]:
    """Describe the pattern from every evidence action, oldest -> newest; later ones favoured.

    The caller passes no evidence -> no call: the answer stays unknown (``""``). A summary
    still invalid after retries raises :class:`~personae.llm.InvalidAnswerError` (the sync
    keeps the previous answer).
    """
    ordered = sorted(evidence_actions, key=lambda a: a.position)
    if not ordered:
        return "", LLMUsage()
    messages = [
        SystemMessage(SUMMARY_SYSTEM.format(character=character)),
        HumanMessage(
            SUMMARY_USER.format(
                question=question,
                evidence="\n".join(a.render() for a in ordered),
                character=character,
            )
        ),
    ]
    summary, usage = await call_structured(model, BehaviorSummary, messages)
    return summary.answer.strip(), usage
