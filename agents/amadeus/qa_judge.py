"""The judges of AMADEUS's QA metrics (Table 6): ACC, ACC_L and the Hallucination Score.

The paper defines the three metrics and prints no judge prompt; these are ours, written from
its definitions (section "Metrics"):

- ACC: "whether the character's response contains the correct answer or not" (binary);
- ACC_L: "a score assigned by the LLM, ranging from 1 to 10, that evaluates how well the
  character's response reflects the correct answer";
- HS: "the degree of hallucination in the model's response given a query, the relevant chunks,
  and the ground-truth answer, on a scale from 1 to 10 ... close to 1 when the response
  faithfully reflects only the facts contained in the chunks or answer without distortion or
  addition". The relevant chunks are those the method put in its final context (spec default).

One call per metric (temperature from the judge role; the spec's setting is 0), each with a
short reason kept for audits.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import bounded

PROMPT_VERSION = "amadeus-qa-judges-1"

# AMADEUS Table 6 rubric (ACC, "Metrics"): binary, contains the ground-truth answer.
ACC_SYSTEM = """You grade a role-playing agent's answer to a question about its character.
Decide whether the character's response contains the correct answer given as ground truth.
Wording, first person and role-play style do not matter; the facts of the ground truth must be
there (a response that hedges between a right and a wrong answer, or gives only part of a
multi-part answer, does not contain it)."""

# AMADEUS Table 6 rubric (ACC_L, "Metrics"): 1-10, how well the response reflects the answer.
ACC_L_SYSTEM = """You grade a role-playing agent's answer to a question about its character.
Score from 1 to 10 how well the character's response reflects the correct answer given as
ground truth: 10 = states it fully and accurately; 7 = mostly, with minor omissions;
4 = partly, or vaguely; 1 = not at all, or contradicts it. Role-play style does not matter."""

# AMADEUS Table 6 rubric (HS, "Metrics"): 1-10 hallucination given query, chunks and answer.
HS_SYSTEM = """You measure hallucination in a role-playing agent's response. You get the question,
the persona passages the agent was given, the ground-truth answer (when there is one) and the
response. Score from 1 to 10 the degree of hallucination: 1 = the response faithfully reflects
only facts contained in the passages or the ground truth, without distortion or addition;
5 = it adds or distorts some facts; 10 = it is mostly invented or contradicts them. Opinions and
feelings expressed in character are not facts; judge the factual claims."""

QA_USER = """Question: {question}

Ground truth: {answer}

Character's response: {response}"""

HS_USER = """Question: {question}

Persona passages given to the agent:
{chunks}

Ground truth: {answer}

Response: {response}"""


class AnswerContained(BaseModel):
    """ACC: does the response contain the correct answer?"""

    reason: str = Field(description="One sentence on what the response says about the answer.")
    correct: bool = Field(description="True when the response contains the correct answer.")


class AnswerReflection(BaseModel):
    """ACC_L: how well the response reflects the correct answer, 1-10."""

    reason: str = Field(description="One sentence justifying the score.")
    score: int = bounded(1, 10, "1 = not at all, 10 = fully and accurately.")


class HallucinationScore(BaseModel):
    """HS: degree of hallucination, 1 (faithful) to 10 (invented)."""

    reason: str = Field(description="One sentence naming any added or distorted fact.")
    score: int = bounded(1, 10, "1 = only supported facts, 10 = mostly invented.")


def acc_messages(question: str, answer: str, response: str) -> list[BaseMessage]:
    """The ACC judge prompt."""
    return [
        SystemMessage(ACC_SYSTEM),
        HumanMessage(QA_USER.format(question=question, answer=answer, response=response)),
    ]


def acc_l_messages(question: str, answer: str, response: str) -> list[BaseMessage]:
    """The ACC_L judge prompt."""
    return [
        SystemMessage(ACC_L_SYSTEM),
        HumanMessage(QA_USER.format(question=question, answer=answer, response=response)),
    ]


def hs_messages(
    question: str, chunks: Sequence[str], answer: str | None, response: str
) -> list[BaseMessage]:
    """The HS judge prompt; ``answer=None`` for interview questions, which have none."""
    listed = "\n\n".join(f"[{i}] {chunk}" for i, chunk in enumerate(chunks, start=1))
    return [
        SystemMessage(HS_SYSTEM),
        HumanMessage(
            HS_USER.format(
                question=question,
                chunks=listed or "(none)",
                answer=answer or "(none: judge against the passages only)",
                response=response,
            )
        ),
    ]
