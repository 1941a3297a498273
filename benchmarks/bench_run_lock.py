"""The run lock's cost: what holding a character's key adds to one profile run.

Run: uv run python benchmarks/bench_run_lock.py [--runs 2000] [--handovers 40]

Prints (not asserts): the time to take and release a free lock (what every profile run, batch
row, web job and MCP call pays once), the time a waiting run needs to notice the holder ended
(in this process and from another process: the waiter polls every POLL_SECONDS), and the same
as a share of one profile run's time, 13 model calls at the ``--call-seconds`` given.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from personae.run_lock import POLL_SECONDS, lock_path, run_lock

HOLD = """
import asyncio, sys, time
from pathlib import Path
from personae.run_lock import run_lock

async def main() -> None:
    async with run_lock(Path(sys.argv[1]), "k", what="the holder"):
        print("held", flush=True)
        sys.stdin.readline()
        print(time.perf_counter(), flush=True)

asyncio.run(main())
"""


async def free_lock(folder: Path, runs: int) -> list[float]:
    """Seconds to take and release a free lock, per run."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        async with run_lock(folder, "k", what="a run"):
            pass
        times.append(time.perf_counter() - start)
    return times


async def hold_briefly(folder: Path, entered: asyncio.Event) -> float:
    """Hold ``h`` for 20 ms; the time it let go."""
    async with run_lock(folder, "h", what="the holder"):
        entered.set()
        await asyncio.sleep(0.02)
        return time.perf_counter()


async def handover_here(folder: Path, trials: int) -> list[float]:
    """Seconds from the holder's release to the waiter holding the key (one process)."""
    delays = []
    for _ in range(trials):
        entered = asyncio.Event()
        task = asyncio.create_task(hold_briefly(folder, entered))
        await entered.wait()
        async with run_lock(folder, "h", what="the waiter"):
            got = time.perf_counter()
        delays.append(got - await task)
    return delays


async def handover_across(folder: Path, trials: int) -> list[float]:
    """Seconds from another process's release to this one holding the key."""
    delays = []
    for _ in range(trials):
        child = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        child.stdin.write("\n")
        child.stdin.flush()
        async with run_lock(folder, "k", what="the waiter"):
            got = time.perf_counter()
        released = float(child.stdout.readline())  # perf_counter is system-wide on Linux
        delays.append(got - released)
        child.wait()
    return delays


def line(label: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p95 = ms[int(0.95 * (len(ms) - 1))]
    return f"{label}: median {statistics.median(ms):.3f} ms, p95 {p95:.3f} ms (n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--handovers", type=int, default=40)
    parser.add_argument("--call-seconds", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        free = asyncio.run(free_lock(folder, args.runs))
        here = asyncio.run(handover_here(folder, args.handovers))
        across = asyncio.run(handover_across(folder, args.handovers))
        assert lock_path(folder, "k").exists()
    run_seconds = 13 * args.call_seconds
    print(line("take and release a free lock", free))
    print(line("waiter holds the key after a release, same process", here))
    print(line("waiter holds the key after a release, another process", across))
    print(f"poll interval {POLL_SECONDS * 1000:.0f} ms")
    share = statistics.median(free) / run_seconds
    print(
        f"per profile run (13 calls at {args.call_seconds:g} s = {run_seconds:g} s): "
        f"{statistics.median(free) * 1e6:.0f} µs, {share:.1e} of the run"
    )


if __name__ == "__main__":
    main()
