"""A tool call's progress lines as MCP notifications, and the log level each client set.

A profile runs for minutes; a client that sent a ``progressToken`` with its ``tools/call`` gets
one ``notifications/progress`` per progress line (``progress`` counting up, the line as
``message``), and a client that sent ``logging/setLevel`` gets the lines at or above its level
as ``notifications/message`` (a run's notices at ``warning``, the other lines at ``info``).
The runners report lines synchronously (:class:`~personae.progress.Progress`); one task sends
them in order, so reporting never waits on the client, and the call answers after its last line.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, get_args
from weakref import WeakKeyDictionary

import anyio
from mcp.server.fastmcp import Context
from mcp.server.session import ServerSession
from mcp.types import LoggingLevel

from personae.progress import Progress

LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)
"""MCP's log levels, least severe first (RFC 5424's order)."""

_CHOSEN: WeakKeyDictionary[ServerSession, LoggingLevel] = WeakKeyDictionary()
"""The level each connected client set (a client that set none gets no log messages)."""

_log = logging.getLogger(__name__)


def set_log_level(session: ServerSession, level: LoggingLevel) -> None:
    """Remember ``level`` for ``session`` (``logging/setLevel``): it lasts as long as the session."""
    _CHOSEN[session] = level


def logs_at(session: ServerSession, level: LoggingLevel) -> bool:
    """Whether ``session``'s client asked for messages of ``level`` (it set one at or below)."""
    chosen = _CHOSEN.get(session)
    return chosen is not None and LEVELS.index(level) >= LEVELS.index(chosen)


def level_of(line: str) -> LoggingLevel:
    """A run's notice (a failed search, a skipped page) is a warning; any other line is info."""
    return "warning" if line.startswith("notice: ") or ": notice: " in line else "info"


@asynccontextmanager
async def reported(ctx: Context[Any, Any, Any], logger: str) -> AsyncIterator[Progress]:
    """The :class:`~personae.progress.Progress` of the tool call ``ctx`` belongs to.

    Each line becomes a progress notification when the request carries a ``progressToken``,
    and a log message from ``logger`` when the client's level lets it through. A line may come
    from another thread (it is handed to the event loop). Leaving the block sends what is
    queued first, so every line reaches the client before the call's answer.
    """
    request = ctx.request_context
    token = request.meta.progressToken if request.meta else None
    session: ServerSession = request.session
    related = ctx.request_id
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()

    async def send() -> None:
        count = 0
        while (line := await lines.get()) is not None:
            count += 1
            level = level_of(line)
            try:
                if token is not None:
                    await session.send_progress_notification(
                        token, count, message=line, related_request_id=related
                    )
                if logs_at(session, level):
                    await session.send_log_message(
                        level, line, logger=logger, related_request_id=related
                    )
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                _log.info("the client went away; its progress is no longer sent")
                return

    def report(line: str, /) -> None:
        if threading.get_ident() == loop_thread:
            lines.put_nowait(str(line))
        else:
            loop.call_soon_threadsafe(lines.put_nowait, str(line))

    sender = asyncio.create_task(send())
    try:
        yield report
    except Exception:
        lines.put_nowait(None)  # a failed run's lines say how far it got: send them first
        await sender
        raise
    except BaseException:
        sender.cancel()  # cancelled: the client no longer waits for this call
        raise
    lines.put_nowait(None)
    await sender
