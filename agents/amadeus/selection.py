"""Guided Selection (AMADEUS Algorithm 1) as a pure function over the verdicts judged so far.

Algorithm 1 walks the candidates in similarity order, asks the judge about each, keeps a chunk
when the answer is True, and stops at K kept chunks or N checks; when nothing was kept, the slot
falls back to the top K + 1 chunks. The graph judges candidates in waves of ``wave`` chunks at
once (``Send`` fan-out) and calls :func:`advance_selection` after each wave: it replays the
sequential algorithm over the ranks judged so far and either finishes (with exactly the slot the
sequential run would give) or names the next wave. A wider wave can only spend extra calls on
chunks past the sequential stopping point; their verdicts never enter the slot.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

N_ITER = 30
"""N: maximum relevance checks per query (the paper's setting)."""
SLOT_K = 2
"""K: slot size (the paper's setting)."""
FALLBACK_K = 3
"""Top-(K+1) chunks used when no check came back True (Algorithm 1's fallback)."""


@dataclass(frozen=True)
class SelectionProgress:
    """Where Algorithm 1 stands given the verdicts known so far."""

    selected: tuple[int, ...]
    """Ranks in the slot S, ascending."""
    examined: int
    """t: checks the sequential algorithm has made up to here."""
    pending: tuple[int, ...]
    """Ranks to judge next (the next wave); empty when the algorithm has finished."""

    @property
    def done(self) -> bool:
        """True when the slot is final (possibly empty: then the fallback applies)."""
        return not self.pending


def advance_selection(
    verdicts: Mapping[int, bool],
    n_candidates: int,
    *,
    n_iter: int = N_ITER,
    slot_k: int = SLOT_K,
    wave: int = 1,
) -> SelectionProgress:
    """Replay Algorithm 1 over ``verdicts`` (rank → relevant) and plan the next wave."""
    limit = min(n_iter, n_candidates)
    selected: list[int] = []
    examined = 0
    for rank in range(limit):
        if len(selected) >= slot_k:
            break
        if rank not in verdicts:
            unjudged = [r for r in range(rank, limit) if r not in verdicts]
            return SelectionProgress(tuple(selected), examined, tuple(unjudged[: max(1, wave)]))
        if verdicts[rank]:
            selected.append(rank)
        examined += 1
    return SelectionProgress(tuple(selected), examined, ())


def fallback_ranks(n_candidates: int, fallback_k: int = FALLBACK_K) -> tuple[int, ...]:
    """Top-(K+1): the ranks used when the slot stayed empty."""
    return tuple(range(min(fallback_k, n_candidates)))


async def sequential_selection(
    n_candidates: int,
    judge: Callable[[int], Awaitable[bool]],
    *,
    n_iter: int = N_ITER,
    slot_k: int = SLOT_K,
    fallback_k: int = FALLBACK_K,
) -> tuple[tuple[int, ...], bool, int]:
    """Algorithm 1 as printed, one check at a time: (slot ranks, fell back, checks made).

    The reference the wave implementation is tested and benchmarked against.
    """
    selected: list[int] = []
    checks = 0
    for rank in range(n_candidates):
        if checks >= n_iter or len(selected) >= slot_k:
            break
        if await judge(rank):
            selected.append(rank)
        checks += 1
    if not selected:
        return fallback_ranks(n_candidates, fallback_k), True, checks
    return tuple(selected), False, checks


def ranks_of(items: Sequence[Mapping[str, object]]) -> dict[int, bool]:
    """``{rank: relevant}`` from verdict records."""
    return {int(str(item["rank"])): bool(item["relevant"]) for item in items}
