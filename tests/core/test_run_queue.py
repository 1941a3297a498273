"""The servers' queue: at most N runs at once, the rest in arrival order with their place."""

from __future__ import annotations

import asyncio

import pytest

from personae.errors import InputError
from personae.run_queue import RunQueue, check_max_jobs


async def test_at_most_n_run_and_the_rest_start_in_order() -> None:
    queue = RunQueue(2)
    started: list[str] = []
    most = 0
    gates = {name: asyncio.Event() for name in "abcde"}

    async def run(name: str) -> None:
        nonlocal most
        async with queue.slot(name):
            started.append(name)
            most = max(most, len(queue.running))
            await gates[name].wait()

    tasks = [asyncio.create_task(run(name)) for name in "abcde"]
    await asyncio.sleep(0)
    assert started == ["a", "b"] and queue.waiting == ["c", "d", "e"]
    assert [queue.place(name) for name in "abcde"] == [None, None, 1, 2, 3]
    gates["b"].set()
    await asyncio.sleep(0.01)
    assert started == ["a", "b", "c"] and queue.place("e") == 2
    for gate in gates.values():
        gate.set()
    await asyncio.gather(*tasks)
    assert started == list("abcde") and most == 2 and not queue.running


async def test_a_cancelled_waiter_leaves_the_line_and_frees_nothing_it_never_had() -> None:
    queue = RunQueue(1)
    gate = asyncio.Event()

    async def run(name: str) -> None:
        async with queue.slot(name):
            await gate.wait()

    first = asyncio.create_task(run("a"))
    waiter = asyncio.create_task(run("b"))
    last = asyncio.create_task(run("c"))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.sleep(0)
    assert queue.waiting == ["c"] and queue.running == {"a"}
    gate.set()
    await asyncio.gather(first, last)
    assert not queue.running and not queue.waiting


def test_max_jobs_below_one_is_one_line() -> None:
    with pytest.raises(InputError, match="--max-jobs is 0; it must be at least 1; pass 1 or more"):
        check_max_jobs(0)
