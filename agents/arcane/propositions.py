"""ARCANE's proposition coder (App. G, Table 5): four yes/no propositions on a per-phase set.

The paper describes the coder (deepseek/deepseek-v4-pro, T = 0, JSON answer) and its inputs
("axis, scenario, question, reference fields (ref_action, ref_thought), and one model's
per-phase response set") and defines P1-P4, but prints no prompt. The prompt below is ours,
built from App. G's definitions of the four propositions; P3 may be ``na`` "when canon does not
call for silence or proxy". The answer is validated (enums, every proposition present).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

PAPER_CODER_MODEL = "openai:deepseek/deepseek-v4-pro"
"""App. G's coder: "deepseek/deepseek-v4-pro on OpenRouter" (a pro-tier coder, not the judge's
flash tier: each call reads two full per-phase response sets); ``--coder-model`` replaces it."""

PROPOSITIONS = ("p1", "p2", "p3", "p4")
PROPOSITION_NAMES = {
    "p1": "P1 Phase distinctness",
    "p2": "P2 Canonical specificity",
    "p3": "P3 Negative-space fidelity",
    "p4": "P4 Phase register switch",
}

# Our prompt (the paper prints none); the four definitions paraphrase ARCANE App. G.
CODER_SYSTEM = """You code one model's per-phase role-play responses to a character-arc probe against four propositions. Read the axis, the scenario, the question, the reference fields of every phase (ref_action, ref_thought) and the model's response at every phase, then answer each proposition yes or no with a one-sentence reason.

Propositions:
- p1, Phase distinctness: the per-phase content is substantively different across phases (different actions, reasons or stances), not a paraphrase of one answer.
- p2, Canonical specificity: the responses invoke named secondary characters, named places or source-specific scenes, rather than generic trait language.
- p3, Negative-space fidelity: when canon calls for silence, proxy or absence, the responses preserve it (no invented speech or action where the reference has none). Answer "na" when the references do not call for silence, proxy or absence.
- p4, Phase register switch: voice and register shift to match each phase's psychological description, rather than one register throughout.

Return a single JSON object:
{"p1": {"answer": "yes" | "no", "reason": "<one sentence>"},
 "p2": {"answer": "yes" | "no", "reason": "<one sentence>"},
 "p3": {"answer": "yes" | "no" | "na", "reason": "<one sentence>"},
 "p4": {"answer": "yes" | "no", "reason": "<one sentence>"}}"""


class Coded(BaseModel):
    """One proposition's answer."""

    answer: Literal["yes", "no"]
    reason: str


class CodedOptional(BaseModel):
    """P3's answer (``na`` when canon calls for no silence or proxy)."""

    answer: Literal["yes", "no", "na"]
    reason: str


class PropositionCoding(BaseModel):
    """The coder's answer for one (probe, condition)."""

    p1: Coded
    p2: Coded
    p3: CodedOptional
    p4: Coded


def coder_messages(
    *,
    axis_name: str,
    dimension_label: str,
    scenario: str,
    question: str,
    phases: Sequence[tuple[int, str, str, str, str]],
) -> list[BaseMessage]:
    """The coder call over one model's per-phase responses.

    ``phases`` holds (phase_idx, phase_label, ref_action, ref_thought, response).
    """
    lines = [
        f"axis: {axis_name} ({dimension_label})",
        f"scenario: {scenario}",
        f"question: {question}",
    ]
    for idx, label, action, thought, response in phases:
        lines += [
            "",
            f"[PHASE {idx}] {label}",
            f"ref_action: {action}",
            f"ref_thought: {thought}",
            f"model_response: {response.strip() or '[empty response]'}",
        ]
    return [SystemMessage(content=CODER_SYSTEM), HumanMessage(content="\n".join(lines))]
