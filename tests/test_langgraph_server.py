"""`langgraph dev` serves every graph in langgraph.json, and each runs through its HTTP API.

One server for the module (it takes seconds to start). Offline: the server's LLM is an
OpenAI-compatible fake on loopback reached through ``OPENAI_BASE_URL`` and the web (Tavily, a
MediaWiki) is a loopback fake, so the real ChatOpenAI, Tavily and wiki clients run inside the
server process. The server checks for blocking calls in async code (``BlockingError``), so a
run with ``memory_dir`` and a relative ``storyline_path`` proves the graphs keep file I/O,
Chroma and ``Path.resolve()`` off the event loop. Runs pass the contexts the README shows;
what they leave out comes from the server's environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_openai import ChatResponder, FakeOpenAIChat
from langchain_core.messages import convert_to_messages
from profiler_world import fake_web
from server_world import LANGGRAPH, start_server, stop_server
from studio_world import GRAPHS, check_result, prepare, run_context, run_input
from studio_world import scripted_model as studio_model

from personae.loopback import LoopbackWebServer
from personae.testing import ScriptedChatModel

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
STRONG = "fake-strong"
"""The model PERSONAE_MODEL names in the server's environment."""


def _over_http(scripted: ScriptedChatModel) -> dict[str, ChatResponder]:
    """The scripted model's responders, fed the OpenAI request's messages as LangChain ones."""

    def adapt(name: str) -> ChatResponder:
        def respond(messages: list[dict[str, Any]]) -> Any:
            answer = scripted.responders[name](convert_to_messages(messages))
            return answer.model_dump(mode="json") if hasattr(answer, "model_dump") else answer

        return respond

    return {name: adapt(name) for name in scripted.responders}


@dataclass
class Studio:
    """The running server, the fakes it talks to and the files runs refer to."""

    url: str
    llm: FakeOpenAIChat
    web_url: str
    root: Path
    """The server's working directory (relative paths in contexts resolve here)."""
    log: Path

    def run(self, graph: str, payload: dict[str, Any], context: dict[str, Any]) -> Any:
        """One run through ``/runs/wait``; fails with the server log when the run failed."""
        body = {"assistant_id": graph, "input": payload, "context": context}
        answer = httpx.post(f"{self.url}/runs/wait", json=body, timeout=120)
        assert answer.status_code == 200, answer.text
        result = answer.json()
        if isinstance(result, dict) and "__error__" in result:
            tail = self.log.read_text(errors="replace")[-4000:]
            raise AssertionError(f"{graph} run failed: {result['__error__']}\n{tail}")
        return result

    def models_called(self, since: int) -> set[str]:
        """The model names of every LLM request after the first ``since``."""
        return {str(request.get("model")) for request in self.llm.requests[since:]}


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli is not installed (uv sync installs it with the dev group)")
    root = tmp_path_factory.mktemp("studio")
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["graphs"] = {
        name: str(ROOT / target.removeprefix("./")) for name, target in GRAPHS.items()
    }
    config.pop("env", None)
    config["dependencies"] = [str(ROOT)]
    (root / "langgraph.json").write_text(json.dumps(config))
    prepare(root)
    llm = FakeOpenAIChat(_over_http(studio_model()))
    web, _, _ = fake_web()
    with LoopbackWebServer(llm) as llm_server, LoopbackWebServer(web.route) as web_server:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("OPENAI", "PERSONAE", "TAVILY", "CHROMA"))
        }
        env.update(
            LANGGRAPH_CLI_NO_ANALYTICS="1",
            LANGGRAPH_NO_VERSION_CHECK="true",
            LANGSMITH_TRACING="false",
            ANONYMIZED_TELEMETRY="False",
            OPENAI_BASE_URL=f"{llm_server.url}/v1",
            OPENAI_API_KEY="test-key",
            PERSONAE_MODEL=f"openai:{STRONG}",
            TAVILY_API_KEY="tvly-test",
            TAVILY_BASE_URL=web_server.url,
            PERSONAE_CACHE_DIR=str(root / "cache"),
        )
        log = root / "server.log"
        process, url = start_server(root / "langgraph.json", env, log)
        try:
            yield Studio(url, llm, web_server.url, root, log)
        finally:
            stop_server(process)


