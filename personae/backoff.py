"""How long to wait before retrying a remote call: ``Retry-After`` first, else exponential backoff.

One rule for the web client (``tools/http.py``) and the LLM client (``personae/llm.py``), so
both honour a server's rate-limit answer the same way.
"""

from __future__ import annotations

import email.utils
import random
import time


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        seconds = None
    if seconds is not None:
        return seconds if seconds >= 0 and seconds == seconds and seconds != float("inf") else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_delay(attempt: int, retry_after: float | None, *, base: float, cap: float) -> float:
    """The wait before retry ``attempt`` (0-based), never more than ``cap``.

    The server's ``retry_after`` when it gave one, else ``base * 2**attempt`` with up to 50 %
    jitter (clients retrying in step would hit a recovering server together).
    """
    if retry_after is not None:
        return min(retry_after, cap)
    delay = base * float(2**attempt)
    return min(delay + random.uniform(0, delay / 2), cap)
