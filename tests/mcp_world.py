"""What the MCP server, the examples and the agent tests run against: files and a loopback LLM.

``serve_world(root)`` lays out the studio world's files (a storyline, Megumin's persona index,
an imported ARCANE novel with arcs) plus one written profile, and serves the LLM (the studio
world's scripted answers through the real OpenAI client) and the fake web on loopback. An agent
(a request offering several tools, as a ReAct agent's model call does) is answered from
``AgentChat.turns``: the tool calls of each turn, then a final answer that quotes every tool
result, so a test sees what the tools gave the agent.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fake_openai import ChatResponder, FakeOpenAIChat, _stream
from langchain_core.messages import convert_to_messages
from profiler_world import fake_web
from studio_world import PERSONA_DIR, STORY, prepare
from studio_world import scripted_model as studio_model

from personae.loopback import LoopbackWebServer, WebRequest, WebResponse
from personae.testing import ScriptedChatModel

PROFILE_KEY = "kenshiro--fist-of-the-north-star"
ToolCall = tuple[str, dict[str, Any]]


def over_http(scripted: ScriptedChatModel) -> dict[str, ChatResponder]:
    """The scripted model's responders, fed the OpenAI request's messages as LangChain ones."""

    def adapt(name: str) -> ChatResponder:
        def respond(messages: list[dict[str, Any]]) -> Any:
            answer = scripted.responders[name](convert_to_messages(messages))
            return answer.model_dump(mode="json") if hasattr(answer, "model_dump") else answer

        return respond

    return {name: adapt(name) for name in scripted.responders}


class AgentChat(FakeOpenAIChat):
    """The studio world's model, plus scripted agent turns (requests offering several tools)."""

    def __init__(self, turns: list[list[ToolCall]] | None = None) -> None:
        super().__init__(over_http(studio_model()))
        self.turns = turns or []
        self.agent_requests: list[dict[str, Any]] = []

    def __call__(self, request: WebRequest) -> WebResponse:
        body = request.json() if request.path.endswith("/chat/completions") else {}
        if len(body.get("tools") or []) > 1:
            return self._agent_turn(body)
        return super().__call__(request)

    def _agent_turn(self, body: dict[str, Any]) -> WebResponse:
        self.agent_requests.append(body)
        messages = body.get("messages", [])
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if turn < len(self.turns):
            message["tool_calls"] = [
                {
                    "id": f"call_{turn}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(self.turns[turn])
            ]
            finish = "tool_calls"
        else:
            results = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
            message["content"] = "Here is what I found:\n" + "\n".join(results)
            finish = "stop"
        usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
        if body.get("stream"):
            stream = _stream(body.get("model", "fake"), message, finish, usage)
            return WebResponse(200, stream, {"Content-Type": "text/event-stream"})
        choice = {"index": 0, "message": message, "finish_reason": finish}
        completion = {"id": "chatcmpl-agent", "object": "chat.completion", "created": 0}
        completion.update(model=body.get("model", "fake"), choices=[choice], usage=usage)
        return WebResponse(200, completion)


@dataclass
class World:
    """The files and the loopback servers an MCP server or an example runs against."""

    root: Path
    llm: AgentChat
    llm_url: str
    web_url: str

    def env(self) -> dict[str, str]:
        """The environment of a process (server, example) in this world: settings only."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("OPENAI", "PERSONAE", "TAVILY", "CHROMA"))
        }
        env.update(self.settings())
        return env

    def settings(self) -> dict[str, str]:
        """The Personae variables of this world (set them in-process with monkeypatch)."""
        return {
            "OPENAI_BASE_URL": f"{self.llm_url}/v1",
            "OPENAI_API_KEY": "test-key",
            "PERSONAE_MODEL": "openai:fake-strong",
            "PERSONAE_LLM_RETRY_SECONDS": "0",
            "TAVILY_API_KEY": "tvly-test",
            "TAVILY_BASE_URL": self.web_url,
            "PERSONAE_CACHE_DIR": str(self.root / "cache"),
            "PERSONAE_DATA_DIR": str(self.root / "data"),
            "ANONYMIZED_TELEMETRY": "False",
            "LANGSMITH_TRACING": "false",
        }

    def server_flags(self) -> list[str]:
        """``personae mcp`` flags serving this world's files."""
        return [
            "--profiles", str(self.root / "profiles"),
            "--personas", str(self.root / PERSONA_DIR),
            "--storyline", str(self.root / STORY),
            "--bookmarks-memory", str(self.root / "bookmarks"),
            "--wiki", self.web_url,
        ]  # fmt: skip


_WRITTEN: list[Path] = []
"""The first profile written in this test session (later worlds copy it)."""


def write_profile(world: World) -> Path:
    """Kenshiro's profile as ``personae profile`` writes it: the real command, in this world.

    Issue 27: a hand-written fixture named the field ``name`` where the command writes
    ``character``, so the resource read ``null`` for every real profile and the test passed.
    """
    from personae.cli import main

    target = world.root / "profiles" / PROFILE_KEY
    if _WRITTEN and _WRITTEN[0].is_dir():  # profiled once per test session, then copied
        shutil.copytree(_WRITTEN[0], target)
        return target
    argv = ["profile", "Kenshiro", "--franchise", "Fist of the North Star"]
    argv += ["--wiki", world.web_url, "--out", str(world.root / "profiles")]
    saved = dict(os.environ)
    os.environ.update(world.settings())
    try:
        assert main(argv) == 0
    finally:
        os.environ.clear()
        os.environ.update(saved)
    _WRITTEN.append(target)
    return target


@contextmanager
def serve_world(root: Path, turns: list[list[ToolCall]] | None = None) -> Iterator[World]:
    """The world's files under ``root`` and its LLM and web on loopback."""
    prepare(root)
    llm = AgentChat(turns)
    web, _, _ = fake_web()
    with ExitStack() as stack:
        llm_server = stack.enter_context(LoopbackWebServer(llm))
        web_server = stack.enter_context(LoopbackWebServer(web.route))
        world = World(root, llm, llm_server.url, web_server.url)
        write_profile(world)
        yield world
