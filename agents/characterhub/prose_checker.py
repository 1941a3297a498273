"""The prose checker: is each sentence of the first-person profile backed by a kept fact?

The rewriter writes prose and a fact list; the facts are checked against their passages, but
the prose could still say more than they do. Each sentence is checked (fast model) against the
numbered kept facts: ``supported`` (names the facts), ``no_claim`` (a greeting or a feeling that
states nothing checkable) or ``unsupported``. Unsupported sentences are dropped from the profile
and listed in ``profile.json`` so a reader sees what was cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

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

    id: int = Field(description="The sentence number, as given.")
    verdict: Literal["supported", "no_claim", "unsupported"] = Field(
        description="supported by the facts, no checkable claim, or unsupported."
    )
    fact_ids: list[int] = Field(default_factory=list, description="Facts that support it.")


class ProseCheck(BaseModel):
    """One verdict per sentence."""

    sentences: list[SentenceCheck] = Field(description="One verdict per sentence number.")


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


def _require_ids(answer: ProseCheck, count: int) -> None:
    given = sorted(c.id for c in answer.sentences)
    if given != list(range(1, count + 1)):
        raise ValueError(f"answer exactly once for each sentence 1..{count}; you gave {given}")


async def check_prose(
    model: BaseChatModel, profile: str, facts: Sequence[str]
) -> tuple[str, ProseCheckRecord, LLMUsage]:
    """The profile without unsupported sentences, the check's record, and the usage."""
    paragraphs = split_sentences(profile)
    flat = [s for paragraph in paragraphs for s in paragraph]
    if not flat:
        empty = ProseCheckRecord(sentences=0, supported=0, no_claim=0, dropped=[])
        return profile, empty, LLMUsage()
    messages = [
        SystemMessage(PROSE_SYSTEM),
        HumanMessage(
            PROSE_USER.format(
                facts="\n".join(f"{n}. {f}" for n, f in enumerate(facts, start=1)) or "(none)",
                sentences="\n".join(f"{n}. {s}" for n, s in enumerate(flat, start=1)),
            )
        ),
    ]
    answer, usage = await call_structured(
        model, ProseCheck, messages, check=lambda a: _require_ids(a, len(flat))
    )
    verdicts = {c.id: c.verdict for c in answer.sentences}
    kept_paragraphs = []
    number = 0
    for paragraph in paragraphs:
        kept = []
        for sentence in paragraph:
            number += 1
            if verdicts[number] != "unsupported":
                kept.append(sentence)
        if kept:
            kept_paragraphs.append(" ".join(kept))
    dropped = [s for n, s in enumerate(flat, start=1) if verdicts[n] == "unsupported"]
    record = ProseCheckRecord(
        sentences=len(flat),
        supported=sum(v == "supported" for v in verdicts.values()),
        no_claim=sum(v == "no_claim" for v in verdicts.values()),
        dropped=dropped,
    )
    return "\n\n".join(kept_paragraphs), record, usage
