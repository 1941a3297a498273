"""The README's reproduction recipes, run against the loopback model: helpers the tests share.

A recipe test runs the README's commands in-process (``personae.cli.main``) with the real
OpenAI client pointed at :class:`fake_openai.FakeOpenAIChat` on a loopback server, so every
request (model name, sampling, messages) is what a real server would receive and can be
checked: which model each role used, at which temperature, and that the command printed the
paper's settings beside the ones used.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fake_openai import METHODS, ChatResponder, FakeOpenAIChat

from personae.loopback import LoopbackWebServer


@contextmanager
def loopback_llm(
    responders: dict[str, ChatResponder], monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeOpenAIChat]:
    """Serve ``responders`` on a loopback OpenAI-compatible server for this test's commands."""
    fake = FakeOpenAIChat(responders, methods=METHODS)
    with LoopbackWebServer(fake) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("PERSONAE_STRUCTURED_OUTPUT", "json_schema")
        # A connection the loopback server drops under many concurrent calls is retried, as
        # a real server's would be (the suite's default budget is 0).
        monkeypatch.setenv("PERSONAE_LLM_RETRY_SECONDS", "10")
        yield fake


def schema_of(request: dict[str, Any]) -> str:
    """The schema a request asked for (``text`` for a plain answer)."""
    tools = request.get("tools") or []
    if tools:
        return str(tools[0]["function"]["name"])
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return str(response_format["json_schema"]["name"])
    return "text"


def models_by_schema(fake: FakeOpenAIChat) -> dict[str, set[str]]:
    """``{schema: {model names it was asked of}}`` over every request the server answered."""
    found: dict[str, set[str]] = {}
    for request in fake.requests:
        found.setdefault(schema_of(request), set()).add(str(request.get("model")))
    return found


def sampling_by_schema(fake: FakeOpenAIChat, setting: str = "temperature") -> dict[str, set[Any]]:
    """``{schema: {values of setting sent}}`` (``None``: not sent, the server's default)."""
    found: dict[str, set[Any]] = {}
    for request in fake.requests:
        found.setdefault(schema_of(request), set()).add(request.get(setting))
    return found


def text_of(messages: list[dict[str, Any]]) -> str:
    """All message contents of a request, joined."""
    return "\n".join(str(m.get("content") or "") for m in messages)
