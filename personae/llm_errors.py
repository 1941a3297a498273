"""What a failed LLM call means, told by the openai/httpx exception types (never by names).

:mod:`personae.llm` retries what can pass (rate limits, server errors, timeouts, a connection
dropped mid-answer) and fails at once on what cannot: a server nobody listens at (connection
refused, unknown host) is a wrong ``OPENAI_BASE_URL``, not a busy server, and waiting out a
two-minute retry budget only hides that; a 400/401/404 is the request's fault.
"""

from __future__ import annotations

import socket
from typing import Literal

import httpx
import openai

from personae.backoff import parse_retry_after
from personae.errors import RemoteError

FailureKind = Literal["unreachable", "timeout", "connection", "rate_limit", "server", "client"]
"""``unreachable``: no connection could be made; ``connection``: one was made, then dropped;
``server``: HTTP 5xx, 408, 409; ``client``: any other HTTP 4xx."""
RETRYABLE: frozenset[FailureKind] = frozenset({"timeout", "connection", "rate_limit", "server"})
"""The kinds worth waiting for: they pass when the server recovers."""

SETTINGS_FIX = "check OPENAI_BASE_URL / OPENAI_API_KEY and that the server is running"
OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
"""Where the OpenAI client sends requests when no ``OPENAI_BASE_URL`` is set."""


def _connect_errors() -> tuple[type[BaseException], ...]:
    """Errors meaning "no connection was made", from every HTTP stack the clients use."""
    found: list[type[BaseException]] = [httpx.ConnectError, ConnectionRefusedError, socket.gaierror]
    try:  # the openai package's own httpx fork
        import httpx2

        found.append(httpx2.ConnectError)
    except ImportError:  # pragma: no cover - openai always brings it
        pass
    return tuple(found)


def _timeouts() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = [httpx.TimeoutException, TimeoutError]
    try:
        import httpx2

        found.append(httpx2.TimeoutException)
    except ImportError:  # pragma: no cover
        pass
    return tuple(found)


def _transport_errors() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = [httpx.TransportError, ConnectionError]
    try:
        import httpx2

        found.append(httpx2.TransportError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(found)


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and the chain of errors it was raised from (bounded: chains can loop)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 16 and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def status_of(error: BaseException) -> int | None:
    """The HTTP status a server answered with, when the error carries one."""
    if isinstance(error, openai.APIStatusError):
        return int(error.status_code)
    if isinstance(error, httpx.HTTPStatusError):
        return int(error.response.status_code)
    return None


def _kind_of_status(status: int) -> FailureKind:
    if status == 429:
        return "rate_limit"
    if status in (408, 409) or status >= 500:
        return "server"
    return "client"


def failure_kind(error: BaseException) -> FailureKind | None:
    """How ``error`` failed, or ``None`` when it is no transport failure (a bug, a bad answer)."""
    status = status_of(error)
    if status is not None:
        return _kind_of_status(status)
    if isinstance(error, openai.APITimeoutError):
        return "timeout"
    if isinstance(error, openai.APIConnectionError) or isinstance(error, _transport_errors()):
        chain = _causes(error)
        if any(isinstance(e, _timeouts()) for e in chain):
            return "timeout"
        if any(isinstance(e, _connect_errors()) for e in chain):
            return "unreachable"
        return "connection"
    if isinstance(error, _timeouts()):
        return "timeout"
    return None


def retry_after(error: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` or ``Retry-After``), if it did."""
    response = getattr(error, "response", None)
    headers = response.headers if isinstance(response, httpx.Response) else None
    if headers is None:
        headers = getattr(response, "headers", None)
    if headers is None:
        return None
    milliseconds = parse_retry_after(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    return parse_retry_after(headers.get("retry-after"))


def is_context_overflow(error: BaseException) -> bool:
    """True when the server said the prompt does not fit its context window."""
    from langchain_core.exceptions import ContextOverflowError

    if isinstance(error, ContextOverflowError):
        return True
    text = str(error).lower()
    return status_of(error) == 400 and (
        "context window" in text or "context length" in text or "exceed context" in text
    )


def remote_error(error: BaseException, base: str, fix: str = SETTINGS_FIX) -> RemoteError:
    """The one-line error for a failed call to the LLM server at ``base``."""
    kind = failure_kind(error)
    if kind == "unreachable":
        return RemoteError(f"cannot reach the LLM server at {base} (nothing answers there)", fix)
    if kind in ("connection", "timeout"):
        what = "timed out" if kind == "timeout" else "dropped the connection"
        return RemoteError(f"the LLM server at {base} {what}", fix)
    if kind == "rate_limit":
        return RemoteError(f"the LLM server at {base} is rate-limiting (HTTP 429)", fix)
    if is_context_overflow(error):
        return RemoteError(
            f"the prompt does not fit the context window of the LLM at {base}",
            "set PERSONAE_CONTEXT_WINDOW to the server's window (prompts are then cut to fit)",
        )
    status = status_of(error)
    if status == 404 and base.startswith("http") and not base.rstrip("/").endswith("/v1"):
        return RemoteError(
            f"the LLM server at {base} answered HTTP 404 (no such path)",
            "does OPENAI_BASE_URL end in /v1? OpenAI-compatible servers answer under it, "
            "e.g. http://localhost:8000/v1",
        )
    label = type(error).__name__ + (f" (HTTP {status})" if status is not None else "")
    text = str(error).splitlines()[0] if str(error) else label
    return RemoteError(f"the LLM at {base} failed: {label}: {text[:200]}", fix)
