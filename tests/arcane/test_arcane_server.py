"""The ARCANE graphs under `langgraph dev`, through its HTTP API (one server for the module)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from arcane_world import (
    ProbeScript,
    arc_responders,
    future_marks,
    prepared_novel,
    write_event_stream,
)
from fake_openai import FakeOpenAIChat

from personae.loopback import LoopbackWebServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_langgraph_server import LANGGRAPH, ROOT, _start_server, _stop  # noqa: E402

pytestmark = pytest.mark.slow

Server = tuple[str, FakeOpenAIChat, Path]


def _answer(messages: list[dict[str, Any]]) -> str:
    return "Ada waits by the water."


def _adapt(responder: Any) -> Any:
    """A world responder (reads ``.content``) answering the fake server's dict messages."""
    return lambda messages: responder([SimpleNamespace(content=m["content"]) for m in messages])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli is not installed (uv sync installs it with the dev group)")
    folder = tmp_path_factory.mktemp("arcane-server")
    write_event_stream(prepared_novel(folder / "data"))
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["graphs"] = {
        name: str(ROOT / target.removeprefix("./")) for name, target in config["graphs"].items()
    }
    config.pop("env", None)
    config["dependencies"] = [str(ROOT)]
    (folder / "langgraph.json").write_text(json.dumps(config))
    world = {**arc_responders(), **ProbeScript().responders()}
    responders: dict[str, Any] = {name: _adapt(fn) for name, fn in world.items()}
    responders["PhaseJudgement"] = lambda m: {"scores": {"apf": 70, "rpf": 60, "rae": 50}}
    responders["TrajectoryJudgement"] = lambda m: {
        "scores": {"ptf_alignment": 40, "ptf_direction": 50, "ptf_shape": 60}
    }
    fake = FakeOpenAIChat({"text": _answer, **responders})
    with LoopbackWebServer(fake) as llm:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("OPENAI", "PERSONAE", "TAVILY"))
        }
        env.update(
            LANGGRAPH_CLI_NO_ANALYTICS="1",
            LANGGRAPH_NO_VERSION_CHECK="true",
            LANGSMITH_TRACING="false",
            ANONYMIZED_TELEMETRY="False",
            OPENAI_BASE_URL=f"{llm.url}/v1",
            OPENAI_API_KEY="test-key",
        )
        process, url = _start_server(folder / "langgraph.json", env, folder / "server.log")
        try:
            yield url, fake, folder / "data"
        finally:
            _stop(process)


def _run(url: str, assistant: str, payload: dict[str, Any], context: dict[str, Any]) -> Any:
    run = httpx.post(
        f"{url}/runs/wait",
        json={"assistant_id": assistant, "input": payload, "context": context},
        timeout=120,
    )
    assert run.status_code == 200, run.text
    return run.json()


def test_arcane_roleplay_runs_every_mode_through_the_server(server: Server) -> None:
    url, fake, data = server
    context = {"data_dir": str(data), "model": "openai:fake"}
    probe = {"novel": "the_river", "probe_id": "the_river_ada_final_intra_01_iw_a1"}
    for mode in ("vanilla", "summary", "rag", "lifechoice", "arc"):
        result = _run(url, "arcane_roleplay", {**probe, "phase_idx": 0, "mode": mode}, context)
        assert result.get("response") == "Ada waits by the water.", (mode, result)
        prompt = json.dumps(fake.requests[-1]["messages"])
        assert "chapter 2." in prompt and future_marks(prompt, 2) == []


def test_arc_build_runs_through_the_server(server: Server) -> None:
    url, fake, data = server
    context = {"data_dir": str(data), "model": "openai:fake"}
    payload = {"novel": "the_river", "character": "Ada", "split": "train"}
    result = _run(url, "arc_build", payload, context)
    assert sorted(a["axis_id"] for a in result["arcs"]) == ["final_intra_01", "final_rel_01"]
    assert result["usage"]["llm_calls"] == 24


def test_probe_build_runs_through_the_server(server: Server) -> None:
    url, _, data = server
    context = {"data_dir": str(data), "model": "openai:fake"}
    payload = {
        "novel": "the_river",
        "character": "Ada",
        "axis_id": "final_intra_01",
        "types": ["in_world", "out_of_world"],
    }
    result = _run(url, "probe_build", payload, context)
    assert sorted(
        p["probe_id"].rsplit("_", 2)[1] + "_" + p["probe_id"][-2:] for p in result["probes"]
    ) == [
        "iw_a0",
        "iw_a1",
        "iw_a2",
        "oow_a0",
        "oow_a1",
        "oow_a2",
    ]


def test_arcane_eval_runs_through_the_server(server: Server, tmp_path: Path) -> None:
    url, _, data = server
    context = {"data_dir": str(data), "model": "openai:fake"}
    payload = {"novels": ["the_river"], "modes": ["vanilla"], "limit": 1, "out_dir": str(tmp_path)}
    result = _run(url, "arcane_eval", payload, context)
    assert len(result["done"]) == 1
    [row] = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert row["mode"] == "vanilla" and row["phases"]
