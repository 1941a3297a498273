"""Each stop rule fires in its situation and is recorded (pure function and whole graph)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from profiler_world import profiler_context, scripted_model, serve_fake_web

from personae.graphs.characterhub.profiler import STOP_RULES, graph, stop_rule
from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.testing import override_models


def state(**changes: Any) -> Any:
    base: dict[str, Any] = {
        "usage": {"llm_calls": 3, "input_tokens": 100, "output_tokens": 50, "search_credits": 7},
        "rounds": [{"round": 1, "results": 9, "new_source_ids": ["S1"]}],
        "coverage": dict.fromkeys(DIMENSIONS, 0.2),
        "pending": [{"dimension": "identity", "query": "Kenshiro origin"}],
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("changes", "settings", "expected"),
    [
        ({}, {"max_llm_calls": 8}, "budget_llm_calls"),
        ({}, {"max_tokens": 150}, "budget_tokens"),
        ({}, {"max_search_credits": 7}, "budget_search_credits"),
        ({"rounds": [{"round": 1, "results": 0, "new_source_ids": []}]}, {}, "all_searches_empty"),
        ({"coverage": dict.fromkeys(DIMENSIONS, 0.8)}, {}, "coverage_reached"),
        (
            {
                "rounds": [
                    {"round": 1, "results": 4, "new_source_ids": ["S1"]},
                    {"round": 2, "results": 4, "new_source_ids": []},
                    {"round": 3, "results": 4, "new_source_ids": []},
                ]
            },
            {"max_rounds": 5},
            "no_new_sources",
        ),
        (
            {
                "rounds": [
                    {"round": 1, "results": 4, "new_source_ids": ["S1"]},
                    {"round": 2, "results": 4, "new_source_ids": ["S2"]},
                ]
            },
            {"max_rounds": 2},
            "round_cap",
        ),
        ({"pending": []}, {}, "no_follow_ups"),
        ({}, {}, None),
    ],
)
def test_stop_rule(changes: dict[str, Any], settings: dict[str, Any], expected: str | None) -> None:
    assert stop_rule(state(**changes), ProfilerContext(**settings)) == expected
    assert expected is None or expected in STOP_RULES


def test_one_dimension_below_target_keeps_searching() -> None:
    coverage = {**dict.fromkeys(DIMENSIONS, 0.9), "other": 0.3}
    assert stop_rule(state(coverage=coverage), ProfilerContext()) is None


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    with serve_fake_web(monkeypatch) as running:
        yield running


async def run(server: LoopbackWebServer, score: float, **settings: Any) -> dict[str, Any]:
    override_models(specs={"openai:stop-test": scripted_model(score=score)})
    result: dict[str, Any] = await graph.ainvoke(
        {"name": "Kenshiro", "franchise": None, "wiki_url": server.url},
        context=profiler_context(server, "stop-test", **settings),
    )
    return result


async def test_graph_refines_until_two_rounds_bring_nothing_new(server: LoopbackWebServer) -> None:
    result = await run(server, score=0.2, max_rounds=6)
    assert result["stop_reason"] == "no_new_sources"
    assert [len(r["new_source_ids"]) > 0 for r in result["rounds"]] == [True, False, False]
    follow_ups = result["reflections"][0]["follow_ups"]
    assert result["rounds"][1]["queries"] == [f["query"] for f in follow_ups]
    assert result["profile"].startswith("I am Kenshiro")  # still written from what was found


async def test_graph_stops_at_round_cap(server: LoopbackWebServer) -> None:
    result = await run(server, score=0.2, max_rounds=2)
    assert result["stop_reason"] == "round_cap" and len(result["rounds"]) == 2


async def test_graph_stops_when_all_searches_are_empty(
    server: LoopbackWebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAVILY_API_KEY")  # wiki only: follow-ups match no wiki page
    result = await run(server, score=0.2, max_rounds=5)
    assert result["stop_reason"] == "all_searches_empty"
    assert result["rounds"][-1]["results"] == 0


async def test_graph_stops_when_llm_budget_is_spent(server: LoopbackWebServer) -> None:
    result = await run(server, score=0.2, max_llm_calls=8)
    assert result["stop_reason"] == "budget_llm_calls"
    # plan, summarize, check notes, reflect; then the reserved rewrite and its two checks
    assert result["usage"]["llm_calls"] == 7 <= 8
