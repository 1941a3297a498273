"""Every Studio example of ``examples/studio`` runs as written, offline, from a fresh copy.

Each example names its graph, the commands that prepare its data (``prepare``: run from the
repository root, in order) and the run's input and context, as a Studio user pastes them. The
test does exactly that in a folder holding only a copy of ``examples/data``: it runs each
preparation (``uv run personae ...`` in process; the sample wiki on a free port), then invokes
the graph with the input and the context class built from the example's context, against the
loopback model (the sample world's scripted answers behind an OpenAI-compatible server on
127.0.0.1, set through ``OPENAI_BASE_URL`` and ``PERSONAE_MODEL``: ``sample_world.sample_llm``).
So an example whose preparation is not a command, or whose input needs data the samples do not
give, fails here.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from sample_world import (
    PERSONAE_COMMAND,
    SAMPLE_MODEL,
    WIKI_COMMAND,
    copy_samples,
    run_personae,
    sample_llm,
    sample_wiki,
)
from studio_world import GRAPHS, graph_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "studio"


def example(graph: str) -> dict[str, Any]:
    """``examples/studio/GRAPH.json``."""
    document: dict[str, Any] = json.loads((EXAMPLES / f"{graph}.json").read_text("utf-8"))
    return document


def _with_url(value: Any, meant: str, served: str) -> Any:
    if isinstance(value, str):
        return value.replace(meant, served)
    return value


def check(graph: str, result: dict[str, Any], folder: Path) -> None:
    """What each example's run must give back on the sample data."""
    if graph == "profiler":
        assert result["profile"].strip()
        assert any(source["url"].endswith("/wiki/Mara_Vell") for source in result["sources"])
    elif graph in ("amadeus", "arcane_roleplay"):
        assert result["response"].strip()
    elif graph in ("bookmarks", "vanilla", "ricl", "eta"):
        assert isinstance(result["action"], str) and result["action"].strip()
    elif graph == "arc_build":
        assert result["arcs"], result
        assert (folder / "data/novels/the_keeper_of_gull_rock/arcs/mara.json").is_file()
    elif graph == "probe_build":
        assert result["probes"], result
    else:  # arcane_eval
        rows = (folder / "runs/arcane-studio/results.jsonl").read_text().splitlines()
        assert len(rows) == 4  # limit 2 probes x modes vanilla and arc


def test_every_graph_has_a_studio_example() -> None:
    assert sorted(path.stem for path in EXAMPLES.glob("*.json")) == sorted(GRAPHS)
    for graph in GRAPHS:
        for command in example(graph)["prepare"]:
            assert command.startswith((PERSONAE_COMMAND, WIKI_COMMAND)), (graph, command)


@pytest.mark.endtoend
@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_the_studio_example_runs_from_a_fresh_copy(
    graph: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = example(graph)
    copy_samples(tmp_path)
    monkeypatch.chdir(tmp_path)
    payload = dict(document["input"])
    with ExitStack() as stack:
        llm = stack.enter_context(sample_llm(monkeypatch))
        for command in document["prepare"]:
            if command.startswith(WIKI_COMMAND):
                meant, served = stack.enter_context(sample_wiki(command))
                payload = {key: _with_url(value, meant, served) for key, value in payload.items()}
            else:
                assert run_personae(command) == 0, command
        module = importlib.import_module(graph_module(graph))
        compiled = module.build_graph(checkpointer=InMemorySaver())
        context = compiled.builder.context_schema(**document["context"])
        config = {"configurable": {"thread_id": f"studio-{graph}"}}
        result = asyncio.run(compiled.ainvoke(payload, config=config, context=context))
    check(graph, result, tmp_path)
    assert llm.requests and {request["model"] for request in llm.requests} == {SAMPLE_MODEL}
