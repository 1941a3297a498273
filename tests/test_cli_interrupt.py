"""Ctrl-C (SIGINT) on a real child process: one line, exit 130, finished checkpoints kept."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import bookmarks_world
import pytest
from profiler_world import fake_web

from personae.cli import INTERRUPTED
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import paths_for

DRIVER = Path(__file__).with_name("interrupt_driver.py")

pytestmark = pytest.mark.slow

HOKUTO = "Fist of the North Star"


@pytest.fixture
def web() -> Iterator[str]:
    routes, _, _ = fake_web()
    with LoopbackWebServer(routes.route) as server:
        yield server.url


def start(
    tmp_path: Path,
    url: str,
    *argv: str,
    world: str = "profiler",
    latency: float = 0.1,
    hold: str = "",
) -> subprocess.Popen[str]:
    """The CLI in a child process; each model call takes ``latency`` seconds (a run to
    interrupt needs time between calls for the signal to land; a rerun needs none) and a
    call with schema ``hold`` returns only once ``tmp_path / "release"`` exists (a kill after
    it is logged lands inside it)."""
    env = dict(
        os.environ,
        TAVILY_API_KEY="tvly-test",
        TAVILY_BASE_URL=url,
        PERSONAE_MODEL="openai:driver",
        DRIVER_LATENCY=str(latency),
        DRIVER_WORLD=world,
        DRIVER_HOLD=hold,
        DRIVER_RELEASE=str(tmp_path / "release"),
    )
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(tmp_path / "calls.log"), *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().split() if log.exists() else []


def wait_for(tmp_path: Path, name: str, count: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while calls(tmp_path).count(name) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, calls(tmp_path)
        time.sleep(0.01)


def interrupted(child: subprocess.Popen[str]) -> str:
    """Send Ctrl-C; the child must end with exit 130 and one line, no traceback."""
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == INTERRUPTED and "Traceback" not in stderr
    return stderr


def test_ctrl_c_while_the_command_starts_up(tmp_path: Path, web: str) -> None:
    out = tmp_path / "profiles"
    child = start(tmp_path, web, "profile", "Kenshiro", "--wiki", web, "--out", str(out))
    wait_for(tmp_path, "ready", 1, child)  # announced as the CLI parses its arguments
    interrupted(child)
    assert not list(out.rglob("profile.json"))


def bench_argv(tmp_path: Path) -> tuple[str, ...]:
    story = bookmarks_world.write_storyline(tmp_path / "haruhi.jsonl")
    out = tmp_path / "bench"
    return ("bookmarks", "bench", str(story), "--out", str(out), "--limit", "2")


def test_ctrl_c_while_the_bench_starts_up(tmp_path: Path, web: str) -> None:
    child = start(tmp_path, web, *bench_argv(tmp_path), world="bookmarks")
    wait_for(tmp_path, "ready", 1, child)
    interrupted(child)
    assert not (tmp_path / "bench" / "results.jsonl").exists()


def test_ctrl_c_in_the_bench_keeps_every_judged_instance_and_the_rerun_resumes(
    tmp_path: Path, web: str
) -> None:
    argv = bench_argv(tmp_path)  # 4 characters x 2 instances, one artifact: one story order
    results = tmp_path / "bench" / "results.jsonl"
    child = start(tmp_path, web, *argv, world="bookmarks")
    # The third verdict is asked only after the first two instances were appended.
    wait_for(tmp_path, "KeyMoveVerdict", 3, child)
    interrupted(child)
    lines = results.read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 2
    done = {(r["character"], r["position"]) for r in map(json.loads, lines)}
    assert len(done) == len(lines)  # whole lines, none twice

    (tmp_path / "calls.log").unlink()
    rerun = start(tmp_path, web, *argv, world="bookmarks", latency=0)
    stdout, stderr = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, stderr
    # A step the signal caught half-way is resumed from its checkpoint and said so
    # ("5 instances run (1 interrupted step resumed), 3 already done").
    summary = re.search(
        r"(\d+) instances run(?: \((\d+) interrupted steps? resumed\))?, "
        r"(\d+) already done",
        stdout,
    )
    assert summary, stdout
    assert (int(summary[1]), int(summary[3])) == (8 - len(done), len(done)), summary[0]
    assert int(summary[2] or 0) <= 2, summary[0]  # at most the steps running (--concurrency 2)
    assert calls(tmp_path).count("NextAction") == 8 - len(done)  # finished ones not acted again
    assert "trimmed" not in stderr and "Traceback" not in stderr
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert len({(r["character"], r["position"]) for r in records}) == len(records) == 8


def test_ctrl_c_in_a_batch_keeps_finished_work_and_the_running_character(
    tmp_path: Path, web: str
) -> None:
    batch = tmp_path / "batch.csv"
    batch.write_text(f"name,franchise,wiki\nKenshiro,{HOKUTO},{web}\nRaoh,{HOKUTO},{web}\n")
    out = tmp_path / "profiles"
    argv = ("profile", "--batch", str(batch), "--out", str(out), "--concurrency", "1")
    child = start(tmp_path, web, *argv)
    # Kenshiro took three rounds of notes; Raoh's first notes mean his plan is checkpointed.
    wait_for(tmp_path, "EvidenceNotes", 4, child)
    interrupted(child)
    assert paths_for(out, "Kenshiro", HOKUTO).profile_json.exists()
    assert not paths_for(out, "Raoh", HOKUTO).profile_json.exists()

    (tmp_path / "calls.log").unlink()
    rerun = start(tmp_path, web, *argv, latency=0)
    stdout, stderr = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, stderr
    assert stdout.startswith("1 profiled, 1 already done")
    assert "Raoh: resuming the interrupted run" in stderr
    assert "QueryPlan" not in calls(tmp_path)  # Raoh's plan came back from the checkpoint
    assert paths_for(out, "Raoh", HOKUTO).profile_json.exists()


def test_kill_inside_the_checks_then_the_rerun_runs_the_checks(tmp_path: Path, web: str) -> None:
    """kill -9 inside ``verify_profile``: the checkpoint holds the unchecked draft in
    ``profile``; the rerun must resume the checks, not write that draft as finished."""
    out = tmp_path / "profiles"
    argv = ("profile", "Kenshiro", "--franchise", HOKUTO, "--wiki", web, "--out", str(out))
    # ProseCheck is asked only inside verify_profile; held, so the kill lands inside the
    # node on any machine (answered, the node could finish before the kill under load).
    child = start(tmp_path, web, *argv, "--max-rounds", "1", hold="ProseCheck")
    wait_for(tmp_path, "ProseCheck", 1, child)
    child.kill()
    child.communicate(timeout=30)
    paths = paths_for(out, "Kenshiro", HOKUTO)
    assert not paths.profile_json.exists()

    (tmp_path / "calls.log").unlink()
    rerun = start(tmp_path, web, *argv, "--max-rounds", "1", latency=0)
    stdout, stderr = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, stderr
    assert "resuming the interrupted run" in stderr and "already profiled" not in stderr
    assert set(calls(tmp_path)) == {"ready", "ClaimChecks", "ProseCheck"}
    document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    assert document["prose_check"] is not None and document["usage"]["facts_checked"] >= 1


TRIP = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's default
import personae.console  # what the package's __init__ imports first for the console script


class Trip:
    '''Sends Ctrl-C while the module {module!r} of the CLI's import chain is being imported.'''

    def find_spec(self, name, path, target=None):
        if name == {module!r}:
            os.kill(os.getpid(), signal.SIGINT)
        return None


sys.meta_path.insert(0, Trip())
sys.argv = ["personae", "profile", "Kenshiro", "--wiki", "http://127.0.0.1:9"]
from personae import cli
cli.run()
"""


@pytest.mark.parametrize(
    "module", ["personae.cli", "personae.commands.models", "personae.commands.characterhub"]
)
def test_ctrl_c_while_the_cli_is_being_imported_is_one_line(module: str) -> None:
    """The first 0.1-0.3 s: the console script loads the CLI under a quiet handler."""
    done = subprocess.run(
        [sys.executable, "-c", TRIP.format(module=module)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == INTERRUPTED + "\n"


def test_the_console_script_gets_the_quiet_handler_and_a_library_import_does_not() -> None:
    probe = (
        "import signal, personae, personae.cli;"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "True"
    script = Path(sys.executable).with_name("personae")
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("personae ")
    as_script = (
        "import sys, signal; signal.signal(signal.SIGINT, signal.default_int_handler);"
        "sys.modules['__main__'].__file__ = '/venv/bin/personae'; import personae;"
        "print(getattr(signal.getsignal(signal.SIGINT), '__module__', None))"
    )
    handled = subprocess.run([sys.executable, "-c", as_script], capture_output=True, text=True)
    assert handled.stdout.strip() == "personae.console"  # in place before the CLI loads
