"""The citation checker (fast model): does the passage a fact cites really state it?

Ids alone prove nothing: "Toki is the King of Mars [S1]" cites a real id. Each fact is checked
against the passages it cites. Quote match first: a fact whose own words occur in a cited
passage is kept with no call. Otherwise an entailment call on the fast model reads the fact and
the cited text (a window around the fact's quote when the quote occurs in a passage, the cited
passages otherwise) and says whether the text states it. Unsupported facts are dropped and the
caller counts them. The model answers per claim id the code assigned; a missing or invented id
is rejected and retried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from personae.agents.answer_schemas import answers_by_key, ask_in_batch_or_alone, keyed_answers
from personae.agents.characterhub.evidence_summarizer import CitedFact
from personae.agents.characterhub.knowledge_extractor import normalize_quote, quote_occurs
from personae.llm import LLMUsage, call_structured

ENTAILMENT_SYSTEM = """You check claims about a fictional character against the text they cite.
For each numbered claim say "supported" only when its cited text states the claim or clearly
implies it; say "unsupported" when the text says nothing of it, says something else, or only
mentions the same names. Judge from the cited text alone, never from what you know."""

ENTAILMENT_USER = """{claims}

Answer for every claim number."""

WINDOW = 600
"""Characters kept on each side of a quote found in a passage."""
PASSAGE_CHARS = 3000
"""Characters of each cited passage shown when the quote is not found."""
BATCH = 20
"""Claims per entailment call."""


Verdict = Literal["supported", "unsupported"]


def claim_checks_schema(numbers: Sequence[int]) -> type[BaseModel]:
    """``ClaimChecks`` for these claim numbers: one required verdict per number, no other."""
    return keyed_answers(
        "ClaimChecks",
        "One verdict per claim number.",
        tuple(str(n) for n in numbers),
        Verdict,
        "Claim {key}: supported only if its cited text states or clearly implies it.",
    )


def quote_window(passage: str, quote: str) -> str | None:
    """The part of ``passage`` around ``quote`` (``None`` when the quote does not occur)."""
    if not quote.strip() or not quote_occurs(quote, passage):
        return None
    lowered = passage.casefold()
    start = lowered.find(quote.strip().casefold()[:40])
    if start < 0:
        return passage[: 2 * WINDOW]  # found only after normalising spaces: show the start
    return passage[max(0, start - WINDOW) : start + len(quote) + WINDOW]


def states_verbatim(fact: CitedFact, passages: Mapping[str, str]) -> bool:
    """True when the fact's own words occur in one of its cited passages."""
    text = normalize_quote(fact.text).strip(" .")
    return bool(text) and any(text in normalize_quote(passages.get(i, "")) for i in fact.source_ids)


def cited_text(fact: CitedFact, passages: Mapping[str, str]) -> str:
    """What the entailment call reads for ``fact``: the quote's window, else the passages."""
    for source_id in fact.source_ids:
        window = quote_window(passages.get(source_id, ""), fact.quote)
        if window is not None:
            return f"[{source_id}] …{window}…"
    return "\n".join(
        f"[{i}] {passages.get(i, '')[:PASSAGE_CHARS]}" for i in fact.source_ids if i in passages
    )


def render_claims(facts: Sequence[CitedFact], passages: Mapping[str, str]) -> str:
    """Claims numbered from 1, each followed by the text it cites."""
    return "\n\n".join(
        f"## Claim {n}: {fact.text}\nCited text:\n{cited_text(fact, passages)}"
        for n, fact in enumerate(facts, start=1)
    )


async def _entailment(
    model: BaseChatModel, claims: Sequence[CitedFact], passages: Mapping[str, str]
) -> tuple[dict[int, bool], LLMUsage]:
    """One entailment call: ``{position in claims: supported}``."""
    messages = [
        SystemMessage(ENTAILMENT_SYSTEM),
        HumanMessage(ENTAILMENT_USER.format(claims=render_claims(claims, passages))),
    ]
    schema = claim_checks_schema(range(1, len(claims) + 1))
    answer, usage = await call_structured(model, schema, messages)
    verdicts = answers_by_key(answer)
    return {int(n) - 1: verdict == "supported" for n, verdict in verdicts.items()}, usage


async def check_citations(
    model: BaseChatModel, facts: Sequence[CitedFact], passages: Mapping[str, str]
) -> tuple[list[CitedFact], list[CitedFact], list[CitedFact], LLMUsage]:
    """``(kept, dropped, unchecked, usage)``: what the cited passages state, and what not.

    ``unchecked`` are the facts no valid verdict came for even alone: they stay in ``kept``
    (the method keeps an unchecked claim) and are counted in ``usage.degraded``.
    """
    supported: dict[int, bool] = {}
    pending: list[int] = []
    for index, fact in enumerate(facts):
        if states_verbatim(fact, passages):
            supported[index] = True
        else:
            pending.append(index)
    usage = LLMUsage()
    for start in range(0, len(pending), BATCH):
        batch = pending[start : start + BATCH]

        async def ask(indices: Sequence[int]) -> tuple[dict[int, bool], LLMUsage]:
            verdicts, used = await _entailment(model, [facts[i] for i in indices], passages)
            return {indices[n]: ok for n, ok in verdicts.items()}, used

        verdicts, used = await ask_in_batch_or_alone(batch, ask)
        supported.update(verdicts)
        usage = usage + used
    unchecked = [f for i, f in enumerate(facts) if i not in supported]
    kept = [f for i, f in enumerate(facts) if supported.get(i, True)]
    dropped = [f for i, f in enumerate(facts) if not supported.get(i, True)]
    return kept, dropped, unchecked, usage
