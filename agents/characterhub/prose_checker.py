"""The prose checker: is each sentence of the first-person profile backed by a kept fact?

The rewriter writes prose and a fact list; the facts are checked against their passages, but
the prose could still say more than they do. Each sentence is checked (fast model) against the
numbered kept facts: ``supported`` (names the facts), ``no_claim`` (a greeting or a feeling that
states nothing checkable) or ``unsupported``. Unsupported sentences are dropped from the profile
and listed in ``profile.json`` so a reader sees what was cut. The sentence numbers are the
schema's required keys and the fact numbers an enum, so an answer cannot skip or invent one;
when the answer is still invalid after retries each sentence is checked alone, and a sentence
with no valid verdict even then is kept, unchecked, and listed (``usage.degraded``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model
from typing_extensions import TypedDict

from personae.agents.answer_schemas import (
    answers_by_key,
    ask_in_batch_or_alone,
    keyed_answers,
    list_of,
    one_of,
    per_call_schema,
)
from personae.llm import LLMUsage, call_structured

PROSE_SYSTEM = """You check a first-person character profile sentence by sentence against a
list of verified facts about the character (written in the third person). For each numbered
sentence answer "supported" when the facts state what it says (list their numbers),
"no_claim" when it states nothing that could be true or false about the character (a greeting,
a rhetorical line), or "unsupported" when it states something the facts do not."""

PROSE_USER = """## Verified facts
{facts}

## Sentences of the profile
{sentences}"""

_SENTENCE = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")


class SentenceCheck(BaseModel):
    """The verdict on one sentence."""

    verdict: Literal["supported", "no_claim", "unsupported"] = Field(
        description="supported by the facts, no checkable claim, or unsupported."
    )
    fact_ids: list[int] = Field(default_factory=list, description="Facts that support it.")


@per_call_schema(maxsize=64)
def _sentence_check(facts: int) -> type[SentenceCheck]:
    """``SentenceCheck`` whose ``fact_ids`` are numbers of the facts shown (none: empty)."""
    ids: Any = list_of(one_of(range(1, facts + 1))) if facts else list[int]
    return create_model(
        "SentenceCheck",
        __base__=SentenceCheck,
        fact_ids=(
            ids,
            Field(default_factory=list, max_length=facts, description="Facts that support it."),
        ),
    )


def prose_check_schema(sentences: Sequence[int], facts: int) -> type[BaseModel]:
    """``ProseCheck`` for these sentence numbers (required keys) and ``facts`` numbered facts."""
    return keyed_answers(
        "ProseCheck",
        "One verdict per sentence number.",
        tuple(str(n) for n in sentences),
        _sentence_check(facts),
        "The verdict on sentence {key}.",
    )


class ProseCheckRecord(TypedDict):
    """What the prose check did, as ``profile.json`` records it."""

    sentences: int
    """Sentences of the profile checked."""
    supported: int
    """Sentences the kept facts state."""
    no_claim: int
    """Sentences stating nothing checkable (a greeting, a feeling); kept."""
    dropped: list[str]
    """The unsupported sentences, dropped from the profile."""
    unchecked: list[str]
    """Sentences no valid verdict came for, even checked alone: kept as they are."""


def split_sentences(profile: str) -> list[list[str]]:
    """The profile's paragraphs, each a list of sentences (closing quotes stay attached)."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", profile) if p.strip()]
    result = []
    for paragraph in paragraphs:
        spans: list[str] = []
        start = 0
        for match in _SENTENCE.finditer(paragraph):
            spans.append(paragraph[start : match.start()] + match.group(0).strip())
            start = match.end()
        spans.append(paragraph[start:])
        result.append([s.strip() for s in spans if s.strip()])
    return result


def _prose_messages(
    facts: Sequence[str], sentences: Sequence[tuple[int, str]]
) -> list[SystemMessage | HumanMessage]:
    return [
        SystemMessage(PROSE_SYSTEM),
        HumanMessage(
            PROSE_USER.format(
                facts="\n".join(f"{n}. {f}" for n, f in enumerate(facts, start=1)) or "(none)",
                sentences="\n".join(f"{n}. {s}" for n, s in sentences),
            )
        ),
    ]


async def _verdicts(
    model: BaseChatModel, flat: Sequence[str], facts: Sequence[str]
) -> tuple[dict[int, str], LLMUsage]:
    """``{sentence number: verdict}``; sentences still unanswered alone are left out."""

    async def ask(numbers: Sequence[int]) -> tuple[dict[int, str], LLMUsage]:
        messages = _prose_messages(facts, [(n, flat[n - 1]) for n in numbers])
        schema = prose_check_schema(numbers, len(facts))
        answer, usage = await call_structured(model, schema, messages)
        checks = answers_by_key(answer)
        return {int(n): check.verdict for n, check in checks.items()}, usage

    return await ask_in_batch_or_alone(list(range(1, len(flat) + 1)), ask)


async def check_prose(
    model: BaseChatModel, profile: str, facts: Sequence[str]
) -> tuple[str, ProseCheckRecord, LLMUsage]:
    """The profile without unsupported sentences, the check's record, and the usage."""
    paragraphs = split_sentences(profile)
    flat = [s for paragraph in paragraphs for s in paragraph]
    if not flat:
        empty = ProseCheckRecord(sentences=0, supported=0, no_claim=0, dropped=[], unchecked=[])
        return profile, empty, LLMUsage()
    verdicts, usage = await _verdicts(model, flat, facts)
    kept_paragraphs = []
    number = 0
    for paragraph in paragraphs:
        kept = []
        for sentence in paragraph:
            number += 1
            if verdicts.get(number) != "unsupported":
                kept.append(sentence)
        if kept:
            kept_paragraphs.append(" ".join(kept))
    record = ProseCheckRecord(
        sentences=len(flat),
        supported=sum(v == "supported" for v in verdicts.values()),
        no_claim=sum(v == "no_claim" for v in verdicts.values()),
        dropped=[s for n, s in enumerate(flat, start=1) if verdicts.get(n) == "unsupported"],
        unchecked=[s for n, s in enumerate(flat, start=1) if n not in verdicts],
    )
    return "\n\n".join(kept_paragraphs), record, usage
