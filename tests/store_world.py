"""Real stores on loopback for tests: a ``chroma run`` server and an OpenAI-style embeddings API.

Shared by the bookmark bank's and ARCANE chunk index's server tests and the embedding-setting
tests. The Chroma server is the ``chroma`` executable installed with chromadb; callers skip
without it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from personae.loopback import WebRequest, WebResponse, free_port
from personae.memory.embeddings import embed_text
from personae.settings import Settings, load_settings

CHROMA = Path(sys.executable).parent / "chroma"


@contextmanager
def running_chroma(data: Path) -> Iterator[Settings]:
    """``chroma run`` on a free loopback port with its database in ``data``; its settings."""
    port = free_port()
    log = (data / "server.log").open("wb")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    command = [str(CHROMA), "run", "--path", str(data / "db"), "--host", "127.0.0.1"]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            tail = (data / "server.log").read_text()[-2000:]
            raise AssertionError(f"chroma run did not start:\n{tail}")
        yield load_settings({"CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(port)})
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
        log.close()


class EmbeddingsServer:
    """``POST /v1/embeddings`` as an OpenAI-compatible server answers it (unnormalised)."""

    def __init__(self, model: str = "embed-small") -> None:
        self.model = model
        self.bodies: list[dict[str, object]] = []

    def __call__(self, request: WebRequest) -> WebResponse:
        if not request.path.endswith("/embeddings"):
            return WebResponse(404, {"error": {"message": f"no route {request.path}"}})
        body = request.json()
        self.bodies.append(body)
        if body["model"] != self.model:
            return WebResponse(404, {"error": {"message": "model not found"}})
        data = [
            {"object": "embedding", "index": i, "embedding": (3.0 * embed_text(t, 64)).tolist()}
            for i, t in enumerate(body["input"])
        ]
        data.reverse()  # servers may answer out of order: the index says which is which
        usage = {"prompt_tokens": 5, "total_tokens": 5}
        return WebResponse(200, {"object": "list", "data": data, "model": "m", "usage": usage})
