"""What every benchmark prints beside its figures: machine load, CPU time, memory.

The development machine is shared (2 cores, other developers' jobs beside ours), so each figure
is printed with the load average at the time and, where load distorts wall time, in CPU time.
Imported by the benchmark scripts (``benchmarks/`` is on ``sys.path`` when one runs).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


def load() -> str:
    """``load 1.23/0.98/0.75`` (1, 5, 15 minutes) for the line printed next."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}/{fifteen:.2f}"


def _status_kib(field: str) -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def rss_mib() -> float:
    """This process's resident memory now (``VmRSS``)."""
    return _status_kib("VmRSS") / 1024


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (``VmHWM``)."""
    return _status_kib("VmHWM") / 1024


def cpu_seconds() -> float:
    """CPU time of this process (user + system, every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Span:
    """Wall and CPU seconds of one measured block (filled when the block ends)."""

    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def timed() -> Iterator[Span]:
    """Measure a block: ``with timed() as span: ...``, then ``span.wall``, ``span.cpu``."""
    span = Span()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield span
    finally:
        span.wall = time.perf_counter() - wall
        span.cpu = time.process_time() - cpu


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def best_cpu(repeats: int, run: Callable[[], object]) -> float:
    """Smallest CPU seconds of ``repeats`` runs (hides a GC pause or a preemption)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)
