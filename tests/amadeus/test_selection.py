"""Guided Selection in waves gives exactly the sequential Algorithm 1 result, fallback included."""

from __future__ import annotations

import asyncio
import random

import pytest

from personae.agents.amadeus.selection import (
    advance_selection,
    fallback_ranks,
    sequential_selection,
)


def _waves(truth: list[bool], n_iter: int, slot_k: int, wave: int) -> tuple[tuple[int, ...], int]:
    judged: dict[int, bool] = {}
    calls = 0
    while True:
        progress = advance_selection(judged, len(truth), n_iter=n_iter, slot_k=slot_k, wave=wave)
        if progress.done:
            return progress.selected, calls
        assert list(progress.pending) == sorted(progress.pending)  # ranks ascending
        for rank in progress.pending:
            judged[rank] = truth[rank]
            calls += 1


def _sequential(truth: list[bool], n_iter: int, slot_k: int) -> tuple[tuple[int, ...], bool, int]:
    async def judge(rank: int) -> bool:
        return truth[rank]

    return asyncio.run(sequential_selection(len(truth), judge, n_iter=n_iter, slot_k=slot_k))


@pytest.mark.parametrize("seed", range(40))
def test_waves_equal_the_sequential_algorithm(seed: int) -> None:
    rng = random.Random(seed)
    truth = [rng.random() < rng.choice([0.0, 0.05, 0.3]) for _ in range(rng.randint(0, 45))]
    n_iter, slot_k = rng.choice([1, 2, 5, 30, 60]), rng.choice([1, 2, 3])
    expected, failed, checks = _sequential(truth, n_iter, slot_k)
    for wave in (1, 3, 30):
        selected, calls = _waves(truth, n_iter, slot_k, wave)
        final = selected or fallback_ranks(len(truth))
        assert final == expected and (not selected) == failed
        assert calls <= min(n_iter, len(truth))  # never more than N checks
        if wave == 1:
            assert calls == checks  # the paper's cost


def test_stops_at_k_and_falls_back_to_top_k_plus_one() -> None:
    truth = [False, True, False, True, True] + [False] * 40
    assert _sequential(truth, 30, 2) == ((1, 3), False, 4)
    assert _waves(truth, 30, 2, 1) == ((1, 3), 4)
    assert _waves(truth, 30, 2, 30) == ((1, 3), 30)  # a full wave spends 30 calls, same slot
    nothing = [False] * 50
    assert _sequential(nothing, 30, 2) == ((0, 1, 2), True, 30)
    assert _waves(nothing, 30, 2, 3) == ((), 30)
    late = [False] * 30 + [True]  # the only relevant chunk lies past N
    assert _sequential(late, 30, 2)[1] is True
    assert _waves([False, True], 30, 2, 30) == ((1,), 2)  # N larger than the collection
