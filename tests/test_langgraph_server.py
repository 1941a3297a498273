"""`langgraph dev` serves every graph in langgraph.json and a run through its API returns a result.

Offline: the server's LLM is an OpenAI-compatible fake on loopback reached through
``OPENAI_BASE_URL``, so the real ChatOpenAI path runs inside the server process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest
from fake_openai import FakeOpenAIChat

from personae.loopback import LoopbackWebServer, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).parent / "langgraph"


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and its workers (its own process group); tolerate an early exit."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def _start_server(
    config: Path, env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()  # `--port 0` is reported as ":0" (it does not print the bound port)
    with log.open("wb") as handle:  # the child keeps its own copy of the descriptor
        process = _spawn(config, env, handle, port)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.5)
    _stop(process)
    raise AssertionError(f"langgraph dev did not start:\n{log.read_text(errors='replace')[-3000:]}")


def _spawn(
    config: Path, env: dict[str, str], handle: IO[bytes], port: int
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            str(LANGGRAPH),
            "dev",
            "--no-browser",
            "--no-reload",
            "--port",
            str(port),
            "--config",
            str(config),
        ],
        cwd=config.parent,
        env=env,
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


@pytest.fixture
def studio(tmp_path: Path) -> Iterator[tuple[str, FakeOpenAIChat]]:
    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli is not installed (uv sync installs it with the dev group)")
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["graphs"] = {
        name: str(ROOT / target.removeprefix("./")) for name, target in config["graphs"].items()
    }
    config.pop("env", None)
    config["dependencies"] = [str(ROOT)]
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    fake = FakeOpenAIChat(
        {
            "NextAction": lambda messages: {"action": "Kyon sighs and follows Haruhi."},
            "RelevanceVerdict": lambda messages: {
                "reason": "names a habit",
                "relevant": "ensign" in json.dumps(messages),
            },
            "CharacterAttributes": lambda messages: {
                "belief_and_value": "Loyal to himself first.",
                "psychological_traits": "Calculating, patient.",
            },
            "text": lambda messages: "I am not what I am.",
        }
    )
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
            PERSONAE_MODEL="openai:fake",
            PERSONAE_FAST_MODEL="openai:fake",
        )
        process, url = _start_server(tmp_path / "langgraph.json", env, tmp_path / "server.log")
        try:
            yield url, fake
        finally:
            _stop(process)


def test_langgraph_dev_serves_every_graph_and_runs_one(
    studio: tuple[str, FakeOpenAIChat], tmp_path: Path
) -> None:
    url, fake = studio
    listed = httpx.post(f"{url}/assistants/search", json={"limit": 50}, timeout=10).json()
    served = {assistant["graph_id"] for assistant in listed}
    expected = set(json.loads((ROOT / "langgraph.json").read_text())["graphs"])
    assert served == expected

    story = tmp_path / "story.jsonl"
    rows = [{"action": f"Haruhi announces plan {i}", "character": "Haruhi"} for i in range(6)]
    rows += [{"action": "Kyon objects", "character": "Kyon"}]
    story.write_text("\n".join(json.dumps(row) for row in rows))
    run = httpx.post(
        f"{url}/runs/wait",
        json={
            "assistant_id": "vanilla",
            "input": {"character": "Kyon", "position": 6},
            "context": {
                "storyline_path": str(story),
                "model": "openai:fake",
                "fast_model": "openai:fake",
            },
        },
        timeout=60,
    )
    assert run.status_code == 200, run.text
    assert run.json()["action"] == "Kyon sighs and follows Haruhi."
    prompt = json.dumps(fake.requests[-1]["messages"])
    assert "Haruhi announces plan 5" in prompt and "Kyon objects" not in prompt


def test_amadeus_chats_on_a_server_thread(
    studio: tuple[str, FakeOpenAIChat], tmp_path: Path
) -> None:
    from personae.memory.embeddings import HashingEmbedding
    from personae.memory.persona_chunks import split_persona
    from personae.memory.persona_doc import parse_markdown
    from personae.memory.persona_store import PersonaIndex, open_client

    url, fake = studio
    memory = tmp_path / "persona-memory"
    doc = parse_markdown(
        "# Iago\n\n## Profile\n\nI am Othello's ensign.\n\n## Deeds\n\nI fool Roderigo.", "Iago"
    )
    PersonaIndex(open_client(str(memory)), "Iago", "acts", HashingEmbedding()).sync(
        doc, split_persona(doc)
    )
    thread = httpx.post(f"{url}/threads", json={}, timeout=10).json()["thread_id"]
    context = {
        "memory_dir": str(memory),
        "model": "openai:fake",
        "gs_model": "openai:fake",
        "ae_model": "openai:fake",
        "gs_wave": 2,
    }
    for question in ("Who are you?", "And what do you want?"):
        run = httpx.post(
            f"{url}/threads/{thread}/runs/wait",
            json={
                "assistant_id": "amadeus",
                "input": {"character": "Iago", "query": question},
                "context": context,
            },
            timeout=60,
        )
        assert run.status_code == 200, run.text
    result = run.json()
    assert result["response"] == "I am not what I am."
    assert [m["type"] for m in result["messages"]] == ["human", "ai", "human", "ai"]
    assert result["gs_failed"] is False and "ensign" in result["selected"][0]["text"]
    assert result["attributes"]["belief_and_value"] == "Loyal to himself first."
    last_prompt = json.dumps(fake.requests[-1]["messages"])
    assert "Who are you?" in last_prompt and "Calculating, patient." in last_prompt
