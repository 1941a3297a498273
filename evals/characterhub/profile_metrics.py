"""The profile evaluation's arithmetic, kept pure so hand-computed numbers can pin it down.

CharacterHub judges every knowledge point of a reference page against a profile as supported,
partially supported, irrelevant (the profile is silent) or contradicted. From those verdicts:
Support Score ``(Sup + 0.5·Par) / N``, Irrelevant Rate ``Irr / N`` and Contradiction Rate
``Con / N``, overall and per dimension; a dimension with no point has ``N = 0`` and ``None``
rates (unknown, not zero). Knowledge density is credited points per 1k tokens of a text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, get_args

from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from personae.agents.characterhub.support_judge import Verdict
from personae.memory.characterhub.dimensions import DIMENSIONS

VERDICTS: tuple[str, ...] = get_args(Verdict)
"""The four judge verdicts, in report order."""


@dataclass(frozen=True)
class SupportScores:
    """Verdict counts and the three rates over ``n`` knowledge points."""

    n: int
    supported: int
    partially_supported: int
    irrelevant: int
    contradicted: int

    @property
    def support_score(self) -> float | None:
        """``(Sup + 0.5·Par) / N``; ``None`` when there is no point."""
        return (self.supported + 0.5 * self.partially_supported) / self.n if self.n else None

    @property
    def irrelevant_rate(self) -> float | None:
        """``Irr / N``: knowledge the profile does not mention."""
        return self.irrelevant / self.n if self.n else None

    @property
    def contradiction_rate(self) -> float | None:
        """``Con / N``: knowledge the profile gets wrong."""
        return self.contradicted / self.n if self.n else None

    @property
    def credited_points(self) -> float:
        """``Sup + 0.5·Par``: the knowledge points the profile carries."""
        return self.supported + 0.5 * self.partially_supported

    def as_dict(self) -> dict[str, Any]:
        """Counts plus the rates (``None`` when ``n`` is 0), for JSON reports."""
        return {
            **asdict(self),
            "support_score": self.support_score,
            "irrelevant_rate": self.irrelevant_rate,
            "contradiction_rate": self.contradiction_rate,
        }


def score_verdicts(verdicts: Iterable[str]) -> SupportScores:
    """Count ``verdicts``; an unknown verdict is a programming error, so it raises ``ValueError``."""
    counts = dict.fromkeys(VERDICTS, 0)
    for verdict in verdicts:
        if verdict not in counts:
            raise ValueError(f"unknown verdict {verdict!r}; expected one of {', '.join(VERDICTS)}")
        counts[verdict] += 1
    return SupportScores(
        n=sum(counts.values()),
        supported=counts["supported"],
        partially_supported=counts["partially_supported"],
        irrelevant=counts["irrelevant"],
        contradicted=counts["contradicted"],
    )


def score_by_dimension(
    judged: Iterable[tuple[str, str]],
) -> tuple[SupportScores, dict[str, SupportScores]]:
    """Overall scores and scores for every dimension from ``(dimension, verdict)`` pairs.

    Every dimension of ``DIMENSIONS`` is present in the result (``n = 0`` when it had no point);
    a dimension outside them raises ``ValueError``.
    """
    pairs = list(judged)
    unknown = sorted({d for d, _ in pairs if d not in DIMENSIONS})
    if unknown:
        raise ValueError(f"unknown dimension(s) {', '.join(unknown)}")
    overall = score_verdicts(v for _, v in pairs)
    per_dimension: dict[str, SupportScores] = {
        d: score_verdicts(v for dim, v in pairs if dim == d) for d in DIMENSIONS
    }
    return overall, per_dimension


def count_tokens(text: str) -> int:
    """Approximate tokens of ``text`` (about 4 characters each; no tokenizer download)."""
    if not text.strip():
        return 0
    return count_tokens_approximately(
        [HumanMessage(text)], extra_tokens_per_message=0, count_name=False
    )


def knowledge_density(points: float, tokens: int) -> float | None:
    """Knowledge points per 1,000 tokens; ``None`` for an empty text."""
    return points * 1000 / tokens if tokens > 0 else None
