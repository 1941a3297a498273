"""A 200-instance `bookmarks bench` slice run locally vs through `langgraph dev` (`--server`).

Run: uv run python benchmarks/bench_server_runs.py [--storylines 4] [--per-character 25]
     [--method vanilla] [--concurrency 4] [--latency 0.05]

Four storylines x two characters x 25 test instances = 200 instances of one method, at the same
``--concurrency`` both ways (the bench runs one storyline's instances in story order, so
concurrency is across storylines). The model is the scripted BOOKMARKS world behind the real
OpenAI client on a loopback server that answers each call after ``--latency`` seconds. Both runs
are the real CLI in a child process with their own fresh cache: the local run steps in its own
process; the server run sends each step to `langgraph dev` (one thread per instance) and judges
and writes the records itself. Prints both wall times (the server's start-up excluded, printed
apart), whether results.jsonl holds identical records (whole, and without ``judge_usage``, whose
cache-hit counts depend on timing: the storylines are the same text, so instances share
verdicts, and which asks first pays), and the rerun of the server run after deleting its
results.jsonl (every finished thread read back, no step run again).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The loopback model world is a test fixture (tests/), not part of the shipped package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bookmarks_world import scripted_model, write_storyline  # noqa: E402
from fake_openai import FakeOpenAIChat  # noqa: E402
from mcp_world import over_http  # noqa: E402
from server_world import QUIET, server_config, start_server, stop_server  # noqa: E402

from personae.loopback import LoopbackWebServer  # noqa: E402

CHILD = "import sys; from personae.cli import run; sys.argv[0] = 'personae'; run()"


def verdict(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {"reasoning": "compared", "score": "A" if "smiles" in json.dumps(messages) else "C"}


def env_for(llm_url: str, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "PERSONAE"))}
    env.update(
        QUIET,
        OPENAI_BASE_URL=f"{llm_url}/v1",
        OPENAI_API_KEY="test-key",
        PERSONAE_MODEL="openai:fake",
        PERSONAE_JUDGE_MODEL="openai:fake",
        PERSONAE_CACHE_DIR=str(cache),
    )
    return env


def bench(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"bench failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - started


def by_kind(requests: list[dict[str, Any]]) -> str:
    """Model calls per answer schema (the step's, the judge's)."""
    counts: dict[str, int] = {}
    for request in requests:
        tools = request.get("tools") or [{"function": {"name": "text"}}]
        name = str(tools[0]["function"]["name"])
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))


def records(path: Path, drop: tuple[str, ...] = ()) -> list[str]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(
        json.dumps({k: v for k, v in row.items() if k not in drop}, sort_keys=True) for row in rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--storylines", type=int, default=4)
    parser.add_argument("--per-character", type=int, default=25)
    parser.add_argument("--method", default="vanilla")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.05)
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-server-runs-"))
    size = max(160, options.per_character * 2 * 5 + 40)  # each character acts every 5th line
    stories = [
        str(write_storyline(root / f"club{i}.jsonl", size)) for i in range(options.storylines)
    ]
    llm = FakeOpenAIChat({**over_http(scripted_model()), "KeyMoveVerdict": verdict})
    argv = ["bookmarks", "bench", *stories, "--characters", "Haruhi", "Kyon",
            "--limit", str(options.per_character), "--method", options.method,
            "--concurrency", str(options.concurrency)]  # fmt: skip
    with LoopbackWebServer(llm, latency=options.latency) as llm_server:
        local = bench([*argv, "--out", str(root / "local")], env_for(llm_server.url, root / "c1"))
        calls_local = len(llm.requests)
        (root / "server").mkdir()
        server_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
        server_env.update(QUIET, OPENAI_API_KEY="test-key")
        started = time.perf_counter()
        process, url = start_server(server_config(root / "server"), server_env, root / "log")
        startup = time.perf_counter() - started
        try:
            out = root / "remote"
            env = env_for(llm_server.url, root / "c2")
            remote = bench([*argv, "--out", str(out), "--server", url], env)
            calls_remote = len(llm.requests) - calls_local
            (out / "results.jsonl").rename(out / "first.jsonl")
            rerun = bench([*argv, "--out", str(out), "--server", url], env)
            calls_rerun = len(llm.requests) - calls_local - calls_remote
        finally:
            stop_server(process)
    mine, theirs = root / "local/results.jsonl", out / "first.jsonl"
    count = len(records(mine))
    print(
        f"instances: {count} ({options.storylines} storylines x 2 characters x "
        f"{options.per_character}), method {options.method}, concurrency "
        f"{options.concurrency}, model latency {options.latency * 1000:.0f} ms per call"
    )
    print(
        f"local:              {local:7.1f} s wall, {calls_local} model calls "
        f"({by_kind(llm.requests[:calls_local])})"
    )
    print(
        f"langgraph dev:      {remote:7.1f} s wall, {calls_remote} model calls "
        f"({by_kind(llm.requests[calls_local : calls_local + calls_remote])}; "
        f"server start {startup:.1f} s, not included)"
    )
    print(
        f"rerun on the server:{rerun:7.1f} s wall, {calls_rerun} model calls "
        "(results.jsonl deleted: finished threads read back, judge verdicts cached)"
    )
    same = records(mine) == records(theirs)
    same_scores = records(mine, ("judge_usage",)) == records(theirs, ("judge_usage",))
    rerun_same = records(out / "results.jsonl", ("judge_usage",)) == records(
        theirs, ("judge_usage",)
    )
    print(
        f"records identical: {same}; without judge_usage: {same_scores}; "
        f"rerun identical (without judge_usage): {rerun_same}"
    )


if __name__ == "__main__":
    main()
