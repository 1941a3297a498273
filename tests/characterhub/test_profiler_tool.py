"""The profiler as a LangChain tool and as a subgraph inside a parent graph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from profiler_world import profiler_context, scripted_model, serve_fake_web
from typing_extensions import TypedDict

from personae.graphs.characterhub.profiler import graph
from personae.graphs.characterhub.state import ProfilerContext
from personae.graphs.characterhub.tool import create_profile_tool
from personae.loopback import LoopbackWebServer
from personae.testing import override_models


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    override_models(specs={"openai:tool-test": scripted_model(score=0.9)})
    with serve_fake_web(monkeypatch) as running:
        yield running


def context(server: LoopbackWebServer) -> ProfilerContext:
    return profiler_context(server, "tool-test")


async def test_tool_returns_first_person_profile_with_sources(server: LoopbackWebServer) -> None:
    tool = create_profile_tool(context(server), wiki=server.url)
    assert tool.name == "profile_character"
    assert set(tool.args) == {"name", "franchise"}
    answer = await tool.ainvoke({"name": "Kenshiro", "franchise": "Fist of the North Star"})
    assert answer.startswith("I am Kenshiro")
    assert f"Kenshiro <{server.url}/wiki/Kenshiro>" in answer
    assert "https://example.org/kenshiro-bio" in answer


class Parent(TypedDict):
    name: str
    franchise: str | None
    wiki_url: str | None
    profile: str


async def test_compiled_profiler_runs_as_a_subgraph(server: LoopbackWebServer) -> None:
    parent = StateGraph(Parent, context_schema=ProfilerContext)
    parent.add_node("profiler", graph)
    parent.add_edge(START, "profiler")
    parent.add_edge("profiler", END)
    result: dict[str, Any] = await parent.compile().ainvoke(
        {"name": "Kenshiro", "franchise": None, "wiki_url": server.url, "profile": ""},
        context=context(server),
    )
    assert result["profile"].startswith("I am Kenshiro")


async def test_tool_failures_come_back_as_the_tool_answer(server: LoopbackWebServer) -> None:
    """A ReAct agent gets the reason as a tool message and goes on; nothing is raised."""
    tool = create_profile_tool(context(server).replaced(web_search=False), wiki=server.url)
    call = {"type": "tool_call", "id": "call-1", "name": "profile_character"}
    message = await tool.ainvoke({**call, "args": {"name": "Nobody Atall"}})
    assert message.status == "error" and message.tool_call_id == "call-1"
    assert message.content == (
        f"no page for 'Nobody Atall' on {server.url}; call profile_character again with "
        "another spelling of the name, or with the franchise the character comes from"
    )


class Other(TypedDict):
    name: str
    franchise: str | None
    wiki_url: str | None
    profile: str


async def test_the_profiler_as_a_subgraph_without_its_context_uses_the_settings(
    server: LoopbackWebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parent with no context (or another graph's) must not break the profiler's nodes:
    the defaults come from the settings, as the CLI's do."""
    monkeypatch.setenv("PERSONAE_MODEL", "openai:tool-test")
    monkeypatch.setenv("TAVILY_BASE_URL", server.url)
    parent = StateGraph(Other)
    parent.add_node("profiler", graph)
    parent.add_edge(START, "profiler")
    parent.add_edge("profiler", END)
    result: dict[str, Any] = await parent.compile().ainvoke(
        {"name": "Kenshiro", "franchise": None, "wiki_url": server.url, "profile": ""}
    )
    assert result["profile"].startswith("I am Kenshiro")


async def test_a_parent_llm_context_hands_on_its_models(server: LoopbackWebServer) -> None:
    from personae.run_context import LLMContext, context_of

    parent = LLMContext(model="openai:tool-test", temperature="0.3")
    derived = context_of(parent, ProfilerContext)
    assert isinstance(derived, ProfilerContext)
    assert (derived.model, derived.fast_model, derived.temperature) == (
        "openai:tool-test",
        "openai:tool-test",
        "0.3",
    )
    assert derived.settings is parent.settings  # the environment is not read again
    from_dict = context_of({"max_rounds": 1, "unrelated": True}, ProfilerContext)
    assert from_dict.max_rounds == 1
