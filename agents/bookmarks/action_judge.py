"""The judge role: scores a predicted next action against the storyline's true action.

Two protocols, both as the released BOOKMARKS code (``evaluate.py`` of
``BOOKMARKS_Koishiday_2026``) asks them: the judge sees the scene (the same 10 actions the actor
saw), the prediction ("Your Response") and the truth ("Ground Truth"), and grades A/B/C.
``exact`` is the paper's key-move exact match (A = 100; a partial/adjacent move or a mismatch
= 0). ``nli`` is the protocol the paper cites (Peng et al. 2026, codified decision trees):
A entails (same character logic) = 100, B neutral (a different facet) = 50, C contradicts = 0.
Both prompts are the runner's text verbatim, for every storyline (a conversational Bandori one
too, whose actions are utterances ``Name: line``); the answer's schema (reasoning, score) is the
JSON block the prompt shows. A :class:`~personae.answer_store.AnswerStore` may stand in front of the
model: it is keyed by the exact prompt, so a cached verdict is always the verdict the judge
would give again, and a reworded prompt is simply asked anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BaseModel, Field

from personae.answer_store import AnswerStore
from personae.errors import InputError
from personae.llm import LLMUsage, call_structured
from personae.memory.bookmarks.storyline import ActingFormat, StoryAction

JudgeName = Literal["exact", "nli"]
JUDGES: tuple[JudgeName, ...] = ("exact", "nli")

# Rubric of the BOOKMARKS paper's Table 2 ("Key Move Exact Match Rate"): the released runner's
# src/bookmarks/evaluate.py, score_action_em, verbatim (its JSON output block included): A = exact
# match (100), B = partial/adjacent, C = mismatch (both 0). The same text for every storyline:
# the runner adds no note for conversational (Bandori) ones.
KEY_MOVE_PROMPT = """# Scene
{scene}

Your Response: {prediction}
Ground Truth: {truth}

Decide whether the main action taken by {character} in "Your Response" matches the main action in "Ground Truth".
Focus on the primary verb-level action (what {character} does), and ignore minor differences in wording, intensity, tone, or small extra details (e.g., sub-actions) that do not change the core action.
If multiple actions appear, judge using the most central action in each text.

A: Exact match — the main action in the response is the same as the main action in the ground truth (allowing paraphrase).
B: Partial/adjacent match — the response is close but not the same main action, and the differences are not minor.
C: Mismatch — the main action is different or incompatible.

Output in json:
```json
{{
  "reasoning": "...",
  "score": "A/B/C"
}}
```"""

# Rubric of the NLI protocol the BOOKMARKS paper cites (Peng et al., 2026: "Deriving character
# logic from storyline as codified decision trees", Table 2's NLI rows): the released runner's
# src/bookmarks/evaluate.py, score_action_nli, verbatim (its lines unwrapped, the trailing
# space after "Output in json:" kept): A entails (same character logic) 100,
# B neutral (different facet) 50, C contradicts 0.
NLI_PROMPT = """# Scene
{scene}

Your Response: {prediction}
Ground Truth: {truth}

Score the action of {character} in the response based on the ground truth.
A: The ground truth entails the action of {character} in the response. (Following the same character logic.)
B: The ground truth is neutral to the action of {character} in the response. (Reflecting a different facet.)
C: The ground truth contradicts the action of {character} in the response. (Following a contradicted character logic.)

Output in json: 
```json
{{
"reasoning": "...",
"score": "A/B/C"
}}
```"""


Grade = Literal["A", "B", "C"]


class KeyMoveVerdict(BaseModel):
    """The key-move grade of the response against the ground truth."""

    reasoning: str = Field(description="reasoning")
    score: Grade = Field(description="A/B/C")


class NLIVerdict(BaseModel):
    """The NLI grade of the response against the ground truth."""

    reasoning: str = Field(description="reasoning")
    score: Grade = Field(description="A/B/C")


EXACT_GRADES: dict[str, tuple[int, str]] = {
    "A": (100, "match"),
    "B": (0, "partial"),
    "C": (0, "no_match"),
}
NLI_GRADES: dict[str, tuple[int, str]] = {
    "A": (100, "entail"),
    "B": (50, "neutral"),
    "C": (0, "contradict"),
}
NLI_SCORES: dict[str, int] = {label: score for score, label in NLI_GRADES.values()}


@dataclass(frozen=True)
class Verdict:
    """A judged instance: score in points and the label that gave it."""

    score: int
    """100/0 for ``exact``; 100/50/0 for ``nli``."""
    label: str
    """``match``/``partial``/``no_match`` or ``entail``/``neutral``/``contradict``."""
    reason: str
    """The judge's reasoning, kept for error analysis."""


def check_judge(name: str) -> JudgeName:
    """Return ``name`` as a judge name or raise :class:`InputError` listing the judges."""
    for judge in JUDGES:
        if name == judge:
            return judge
    raise InputError(f"unknown judge {name!r}", f"use one of: {', '.join(JUDGES)}")


def judge_messages(
    judge: JudgeName,
    *,
    character: str,
    prediction: str,
    truth: str,
    scene: Sequence[StoryAction] = (),
    acting_format: ActingFormat = "action",
) -> list[BaseMessage]:
    """The released judge's prompt: the scene as plain lines, then both; nothing else.

    ``acting_format`` changes nothing: the runner judges utterances (Bandori) with the same
    text as actions.
    """
    template = KEY_MOVE_PROMPT if judge == "exact" else NLI_PROMPT
    text = template.format(
        scene="\n".join(action.text for action in scene),
        prediction=prediction.strip(),
        truth=truth.strip(),
        character=character,
    )
    return [HumanMessage(text)]


async def judge_action(
    model: BaseChatModel,
    judge: str,
    *,
    character: str,
    prediction: str,
    truth: str,
    scene: Sequence[StoryAction] = (),
    acting_format: ActingFormat = "action",
    cache: AnswerStore | None = None,
    model_name: str = "",
) -> tuple[Verdict, LLMUsage]:
    """Judge ``prediction`` against ``truth`` in ``scene`` with the ``exact`` or ``nli`` protocol.

    An empty prediction scores 0 without a model call: there is no move to compare. With
    ``cache``, a verdict ``model_name`` already gave for this exact prompt costs no call.
    """
    name = check_judge(judge)
    if not prediction.strip():
        return Verdict(0, "no_match" if name == "exact" else "contradict", "empty"), LLMUsage()
    messages = judge_messages(
        name,
        character=character,
        prediction=prediction,
        truth=truth,
        scene=scene,
        acting_format=acting_format,
    )
    schema: type[KeyMoveVerdict | NLIVerdict] = KeyMoveVerdict if name == "exact" else NLIVerdict
    grades = EXACT_GRADES if name == "exact" else NLI_GRADES
    answer, usage = await call_structured(
        model, schema, messages, store=cache, model_name=model_name
    )
    score, label = grades[answer.score]
    return Verdict(score, label, answer.reasoning), usage
