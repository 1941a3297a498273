"""`langgraph dev` in a child process: how the server tests start and stop it.

Offline and quiet (no analytics, no version check, no tracing); stopped by process group, since
the server starts workers of its own. ``server_config(root)`` writes a ``langgraph.json`` in
``root`` serving the project's graphs by absolute path (the server runs in ``root``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx

from personae.loopback import free_port

ROOT = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).parent / "langgraph"
QUIET = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "ANONYMIZED_TELEMETRY": "False",
}


def server_config(root: Path) -> Path:
    """A langgraph.json in ``root`` serving every graph of the project's (absolute paths)."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["graphs"] = {
        name: str(ROOT / target.removeprefix("./")) for name, target in config["graphs"].items()
    }
    config.pop("env", None)
    config["dependencies"] = [str(ROOT)]
    path = root / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and its workers (its own process group); tolerate an early exit."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def _spawn(
    config: Path, env: dict[str, str], handle: IO[bytes], port: int
) -> subprocess.Popen[bytes]:
    command = [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port)]
    return subprocess.Popen(
        [*command, "--config", str(config)],
        cwd=config.parent,
        env=env,
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def start_server(
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
    stop_server(process)
    raise AssertionError(f"langgraph dev did not start:\n{log.read_text(errors='replace')[-3000:]}")
