"""The state syncer role: one chunk of unseen actions -> reset / update / no change of an answer.

Two prompt sets. ``released`` (the paper's method): the released runner's ``llm_check`` asks
whether the chunk resets ("unknown"), updates or leaves the answer ("none"), and only on
"update" does ``llm_update`` write the new answer, keeping the trace of important transitions:
two calls for an update, one otherwise. ``personae`` (ours) is below: one call with the
operation and the answer.

State bookmarks ask about the current situation ("Where is Kyon right now?"), so the answer is
carried forward chunk by chunk. The model decides how the chunk changes it; the code enforces
the decision: ``no_change`` keeps the old answer verbatim (whatever the model wrote), ``reset``
replaces it with an answer built from this chunk alone, ``update`` revises it. The schema asks
for a non-blank answer whatever the operation (for ``no_change`` the model repeats the answer
or says "unchanged", and the code ignores it): "reset and update need an answer" is then
something a schema can state, with no condition on the operation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import non_blank
from personae.llm import LLMUsage, call_structured
from personae.memory.bookmarks.storyline import StoryAction, plain_text

StateOperation = Literal["reset", "update", "no_change"]

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, llm_check (commit 2489d17), verbatim;
# the answer is one of the three words (an enum).
RELEASED_CHECK = """Before the following scene,
Current answer to "{query}": "{answer}"

After the following scene:
{chunk}

Considering this scene, how should we treat the current answer to "{query}"?

Please answer with exactly one of:
- "reset"  -> the current answer is now outdated or contradicted and should be set to "unknown"
- "update" -> the scene triggers state transition or provides more accurate information so the answer should be updated
- "none"   -> the scene does not contain relevant update or information to affect the current answer
"""  # the runner's f-string ends with this newline

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, llm_update (commit 2489d17), verbatim.
RELEASED_UPDATE = """Current maintained answer to "{query}":
"{answer}"

After the following scene:
{chunk}

The answer to "{query}" is detected to be updated.

Please directly output the new maintained answer concisely.
Important:
- Preserve the trace of important transitions instead of only giving the latest state.
- Record how the answer changed when the transition matters for future understanding.
- Keep it compact; do not summarize unrelated events.
- If the previous answer is still relevant, incorporate it as transition history.
- Do not explain your reasoning.

Output only the updated answer."""
UNKNOWN = "unknown"
"""The released runner's empty answer."""


class StateCheck(BaseModel):
    """The released check's one word."""

    decision: Literal["reset", "update", "none"] = Field(description="reset, update, or none.")


def render_chunk(chunk: Sequence[StoryAction]) -> str:
    """A chunk of actions, one per line, as our prompts show them (``[p] (who) text``)."""
    return "\n".join(a.render() for a in chunk) or "(no actions)"


async def update_state_released(
    model: BaseChatModel, *, question: str, answer: str, chunk: Sequence[StoryAction]
) -> tuple[StateStep, LLMUsage]:
    """The paper's state step: the released check, then the released update on "update".

    ``answer`` ``""`` is unknown (shown as "unknown"); "reset" makes it unknown again. A call
    still invalid after retries raises :class:`~personae.llm.InvalidAnswerError` (the sync stops
    before this chunk).
    """
    shown, text = answer or UNKNOWN, plain_text(chunk)
    check = RELEASED_CHECK.format(query=question, answer=shown, chunk=text)
    verdict, usage = await call_structured(model, StateCheck, [HumanMessage(check)])
    if verdict.decision == "none":
        return StateStep("no_change", answer), usage
    if verdict.decision == "reset":
        return StateStep("reset", ""), usage
    request = RELEASED_UPDATE.format(query=question, answer=shown, chunk=text)
    updated, used = await call_structured(model, StateAnswer, [HumanMessage(request)])
    new = updated.answer.strip()
    return StateStep("update", "" if new.casefold() == UNKNOWN else new), usage + used


class StateAnswer(BaseModel):
    """The released update's answer."""

    answer: str = non_blank("The new maintained answer, concise.")


# Ours (--method bookmarks-personae): one call gives the operation and the answer.

STATE_SYNC_SYSTEM = """You keep the answer to a question about the CURRENT situation of a story
up to date while reading it chunk by chunk. For each new chunk choose one operation:
- no_change: the chunk does not affect the answer; it stays exactly as it is.
- update: the chunk adds to or revises the answer; write the whole revised answer.
- reset: the situation changed so much that the old answer no longer holds at all; write a new
  answer from this chunk alone, without carrying over anything from the old one.
Answer only from the actions shown (and the current answer). Keep answers short: one to three
sentences about the situation at the END of the chunk."""

STATE_SYNC_USER = """## Question (asked for {character})
{question}

## Current answer (after the actions before this chunk)
{answer}

## New chunk of the story, in order
{chunk}

Choose the operation and give the answer as it stands after the last action of this chunk."""


class StateUpdate(BaseModel):
    """How this chunk changes the answer."""

    operation: StateOperation = Field(
        description="no_change, update (revise the answer) or reset (old answer no longer holds)."
    )
    answer: str = non_blank(
        'The full answer after this chunk (for no_change: the current answer, or "unchanged").'
    )


@dataclass(frozen=True)
class StateStep:
    """The decision for one chunk, as the code applies it."""

    operation: StateOperation
    answer: str
    """The answer after the chunk (the old one verbatim for ``no_change``)."""


async def update_state_answer(
    model: BaseChatModel,
    *,
    question: str,
    character: str,
    answer: str,
    chunk: Sequence[StoryAction],
) -> tuple[StateStep, LLMUsage]:
    """Apply one chunk of actions to a state answer (one fast-model call).

    ``answer`` is the current answer (``""`` = unknown). ``no_change`` returns ``answer``
    unchanged. An answer still invalid after retries raises
    :class:`~personae.llm.InvalidAnswerError` (the sync stops before this chunk).
    """
    messages = [
        SystemMessage(STATE_SYNC_SYSTEM),
        HumanMessage(
            STATE_SYNC_USER.format(
                character=character,
                question=question,
                answer=answer or "(unknown so far)",
                chunk="\n".join(a.render() for a in chunk) or "(no actions)",
            )
        ),
    ]
    update, usage = await call_structured(model, StateUpdate, messages)
    if update.operation == "no_change":
        return StateStep("no_change", answer), usage
    return StateStep(update.operation, update.answer.strip()), usage
