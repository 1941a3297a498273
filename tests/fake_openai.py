"""An OpenAI-compatible chat server for loopback tests: the real ``ChatOpenAI`` client runs.

The ``openai`` package sends through ``httpx2``, which respx cannot intercept, so tests that
exercise the real client path (CLI with ``OPENAI_BASE_URL``, ``langgraph dev``) point it at this
route served by :class:`personae.loopback.LoopbackWebServer`. Answers come from responder
functions keyed by the schema's name (a forced tool, a ``json_schema`` response format, or the
title of the schema a JSON-mode prompt carries) or ``"text"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from personae.loopback import WebRequest, WebResponse

ChatResponder = Callable[[list[dict[str, Any]]], Any]
"""Gets the request's messages; returns tool-call arguments (dict) or text (str)."""


METHODS = ("json_schema", "function_calling", "json_mode")


class FakeOpenAIChat:
    """Route for ``POST /v1/chat/completions`` (plain and streamed), plus ``GET /v1/models``.

    ``methods`` are the structured-output methods it takes; by default only tool calls, as
    llama-cpp-python's server: a ``response_format`` of another kind is refused as that server
    refuses it (HTTP 500), and refused requests are not recorded in ``requests``. ``models``
    lists the models it serves (default: any name, listed as ``fake``); ``n_ctx`` is the context
    window its ``/v1/models`` states, as llama.cpp's server does (``None``: states none).
    """

    def __init__(
        self,
        responders: dict[str, ChatResponder],
        *,
        methods: tuple[str, ...] = ("function_calling",),
        models: tuple[str, ...] | None = None,
        n_ctx: int | None = None,
    ) -> None:
        self.responders = responders
        self.methods = methods
        self.models = models
        self.n_ctx = n_ctx
        self.requests: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []

    def __call__(self, request: WebRequest) -> WebResponse:
        """Answer one request as an OpenAI-compatible server would."""
        if request.path.endswith("/models"):
            return WebResponse(200, self._model_list())
        if not request.path.endswith("/chat/completions"):
            return WebResponse(404, {"error": {"message": f"no route {request.path}"}})
        body = request.json()
        if self.models is not None and body.get("model") not in self.models:
            missing = f"The model `{body.get('model')}` does not exist"
            return WebResponse(404, {"error": {"message": missing, "code": "model_not_found"}})
        method, name = _method_and_name(body)
        if method not in self.methods and method != "text":
            self.refused.append(body)
            detail = "Input should be 'text' or 'json_object'"
            return WebResponse(500, {"error": {"message": f"response_format: {detail}"}})
        self.requests.append(body)
        responder = self.responders.get(name)
        if responder is None:
            return WebResponse(
                400, {"error": {"message": f"fake server has no responder for {name}"}}
            )
        answer = responder(body.get("messages", []))
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(answer, str) or method in ("json_schema", "json_mode"):
            message["content"] = answer if isinstance(answer, str) else json.dumps(answer)
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

    def _model_list(self) -> dict[str, Any]:
        entries = []
        for name in self.models or ("fake",):
            entry: dict[str, Any] = {"id": name, "object": "model", "owned_by": "fake"}
            if self.n_ctx is not None:
                entry["meta"] = {"n_ctx_train": self.n_ctx}
            entries.append(entry)
        return {"object": "list", "data": entries}


def _method_and_name(body: dict[str, Any]) -> tuple[str, str]:
    """The structured-output method a request uses and the schema's name (``text``: none).

    JSON mode names no schema: its name is read from the instruction Personae puts in the
    system message ("... matches this JSON schema (Name)").
    """
    tools = body.get("tools") or []
    if tools:
        return "function_calling", str(tools[0]["function"]["name"])
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return "json_schema", str(response_format["json_schema"]["name"])
    if response_format.get("type") == "json_object":
        system = next(
            (m.get("content", "") for m in body.get("messages", []) if m.get("role") == "system"),
            "",
        )
        found = re.search(r"matches this JSON schema \((\w+)\)", str(system))
        return "json_mode", found.group(1) if found else "json"
    return "text", "text"


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
