"""OpenAI's streamed answer: ``chat.completion.chunk`` events, then ``data: [DONE]``.

The order clients expect: a chunk with the role, chunks with content, a chunk with
``finish_reason`` ``stop``; with ``stream_options.include_usage``, every chunk carries
``usage: null`` and a last chunk has no choices and the turn's usage. A failure after the
stream began is an ``error`` event (the ``openai`` SDK raises it as an ``APIError``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DONE = b"data: [DONE]\n\n"
"""The stream's last event."""


def event(payload: dict[str, Any]) -> bytes:
    """One server-sent event carrying ``payload``."""
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


@dataclass(frozen=True)
class ChunkFrame:
    """What every chunk of one answer shares."""

    id: str
    """``chatcmpl-...``: the same for every chunk of the answer."""
    model: str
    """The model id the request named."""
    created: int
    """Unix time the answer began."""
    include_usage: bool
    """Whether chunks carry ``usage`` (null until the last)."""

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        """A chunk with one choice."""
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return event(self._body([choice]))

    def usage_chunk(self, usage: dict[str, int]) -> bytes:
        """The last chunk when usage was asked for: no choices, the turn's usage."""
        return event({**self._body([]), "usage": usage})

    def _body(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if self.include_usage:
            body["usage"] = None
        return body
