"""What the MCP server refuses before any tool or parser runs: oversized and over-deep input.

An MCP client is driven by a model, and a model's tool arguments are untrusted: a 2,000,000
character question went to the LLM whole before these caps. Each text argument has a cap
(shown to clients as the schema's ``maxLength``); a call over it is one line naming the
argument, its length and the cap. On streamable HTTP, a request body over
:data:`MAX_BODY_BYTES` or nested deeper than :data:`MAX_JSON_DEPTH` is refused before the SDK
parses it (a 100,000-deep body made ``json.loads`` raise ``RecursionError``, logged as a
traceback and answered 500). A malformed argument (``chapter: 0``) is one line, not pydantic's
multi-line report.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_TEXT_CHARS = 4_000
"""Longest free-text argument (``question``, ``scenario``): a long chat turn, not a book."""
MAX_NAME_CHARS = 200
"""Longest name argument (``name``, ``character``, ``novel``, ``franchise``, ...)."""
TEXT_ARGUMENTS = frozenset({"question", "scenario"})
MAX_BODY_BYTES = 1_000_000
"""Largest streamable-HTTP request body (every argument at its cap, escaped, fits many times)."""
MAX_JSON_DEPTH = 64
"""Deepest JSON nesting of a request body (a tool call needs about 5)."""


def argument_cap(argument: str) -> int:
    """The most characters a text ``argument`` may hold."""
    return MAX_TEXT_CHARS if argument in TEXT_ARGUMENTS else MAX_NAME_CHARS


def capped_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input ``schema`` with ``maxLength`` on every text argument (clients see caps)."""
    for argument, spec in schema.get("properties", {}).items():
        kinds = [spec, *spec.get("anyOf", [])]
        for kind in kinds:
            if kind.get("type") == "string":
                kind["maxLength"] = argument_cap(argument)
    return schema


def oversized_argument(tool: str, arguments: dict[str, Any]) -> str | None:
    """The one-line complaint about the first argument of ``tool`` over its cap, if any."""
    for argument, value in arguments.items():
        if isinstance(value, str) and len(value) > argument_cap(argument):
            return (
                f"{tool}: the argument {argument!r} is {len(value):,} characters, over the "
                f"{argument_cap(argument):,} this server takes; shorten it"
            )
    return None


def one_line(tool: str, error: ValidationError) -> str:
    """Pydantic's report on ``tool``'s arguments as one line: each argument, what, what came."""
    parts = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        given = repr(problem.get("input"))
        given = given if len(given) <= 40 else given[:37] + "..."
        parts.append(f"{where}: {problem['msg'].lower()} (got {given})")
    return f"{tool}: " + "; ".join(parts) + "; see the tool's input schema"


def json_depth_over(body: bytes, limit: int) -> bool:
    """Whether ``body`` nests arrays/objects deeper than ``limit`` (strings are skipped)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth, in_string, escaped = 0, False, False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


class JsonBodyLimits:
    """ASGI middleware: POST bodies over the size or depth limits get a JSON-RPC parse error.

    The body is read here (at most ``max_bytes``) and replayed to the app, so the SDK reads it
    as it would have.
    """

    def __init__(
        self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES, max_depth: int = MAX_JSON_DEPTH
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read a POST body whole (up to the cap), check its depth, then hand it on."""
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        pending: deque[Message] = deque()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                pending.append(message)
                break
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await _refuse(send, 413, f"the request body is over {self.max_bytes:,} bytes")
                return
            if not message.get("more_body", False):
                break
        if json_depth_over(bytes(body), self.max_depth):
            await _refuse(send, 400, f"the request body nests deeper than {self.max_depth}")
            return
        pending.appendleft({"type": "http.request", "body": bytes(body), "more_body": False})

        async def replay() -> Message:
            return pending.popleft() if pending else await receive()

        await self.app(scope, replay, send)


async def _refuse(send: Send, status: int, problem: str) -> None:
    """A JSON-RPC parse error (code -32700) with ``status``: what a client library shows."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": problem}}
    body = json.dumps(error).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