def test_every_graph_is_served_and_its_context_fields_are_described(studio: Studio) -> None:
    listed = httpx.post(f"{studio.url}/assistants/search", json={"limit": 50}, timeout=10).json()
    assistants = {assistant["graph_id"]: assistant["assistant_id"] for assistant in listed}
    assert set(assistants) == set(GRAPHS)
    for graph, assistant in assistants.items():
        schemas = httpx.get(f"{studio.url}/assistants/{assistant}/schemas", timeout=30).json()
        fields = schemas["context_schema"]["properties"]
        assert {"model", "fast_model", "openai_base_url"} <= set(fields), graph
        undescribed = [name for name, field in fields.items() if not field.get("description")]
        assert undescribed == [], f"{graph}: {undescribed}"
        # Studio's model picker, as the server hands the schema to Studio.
        pickers = {name for name, field in fields.items() if "__template_metadata__" in field}
        assert pickers == {n for n in fields if n == "model" or n.endswith("_model")}, graph
        assert fields["model"]["__template_metadata__"] == {"kind": "llm"}, graph


@pytest.mark.parametrize("memory", [False, True], ids=["in-process", "persistent"])
@pytest.mark.parametrize("graph", GRAPHS)
def test_every_graph_runs_with_the_readme_context(studio: Studio, graph: str, memory: bool) -> None:
    before = len(studio.llm.requests)
    result = studio.run(graph, run_input(graph, studio.web_url), run_context(graph, memory))
    check_result(graph, memory, result)
    # Models come from the server's environment: PERSONAE_MODEL alone serves both roles; the
    # ARCANE evaluation's judge is its own setting (default the paper's), never the model.
    judge = {"deepseek/deepseek-v4-flash"} if graph == "arcane_eval" else set()
    assert studio.models_called(before) == {STRONG} | judge
    if graph in ("bookmarks", "vanilla", "ricl", "eta"):
        prompts = json.dumps([r["messages"] for r in studio.llm.requests[before:]])
        assert "scene 119." in prompts and "scene 120." not in prompts  # nothing at the target
    if memory and graph in ("bookmarks", "ricl", "eta"):
        assert any((studio.root / f"memory-{graph}").iterdir())  # relative to the server
    if memory and graph == "profiler":
        assert any((studio.root / "cache" / "http").rglob("*.json"))  # PERSONAE_CACHE_DIR


def test_bookmarks_memory_dir_persists_across_runs(studio: Studio) -> None:
    context = {"storyline_path": "club.jsonl", "memory_dir": "memory-again"}
    first = studio.run("bookmarks", {"character": "Kyon", "position": 60}, context)
    second = studio.run("bookmarks", {"character": "Kyon", "position": 68}, context)
    assert first["stats"]["new"] >= 1
    assert second["stats"]["reuse"] >= 1 and second["stats"]["new"] == 0


def test_profiler_context_names_its_own_models(studio: Studio) -> None:
    before = len(studio.llm.requests)
    payload = {
        "name": "Kenshiro",
        "franchise": "Fist of the North Star",
        "wiki_url": studio.web_url,
    }
    context = {"model": "openai:run-strong", "max_rounds": 1}
    result = studio.run("profiler", payload, context)
    assert result["profile"].startswith("I am Kenshiro")
    # The run's model alone also serves as the fast model (PERSONAE_FAST_MODEL is unset).
    assert studio.models_called(before) == {"run-strong"}


def test_amadeus_conversation_continues_on_a_thread(studio: Studio) -> None:
    thread = httpx.post(f"{studio.url}/threads", json={}, timeout=10).json()["thread_id"]
    context = {"memory_dir": "persona", "gs_wave": 3}
    answers = []
    for question in ("My name is Kazuma.", "What is my name?"):
        body = {
            "assistant_id": "amadeus",
            "input": {"character": "Megumin", "query": question},
            "context": context,
        }
        answer = httpx.post(f"{studio.url}/threads/{thread}/runs/wait", json=body, timeout=120)
        assert answer.status_code == 200, answer.text
        answers.append(answer.json())
    result = answers[-1]
    assert [m["type"] for m in result["messages"]] == ["human", "ai", "human", "ai"]
    assert result["gs_failed"] is False and result["usage"]["gs_calls"] >= 3
    last_prompt = json.dumps(studio.llm.requests[-1]["messages"])
    assert "My name is Kazuma." in last_prompt and "Explosions first." in last_prompt


