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
    tool = create_profile_tool(context(server), wiki_url=server.url)
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
