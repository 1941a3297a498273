"""The suite passes where the Getting started tour has run, and leaves that tour's folders alone.

Why: the commands' default folders (``profiles/``, ``personas/``, ``data/``, ``runs/``) are
relative to the working directory, and a reader who follows the docs in order runs the tour in
the checkout before the tests. A test that left one default in place listed the tour's personas
and failed (issue 34). conftest now runs the session and each test in an empty folder of their
own; this test proves it from the outside: it lays out the folders the tour leaves, runs tests
that use the defaults in a child pytest started there, and checks they pass and the folders are
byte for byte as they were.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from personae.cli import main
from personae.mcp.resources import persona_names, profile_keys
from personae.memory.amadeus.persona_chunks import split_persona
from personae.memory.amadeus.persona_doc import parse_markdown
from personae.memory.amadeus.persona_store import PersonaIndex, open_client
from personae.memory.characterhub.profile_store import write_profile
from personae.memory.embeddings import HashingTextEmbedding

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "examples" / "data"
MARA, GULL_ROCK = "Mara Vell", "The Keeper of Gull Rock"
ON_THE_DEFAULTS = (
    # The test: the MCP server on its default folders lists the profiles and personas.
    "tests/test_mcp_server.py::test_without_an_llm_the_server_starts_and_each_tool_call_says_what_to_set",
    # `personae doctor` checks each default folder can be written: a probe file in each.
    "tests/core/test_llm_endpoint.py::test_the_cli_prints_notices_on_stderr",
)
"""Tests that leave the default folders in place: they read or wrote the checkout's folders
until each test ran in its own (found with an audit hook over the suite, issue 34)."""

pytestmark = pytest.mark.slow  # a child pytest: a second Python process


def lay_out_the_tours_folders(folder: Path) -> None:
    """What the tour leaves in the folder it ran in: Mara's profile, her persona index and the
    imported sample novel, plus a benchmark's reports (``runs/``), all written by real code."""
    result = {"name": MARA, "franchise": GULL_ROCK, "profile": "Mara keeps the Gull Rock light."}
    write_profile(folder / "profiles", result)
    persona = parse_markdown((SAMPLES / "mara.md").read_text(encoding="utf-8"), MARA)
    index = PersonaIndex(
        open_client(str(folder / "personas")), MARA, "acts", HashingTextEmbedding()
    )
    index.sync(persona, split_persona(persona))
    novel = ["arcane", "import", str(SAMPLES / "gull_rock.txt"), "--title", GULL_ROCK]
    assert main([*novel, "--data", str(folder / "data")]) == 0  # the tour's own line
    (folder / "runs" / "bench").mkdir(parents=True)
    (folder / "runs" / "bench" / "report.md").write_text("# Bench\n", encoding="utf-8")


def contents(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` with its modification time, and a file's SHA-256
    (a folder's time moves when a file in it is made or removed, a probe file included)."""
    return {
        path.relative_to(folder).as_posix(): (
            f"{path.stat().st_mtime_ns} "
            + ("/" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest())
        )
        for path in sorted(folder.rglob("*"))
    }


def child_environment() -> dict[str, str]:
    """This process's environment, without what ties a process to this test run (its current
    test, its coverage data file: the child is measured by neither)."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "COV_CORE_", "COVERAGE_"))
    }


def test_the_suite_run_where_the_tour_ran_passes_and_leaves_its_folders_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "tour-ran-here"
    checkout.mkdir()
    lay_out_the_tours_folders(checkout)
    monkeypatch.chdir(checkout)  # what a test reading the defaults here would see
    assert asyncio.run(persona_names(Path("personas"))) == [MARA]
    assert profile_keys(Path("profiles")) == ["mara-vell--the-keeper-of-gull-rock"]
    before = contents(checkout)
    assert before["data/novels"].endswith(" /") and "runs/bench/report.md" in before

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
        + ["-c", str(ROOT / "pyproject.toml"), "--basetemp", str(tmp_path / "child")]
        + [str(ROOT / test) for test in ON_THE_DEFAULTS],
        cwd=checkout,
        env=child_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert summary.startswith(f"{len(ON_THE_DEFAULTS)} passed"), summary
    assert contents(checkout) == before  # nothing read into being, written or removed
