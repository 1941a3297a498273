"""What a run will cost before it starts: LLM calls and tokens, counted as usage is counted.

Every long command (``arcane build-arcs``, ``bookmarks bench``, ``characterhub eval``, ``amadeus eval-personality``)
prints an estimate before its first call, and names the models it will call, so a run against a
paid endpoint is never a surprise. Tokens are counted the way the usage counter counts them
offline (:func:`langchain_core.messages.utils.count_tokens_approximately`: about 4 characters a
token plus a few per message), so an estimate and the usage a run reports compare directly.
Where the prompt is known before the run (a chapter, a page, a questionnaire item) it is
rendered and counted; what the model will answer is a per-call constant each paper's estimate
documents. ``benchmarks/`` prints each estimate beside the usage of a scripted run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately


@dataclass(frozen=True)
class Estimate:
    """Calls and tokens a run is expected to cost, and what they cover."""

    calls: int
    tokens: int
    detail: str
    """What is counted, e.g. ``"60 instances x 1 method, 60 judge calls"``."""

    def __add__(self, other: Estimate) -> Estimate:
        detail = "; ".join(d for d in (self.detail, other.detail) if d)
        return Estimate(self.calls + other.calls, self.tokens + other.tokens, detail)


def message_tokens(messages: Sequence[BaseMessage]) -> int:
    """The prompt tokens of ``messages``, as the usage counter counts them."""
    return int(count_tokens_approximately(list(messages)))


def text_tokens(text: str) -> int:
    """The tokens of ``text`` alone inside a prompt (no per-message overhead)."""
    return max(0, message_tokens([HumanMessage(content=text)]) - message_tokens([HumanMessage("")]))


def estimate_line(estimate: Estimate, models: Mapping[str, str]) -> str:
    """One line for the terminal: ``estimated: N LLM calls, ~T tokens (detail); model ...``."""
    named = ", ".join(f"{role} {spec}" for role, spec in models.items() if spec)
    return (
        f"estimated: {estimate.calls:,} LLM calls, ~{estimate.tokens:,} tokens "
        f"({estimate.detail}); {named}\n"
    )
