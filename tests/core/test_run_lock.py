"""The run lock in one process: a second holder waits, a refused one names the first."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from personae.errors import RunLockedError
from personae.run_lock import lock_path, read_holder, run_lock


async def test_a_second_acquisition_waits_for_the_first_and_says_for_whom(tmp_path: Path) -> None:
    order: list[str] = []
    lines: list[str] = []
    release = asyncio.Event()

    async def first() -> None:
        async with run_lock(tmp_path, "k", what="the run of k") as held:
            order.append("first in")
            assert not held.waited
            holder = read_holder(lock_path(tmp_path, "k"))
            assert holder is not None and holder.pid == os.getpid()
            await release.wait()
            order.append("first out")

    async def second() -> None:
        async with run_lock(tmp_path, "k", what="the run of k", progress=lines.append) as held:
            order.append("second in")
            assert held.waited and held.waited_for is not None
            assert held.waited_for.pid == os.getpid()

    one = asyncio.create_task(first())
    await asyncio.sleep(0)
    two = asyncio.create_task(second())
    await asyncio.sleep(0.1)
    assert order == ["first in"] and len(lines) == 1
    assert lines[0].startswith(f"waiting: the run of k is running in pid {os.getpid()} since ")
    release.set()
    await asyncio.gather(one, two)
    assert order == ["first in", "first out", "second in"]
    assert read_holder(lock_path(tmp_path, "k")) is None  # released: no holder left behind


async def test_no_wait_raises_naming_the_holder_and_other_keys_are_free(tmp_path: Path) -> None:
    async with run_lock(tmp_path, "k", what="the run of k"):
        async with run_lock(tmp_path, "other", what="the run of other") as other:
            assert not other.waited
        with pytest.raises(RunLockedError) as refused:
            async with run_lock(tmp_path, "k", what="the run of k", wait=False):
                pass
    message = str(refused.value)
    assert message.startswith(f"the run of k is running in pid {os.getpid()} since ")
    assert message.endswith("; wait for it to end, or leave out --no-wait to wait for it")
    assert refused.value.exit_code == 3
