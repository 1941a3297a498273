"""One BLAS thread for small products, whatever the process's BLAS thread count.

Why: on a busy 2-core machine OpenBLAS's worker threads spin for the small products this
project does many of (a bookmark search is a matrix-vector product; a query embedding is a
forward pass over a few tokens), and a product that takes 23 ms on one thread took 287 ms with
the default threads (issue 9's match-node measurement; a MiniLM query 26 ms vs 230 ms).
Large batches (indexing many texts) keep the default threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from threadpoolctl import ThreadpoolController

_BLAS_LOCK = threading.Lock()
_blas_users = 0
_blas_limit: Any = None
_blas_controller: ThreadpoolController | None = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS limited to one thread while any search runs; the original count restored after.

    Counted, so concurrent searches never restore the limit under each other. The limit is
    process-wide while it holds (threadpoolctl sets the BLAS library's thread count): another
    numpy product running at that moment (a local embedding's forward pass) also gets one
    thread, for a few milliseconds.
    """
    global _blas_users, _blas_limit, _blas_controller
    with _BLAS_LOCK:
        if _blas_users == 0:
            _blas_controller = _blas_controller or ThreadpoolController()
            _blas_limit = _blas_controller.limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limit.restore_original_limits()
                _blas_limit = None
