"""An agent holding Personae's tools can profile a character, then ask it, in one conversation.

Issue 35: with ``create_profile_tool`` and ``create_ask_character_tool`` in one LangGraph agent
the profile was written but no tool made it a persona, and the ask tool's error told the agent
to run a CLI command. Here a LangChain ``create_agent`` agent, its model a script that only
does what the tools' answers tell it (the tool to call next, by name), reaches the character's
answer: straight (profile, then ask) and led by an error (ask, told to profile, profile, ask).
The runners' own model calls go to a scripted model, the web and wiki to the loopback fake.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from profiler_world import profiler_context, serve_fake_web
from studio_world import ANSWER
from studio_world import scripted_model as runner_model

from personae import AmadeusContext, create_ask_character_tool, create_profile_tool
from personae.loopback import LoopbackWebServer
from personae.memory.amadeus.persona_store import indexed_personas, open_client
from personae.testing import override_models

CHARACTER = "Kenshiro"
FRANCHISE = "Fist of the North Star"
QUESTION = "What do you love?"
ROOT = Path(__file__).resolve().parents[1]
NEXT_TOOL = re.compile(r"call (\w+)(?: with character='([^']+)')?")


class FollowTheTools(BaseChatModel):
    """The agent's model: makes ``first`` call, then whatever call the last tool answer names.

    It knows the character and the question, nothing else: which tool comes next it reads
    from the tool's answer (``call ask_character with character='Kenshiro'``) or error
    (``call profile_character ...``). Each turn's offered tools are recorded.
    """

    first: str
    offered: list[set[str]] = []

    @property
    def _llm_type(self) -> str:
        return "follow-the-tools"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.offered.append({tool["function"]["name"] for tool in kwargs.get("tools", [])})
        last = messages[-1]
        if not isinstance(last, ToolMessage):
            return self._call(self.first, CHARACTER, len(messages))
        if last.name == "ask_character" and last.status == "success":
            return _result(AIMessage(content=f"{CHARACTER} says: {last.content}"))
        found = NEXT_TOOL.findall(str(last.content))
        if not found:
            return _result(AIMessage(content=f"stuck: {last.content}"))
        tool, character = found[0]
        return self._call(tool, character or CHARACTER, len(messages))

    def _call(self, tool: str, character: str, turn: int) -> ChatResult:
        args = (
            {"name": character, "franchise": FRANCHISE}
            if tool == "profile_character"
            else {"character": character, "question": QUESTION}
        )
        call = {"name": tool, "args": args, "id": f"call-{turn}"}
        return _result(AIMessage(content="", tool_calls=[call]))


def _result(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    override_models(specs={"openai:agent-world": runner_model()})
    with serve_fake_web(monkeypatch) as running:
        yield running


def tool_set(server: LoopbackWebServer, personas: Path) -> list[BaseTool]:
    """The pair an app hands its agent: the profile tool indexes where the ask tool reads."""
    amadeus = AmadeusContext(
        model="openai:agent-world", memory_dir=str(personas), embedding="hashing"
    )
    return [
        create_profile_tool(
            profiler_context(server, "agent-world"), wiki=server.url, index=amadeus
        ),
        create_ask_character_tool(amadeus),
    ]


async def converse(tools: list[BaseTool], first: str) -> list[BaseMessage]:
    model = FollowTheTools(first=first)
    agent = create_agent(model, tools)
    state = await agent.ainvoke({"messages": [{"role": "user", "content": "Ask Kenshiro."}]})
    assert all(offered == {"profile_character", "ask_character"} for offered in model.offered)
    return list(state["messages"])


def calls(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.name or "", m.status) for m in messages if isinstance(m, ToolMessage)]


async def test_an_agent_profiles_then_asks_and_gets_the_answer(
    server: LoopbackWebServer, tmp_path: Path
) -> None:
    personas = tmp_path / "personas"
    messages = await converse(tool_set(server, personas), first="profile_character")
    assert calls(messages) == [("profile_character", "success"), ("ask_character", "success")]
    profiled = str(messages[2].content)
    assert profiled.startswith("I am Kenshiro") and f"<{server.url}/wiki/Kenshiro>" in profiled
    assert profiled.endswith(
        "Indexed as the persona 'Kenshiro': call ask_character with character='Kenshiro' "
        "to talk to them."
    )
    assert messages[-1].content == f"Kenshiro says: {ANSWER}"
    [manifest] = indexed_personas(open_client(str(personas)))  # on disk, where asked
    assert (manifest["character"], manifest["source_kind"]) == ("Kenshiro", "profile")


async def test_an_agent_that_asks_first_is_told_to_profile_and_still_gets_the_answer(
    server: LoopbackWebServer, tmp_path: Path
) -> None:
    messages = await converse(tool_set(server, tmp_path / "personas"), first="ask_character")
    assert calls(messages) == [
        ("ask_character", "error"),
        ("profile_character", "success"),
        ("ask_character", "success"),
    ]
    assert messages[2].content == (
        "unknown character 'Kenshiro' (nothing is indexed there yet); call profile_character "
        "with the character's name to research and index them, then call ask_character again"
    )
    assert messages[-1].content == f"Kenshiro says: {ANSWER}"


async def test_the_deploy_page_agent_profiles_then_asks(
    server: LoopbackWebServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Deploy page's block, run as written: its contexts come from the settings."""
    page = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    marker = (
        "<!-- run: tests/test_agent_tools.py::test_the_deploy_page_agent_profiles_then_asks -->"
    )
    code = page.split(marker + "\n```python\n", 1)[1].split("\n```", 1)[0]
    monkeypatch.setenv("PERSONAE_MODEL", "openai:agent-world")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    namespace: dict[str, Any] = {}
    exec(compile(code, "deploy.md", "exec"), namespace)  # noqa: S102
    personas = tmp_path / "personas"
    model = FollowTheTools(first="profile_character")
    agent = namespace["profile_then_ask_agent"](model, str(personas), wiki=server.url)
    state = await agent.ainvoke({"messages": [("user", "Profile Kenshiro, then ask him.")]})
    assert calls(state["messages"]) == [
        ("profile_character", "success"),
        ("ask_character", "success"),
    ]
    assert state["messages"][-1].content == f"Kenshiro says: {ANSWER}"
    assert [m["character"] for m in indexed_personas(open_client(str(personas)))] == ["Kenshiro"]