def test_arcane_roleplay_every_mode_stays_before_the_query_chapter(studio: Studio) -> None:
    from arcane_world import future_marks
    from studio_world import ARCANE_PROBE, DATA_DIR

    for mode in ("vanilla", "summary", "rag", "lifechoice", "timechara", "arc"):
        before = len(studio.llm.requests)
        payload = {"novel": "the_river", "probe_id": ARCANE_PROBE, "phase_idx": 1, "mode": mode}
        result = studio.run("arcane_roleplay", payload, {"data_dir": DATA_DIR, "cache_dir": "none"})
        assert "chapter 4." in result["system"], mode
        prompts = json.dumps([r["messages"] for r in studio.llm.requests[before:]])
        assert future_marks(prompts, 4) == [], mode


def test_arcane_checkpoints_hold_no_unregistered_types(studio: Studio) -> None:
    """ARCANE state is plain JSON: loading its checkpoints never warns (or blocks) in the server."""
    from studio_world import ARCANE

    for graph in ARCANE:
        thread = httpx.post(f"{studio.url}/threads", json={}, timeout=10).json()["thread_id"]
        for _ in range(2):  # the second run on the thread loads the first one's checkpoints
            body = {
                "assistant_id": graph,
                "input": run_input(graph, studio.web_url),
                "context": run_context(graph, True),
            }
            url = f"{studio.url}/threads/{thread}/runs/wait"
            answer = httpx.post(url, json=body, timeout=120)
            assert answer.status_code == 200 and "__error__" not in answer.json(), answer.text
        history = httpx.post(f"{studio.url}/threads/{thread}/history", json={}, timeout=30)
        assert history.status_code == 200 and history.json(), graph
    log = studio.log.read_text(errors="replace")
    flagged = [
        line
        for line in log.splitlines()
        if "unregistered type" in line or "Blocked deserialization" in line
    ]
    assert flagged == []


def test_a_personae_error_reaches_the_api_with_its_message(studio: Studio) -> None:
    """Studio and the HTTP API show the real one-line error, not "An internal error occurred"."""
    body = {
        "assistant_id": "profiler",
        "input": {"name": "Nobody Atall", "franchise": None, "wiki_url": studio.web_url},
        "context": {"web_search": False, "max_rounds": 1},
    }
    answer = httpx.post(f"{studio.url}/runs/wait", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    assert answer.json()["__error__"] == {
        "error": "WikiPageNotFound",
        "message": f"no page for 'Nobody Atall' on {studio.web_url}; "
        "check the spelling, or pass --wiki for the franchise's wiki",
    }


BAD_KEYS: dict[str, tuple[str, dict[str, Any], str]] = {
    "renamed": (
        "amadeus",
        {"embeddings": "hashing"},
        "the context field 'embeddings' is now 'embedding'; pass 'embedding' instead (same values)",
    ),
    "retired": (
        "profiler",
        {"paper_queries": 8},
        "the context field 'paper_queries' is no longer set by a run; drop it: the graph uses "
        "the paper's 8 searches a round (ProfilerContext.paper_queries)",
    ),
    "unknown": (
        "amadeus",
        {"no_such_field": 1},
        "AmadeusContext has no context field 'no_such_field'; drop it (the graph's context "
        "schema lists its",
    ),
    "typo": ("amadeus", {"methd": "none"}, "has no context field 'methd'; did you mean 'method'?"),
}


@pytest.mark.parametrize("case", BAD_KEYS)
def test_a_server_run_with_a_renamed_retired_or_unknown_context_key_fails_naming_it(
    studio: Studio, case: str
) -> None:
    """The server drops keys its schema lacks; the graph's entry sees them first and refuses
    them as an in-process run does (``served`` in each graph module), before any model call."""
    graph, bad, expected = BAD_KEYS[case]
    body = {
        "assistant_id": graph,
        "input": run_input(graph, studio.web_url),
        "context": {**run_context(graph, False), **bad},
    }
    before = len(studio.llm.requests)
    answer = httpx.post(f"{studio.url}/runs/wait", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    error = answer.json()["__error__"]
    assert error["error"] == "ConfigurationError" and expected in error["message"], error
    assert len(studio.llm.requests) == before
