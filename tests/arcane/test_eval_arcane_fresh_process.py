"""`personae arcane eval` in a fresh process: its units open the novel's Chroma store at once.

In-process tests open the store while building the novel, so the first open the CLI makes in
a new process (from several worker threads at once) is never exercised there; it crashed 5
of 5 runs before any model call. The CLI runs here in a child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from arcane_world import prepared_novel

DRIVER = Path(__file__).parents[1] / "arcane_eval_driver.py"

pytestmark = pytest.mark.slow


def test_eval_arcane_opens_the_chroma_store_once_in_a_fresh_process(tmp_path: Path) -> None:
    prepared_novel(tmp_path)
    out = tmp_path / "run"
    argv = ["arcane", "eval", "the_river", "--data", str(tmp_path), "--out", str(out)]
    argv += ["--modes", "vanilla,rag,lifechoice,arc", "--concurrency", "4"]
    env = dict(os.environ, PERSONAE_CACHE_DIR=str(tmp_path / "cache"), ANONYMIZED_TELEMETRY="False")
    done = subprocess.run(
        [sys.executable, str(DRIVER), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["mode"] for r in rows} == {"vanilla", "rag", "lifechoice", "arc"}
    assert "4 units evaluated" in done.stdout + done.stderr
