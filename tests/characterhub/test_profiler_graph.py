"""The profiler graph end to end: real clients against a loopback wiki and Tavily, scripted LLM."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from profiler_world import profiler_context, scripted_model, serve_fake_web

from personae.graphs.characterhub.profiler import build_graph, graph
from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.testing import ScriptedChatModel, override_models
from personae.tools.wiki import AmbiguousCharacterError


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    with serve_fake_web(monkeypatch) as running:
        yield running


def use_model(model: ScriptedChatModel) -> Iterator[ScriptedChatModel]:
    override_models(specs={"openai:profiler-test": model})
    yield model


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    yield from use_model(scripted_model(score=0.9))


def context(server: LoopbackWebServer, **changes: Any) -> ProfilerContext:
    return profiler_context(server, "profiler-test", **changes)


async def run(server: LoopbackWebServer, name: str = "Kenshiro", **changes: Any) -> dict[str, Any]:
    result: dict[str, Any] = await graph.ainvoke(
        {"name": name, "franchise": "Fist of the North Star", "wiki_url": server.url},
        context=context(server, **changes),
    )
    return result


async def test_profile_cites_only_known_sources(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server)
    ids = {s["id"] for s in result["sources"]}
    assert [s["id"] for s in result["sources"]] == [f"S{i}" for i in range(1, len(ids) + 1)]
    assert result["profile"].startswith("I am Kenshiro")
    assert result["wiki_page"] == f"{server.url}/wiki/Kenshiro"
    facts = [f for facts in result["dimensions"].values() for f in facts]
    cited = [i for f in facts for i in f["source_ids"]]
    assert cited and set(cited) <= ids
    assert all(f["source_ids"] for f in facts)
    assert result["stop_reason"] == "coverage_reached"
    # plan, summarize, check notes, reflect, rewrite, check facts, check prose
    assert result["usage"]["llm_calls"] == 7
    assert {s["origin"] for s in result["sources"]} == {"web", "wiki"}


async def test_fan_out_one_search_per_query_and_tool(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server)
    first = result["rounds"][0]
    assert len(first["queries"]) == 7  # the code added the dimension the planner forgot
    assert result["usage"]["searches"] == 14  # 7 queries x (web, wiki)
    assert result["usage"]["search_credits"] == 14  # advanced depth: 2 credits a search


async def test_exclude_urls_never_become_sources(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    leak = "https://leak.example.org/kenshiro-answers"
    result = await run(server, exclude_urls=(leak,))
    assert leak not in {s["url"] for s in result["sources"]}
    assert "https://example.org/kenshiro-bio" in {s["url"] for s in result["sources"]}


async def test_ambiguous_name_resolved_by_franchise(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    result = await run(server, name="Zoro", max_rounds=1)
    assert result["name"] == "Zoro (Hokuto)"
    assert result["wiki_page"] == f"{server.url}/wiki/Zoro_(Hokuto)"


async def test_ambiguous_name_without_matching_franchise_is_reported(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    with pytest.raises(AmbiguousCharacterError) as raised:
        await graph.ainvoke(
            {"name": "Zoro", "franchise": None, "wiki_url": server.url}, context=context(server)
        )
    assert raised.value.candidates == ["Zoro (Hokuto)", "Roronoa Zoro"]
    assert model.calls == []  # nothing was planned or searched for the wrong character


async def test_checkpointed_graph_keeps_per_round_log(
    server: LoopbackWebServer, model: ScriptedChatModel
) -> None:
    app = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    await app.ainvoke(
        {"name": "Kenshiro", "franchise": None, "wiki_url": server.url},
        config,
        context=context(server),
    )
    values = (await app.aget_state(config)).values
    assert len(values["searches"]) == 14
    assert {(s["tool"], s["dimension"]) for s in values["searches"]} == {
        (tool, d) for tool in ("web", "wiki") for d in DIMENSIONS
    }
    assert values["rounds"][0]["source_ids"] == [s["id"] for s in values["sources"]]
