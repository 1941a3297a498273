"""An OpenAI-compatible chat server for loopback tests: the real ``ChatOpenAI`` client runs.

The ``openai`` package sends through ``httpx2``, which respx cannot intercept, so tests that
exercise the real client path (CLI with ``OPENAI_BASE_URL``, ``langgraph dev``) point it at this
route served by :class:`personae.loopback.LoopbackWebServer`. Answers come from responder
functions keyed by the forced tool's name (structured output) or ``"text"``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from personae.loopback import WebRequest, WebResponse

ChatResponder = Callable[[list[dict[str, Any]]], Any]
"""Gets the request's messages; returns tool-call arguments (dict) or text (str)."""


class FakeOpenAIChat:
    """Route for ``POST /v1/chat/completions`` (plain and streamed), plus ``GET /v1/models``."""

    def __init__(self, responders: dict[str, ChatResponder]) -> None:
        self.responders = responders
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: WebRequest) -> WebResponse:
        """Answer one request as an OpenAI-compatible server would."""
        if request.path.endswith("/models"):
            return WebResponse(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        if not request.path.endswith("/chat/completions"):
            return WebResponse(404, {"error": {"message": f"no route {request.path}"}})
        body = request.json()
        self.requests.append(body)
        tools = body.get("tools") or []
        name = tools[0]["function"]["name"] if tools else "text"
        responder = self.responders.get(name)
        if responder is None:
            return WebResponse(
                400, {"error": {"message": f"fake server has no responder for {name}"}}
            )
        answer = responder(body.get("messages", []))
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(answer, str):
            message["content"] = answer
            finish = "stop"
        else:
            call: dict[str, Any] = {"id": f"call_{len(self.requests)}", "type": "function"}
            call["function"] = {"name": name, "arguments": json.dumps(answer)}
            message["tool_calls"] = [call]
            finish = "tool_calls"
        usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
        if body.get("stream"):
            return WebResponse(
                200,
                _stream(body.get("model", "fake"), message, finish, usage),
                {"Content-Type": "text/event-stream"},
            )
        completion = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        return WebResponse(200, completion)


def _stream(model: str, message: dict[str, Any], finish: str, usage: dict[str, int]) -> bytes:
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"] or ""}
    if "tool_calls" in message:
        delta["tool_calls"] = [dict(call, index=0) for call in message["tool_calls"]]
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
    ]
    lines = []
    for chunk in chunks:
        chunk.update(
            {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": model}
        )
        lines.append(f"data: {json.dumps(chunk)}\n\n")
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()
