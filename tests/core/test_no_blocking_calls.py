"""Every graph of langgraph.json under the LangGraph server's own blocking-call guard.

`langgraph dev` fails a run with ``BlockingError`` when async code makes a blocking call
(``os.getcwd`` inside ``Path.resolve()``, ``os.mkdir`` when Chroma or an atomic write opens a
folder...). The same guard runs here in-process, on the README's contexts with relative paths
and persistent memory, so the edit loop catches what the server would; the server test
(marked slow) runs the same contexts, with and without memory, over HTTP.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from profiler_world import fake_web
from studio_world import (
    ARCANE,
    GRAPHS,
    STORY,
    check_result,
    graph_module,
    prepare,
    run_context,
    run_input,
)
from studio_world import scripted_model as studio_model

from personae.graphs.bookmarks.tool import create_storyline_memory_tool
from personae.loopback import LoopbackWebServer
from personae.testing import override_models

queue = pytest.importorskip("langgraph_runtime_inmem.queue")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A working directory holding the README's files; the fake web's URL."""
    monkeypatch.chdir(tmp_path)
    prepare(tmp_path)
    override_models(studio_model())
    web, _, _ = fake_web()
    with LoopbackWebServer(web.route) as server:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        monkeypatch.setenv("PERSONAE_CACHE_DIR", "cache")  # relative, as users write it
        yield server.url


def _compiled(graph: str) -> Any:
    return importlib.import_module(graph_module(graph)).graph


@pytest.mark.parametrize("graph", GRAPHS)
async def test_every_graph_runs_under_the_servers_blocking_call_guard(
    world: str, graph: str
) -> None:
    memory = True  # the persistent variant is the one that touches files, Chroma and paths
    guard = queue._enable_blockbuster()  # the exact guard `langgraph dev` runs with
    try:
        # The context goes in as a dict, so it is built under the guard, as the server does.
        result = await _compiled(graph).ainvoke(
            run_input(graph, world), context=run_context(graph, memory)
        )
    finally:
        guard.deactivate()
    check_result(graph, memory, result)
    if memory and graph == "profiler":
        assert any(Path("cache/http").rglob("*.json"))
    elif memory and graph in ARCANE:  # ARCANE's persistent state: files under data/, answers
        assert any(Path("cache/arcane").rglob("*.json"))
    elif memory and graph not in ("amadeus", "vanilla"):  # vanilla keeps no memory
        assert any(Path(f"memory-{graph}").iterdir())


async def test_the_storyline_memory_tool_runs_under_the_guard(world: str) -> None:
    tool = create_storyline_memory_tool(STORY, memory_dir="memory-tool")
    question = {"character": "Haruhi", "question": "Where is Haruhi?", "position": 60}
    guard = queue._enable_blockbuster()
    try:
        answer = await tool.ainvoke(question)
    finally:
        guard.deactivate()
    assert "bookmark" in answer and "valid at position 60" in answer
