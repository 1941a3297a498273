"""The judge role: scores a predicted next action against the storyline's true action.

Two protocols. ``exact`` is the BOOKMARKS paper's key-move exact match (100 if the prediction
makes the same key move as the truth, else 0). ``nli`` is a graded variant (entailment 100,
neutral 50, contradiction 0). A :class:`~personae.evals.judge_cache.JudgeCache` may stand in
front of the model: it is keyed by the exact prompt, so a cached verdict is always the verdict the
judge would give again, and a reworded prompt is simply asked anew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.errors import InputError
from personae.evals.judge_cache import JudgeCache
from personae.llm import LLMUsage

JudgeName = Literal["exact", "nli"]
JUDGES: tuple[JudgeName, ...] = ("exact", "nli")

KEY_MOVE_SYSTEM = """You judge a role-play benchmark (BOOKMARKS, key-move exact match).
A model predicted a character's next action in a story; you compare it with the action the
character really takes next.

Protocol:
- Identify the KEY MOVE of the true action: the one thing the character does or says that
  moves the story (e.g. "refuses the offer", "reveals she is an alien", "asks Kyon to join").
- The prediction MATCHES when it makes the same key move, even in other words, with other
  details, or with extra minor actions. Wording, tone and length do not matter.
- It does NOT match when the key move is missing, different, or reversed, or when the
  prediction only restates the scene without acting.
- Judge only these two actions; do not reward plausibility.
Score: match = 100, no match = 0."""

NLI_SYSTEM = """You judge a role-play benchmark (BOOKMARKS, graded NLI protocol).
A model predicted a character's next action in a story; you compare it with the action the
character really takes next, as a natural-language-inference problem with the TRUE action as
the premise and the PREDICTED action as the hypothesis.

Protocol:
- entail: the true action implies what the prediction says the character does (same move,
  possibly less detailed).
- contradict: the prediction cannot be true if the true action happened (the character does
  something incompatible, the opposite, or someone else acts).
- neutral: neither; the prediction is compatible but about a different or unrelated move.
- Judge only these two actions; do not reward plausibility.
Score: entail = 100, neutral = 50, contradict = 0."""

JUDGE_USER = """Character: {character}

True action:
{truth}

Predicted action:
{prediction}"""


class KeyMoveVerdict(BaseModel):
    """Whether the predicted action makes the true action's key move."""

    key_move: str = Field(description="The key move of the true action, in a few words.")
    match: bool = Field(description="True when the prediction makes that same key move.")


class NLIVerdict(BaseModel):
    """The NLI relation from the true action (premise) to the prediction (hypothesis)."""

    reason: str = Field(description="One short sentence explaining the relation.")
    label: Literal["entail", "neutral", "contradict"] = Field(
        description="entail, neutral or contradict."
    )


NLI_SCORES: dict[str, int] = {"entail": 100, "neutral": 50, "contradict": 0}


@dataclass(frozen=True)
class Verdict:
    """A judged instance: score in points and the label that gave it."""

    score: int
    """100/0 for ``exact``; 100/50/0 for ``nli``."""
    label: str
    """``match``/``no_match`` or ``entail``/``neutral``/``contradict``."""
    reason: str
    """The judge's key move or explanation, kept for error analysis."""


def check_judge(name: str) -> JudgeName:
    """Return ``name`` as a judge name or raise :class:`InputError` listing the judges."""
    for judge in JUDGES:
        if name == judge:
            return judge
    raise InputError(f"unknown judge {name!r}", f"use one of: {', '.join(JUDGES)}")


def _messages(system: str, character: str, prediction: str, truth: str) -> list[BaseMessage]:
    user = JUDGE_USER.format(character=character, truth=truth.strip(), prediction=prediction)
    return [SystemMessage(system), HumanMessage(user)]


async def judge_action(
    model: BaseChatModel,
    judge: str,
    *,
    character: str,
    prediction: str,
    truth: str,
    cache: JudgeCache | None = None,
    model_name: str = "",
) -> tuple[Verdict, LLMUsage]:
    """Judge ``prediction`` against ``truth`` with the ``exact`` or ``nli`` protocol.

    An empty prediction scores 0 without a model call: there is no move to compare. With
    ``cache``, a verdict ``model_name`` already gave for this exact prompt costs no call.
    """
    name = check_judge(judge)
    if not prediction.strip():
        return Verdict(0, "no_match" if name == "exact" else "contradict", "empty"), LLMUsage()
    ask = cache or JudgeCache(None)
    if name == "exact":
        messages = _messages(KEY_MOVE_SYSTEM, character, prediction.strip(), truth)
        key_move, usage = await ask.call_structured(model, model_name, KeyMoveVerdict, messages)
        label = "match" if key_move.match else "no_match"
        return Verdict(100 if key_move.match else 0, label, key_move.key_move), usage
    messages = _messages(NLI_SYSTEM, character, prediction.strip(), truth)
    nli, usage = await ask.call_structured(model, model_name, NLIVerdict, messages)
    return Verdict(NLI_SCORES[nli.label], nli.label, nli.reason), usage
