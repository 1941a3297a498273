"""One BLAS thread for this project's products, whatever the process's BLAS thread count.

Why: on a busy 2-core machine OpenBLAS's worker threads spin for the small products this
project does many of (a bookmark search is a matrix-vector product; a query embedding is a
forward pass over a few tokens), and a product that takes 23 ms on one thread took 287 ms with
the default threads (issue 9's match-node measurement; a MiniLM query 26 ms vs 230 ms).
Batches too: a MiniLM batch took up to 3x the CPU time with two threads and no less wall time on
the shared machine (issue 19, ``benchmarks/bench_minilm.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from threadpoolctl import ThreadpoolController

_BLAS_LOCK = threading.Lock()
_blas_users = 0
_saved: list[tuple[Any, int]] = []
_libraries: list[Any] | None = None


def _blas_libraries() -> list[Any]:
    """The BLAS libraries loaded in the process (threadpoolctl's controllers), found once.

    Why once: ``ThreadpoolController().limit()`` inspects every loaded library each time, 0.5 ms
    per search (a bookmark search's whole product takes about as long at 20,000 rows); setting
    the thread count on the kept controllers costs microseconds. numpy loads its BLAS when it
    is imported, before any caller here, so the list does not change afterwards.
    """
    global _libraries
    if _libraries is None:
        _libraries = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _libraries


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS limited to one thread while any search runs; the original count restored after.

    Counted, so concurrent searches never restore the limit under each other. The limit is
    process-wide while it holds (the BLAS library's own thread count): another numpy product
    running at that moment (a local embedding's forward pass) also gets one thread, for a few
    milliseconds.
    """
    global _blas_users, _saved
    with _BLAS_LOCK:
        if _blas_users == 0:
            _saved = [(library, library.num_threads) for library in _blas_libraries()]
            for library, _ in _saved:
                library.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _blas_users -= 1
            if _blas_users == 0:
                for library, threads in _saved:
                    library.set_num_threads(threads)
                _saved = []
