"""One profile run per character, across processes: two CLIs on one folder pay once.

Each CLI is a real child process (``interrupt_driver.py``: the profiler world's scripted model,
one log line per model call), so the lock is tested as users meet it: between processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from profiler_world import fake_web
from test_cli_interrupt import HOKUTO, calls, start, wait_for

from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import paths_for, profile_key
from personae.run_lock import lock_path, read_holder, run_lock

pytestmark = pytest.mark.slow

ONE_RUN = 13
"""The model calls of one planned profile of Kenshiro in the profiler world."""


@pytest.fixture
def web() -> Iterator[str]:
    routes, _, _ = fake_web()
    with LoopbackWebServer(routes.route) as server:
        yield server.url


def paid(tmp_path: Path) -> list[str]:
    """The model calls in the log (``ready`` is the driver's own line)."""
    return [name for name in calls(tmp_path) if name != "ready"]


def argv(out: Path, web: str, name: str = "Kenshiro") -> tuple[str, ...]:
    return ("profile", name, "--franchise", HOKUTO, "--wiki", web, "--out", str(out))


def opened(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (a run waiting for a lock holds its file)."""
    fds = Path(f"/proc/{pid}/fd")
    return any(os.path.realpath(fd) == str(path.resolve()) for fd in fds.iterdir())


def test_two_clis_on_one_character_pay_for_one_run(tmp_path: Path, web: str) -> None:
    out = tmp_path / "profiles"
    key = profile_key("Kenshiro", HOKUTO)
    # The first holds the key, stopped inside its coverage review until the test lets it go.
    first = start(tmp_path, web, *argv(out, web), hold="CoverageReview", latency=0)
    wait_for(tmp_path, "CoverageReview", 1, first)
    second = start(tmp_path, web, *argv(out, web), latency=0)
    deadline = time.monotonic() + 60
    while not opened(second.pid, lock_path(out, key)):  # the second waits at the lock
        assert second.poll() is None and time.monotonic() < deadline, second.communicate()
        time.sleep(0.02)
    (tmp_path / "release").touch()
    _, first_err = first.communicate(timeout=120)
    second_out, second_err = second.communicate(timeout=120)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    assert len(paid(tmp_path)) == ONE_RUN, second_err
    waiting = re.search(
        rf"waiting: the profile of kenshiro--fist-of-the-north-star is running in "
        rf"pid {first.pid} since \S+ \(personae profile Kenshiro [^)]*\); "
        r"this run starts when it ends",
        second_err,
    )
    assert waiting, second_err
    paths = paths_for(out, "Kenshiro", HOKUTO)
    assert f"Kenshiro: reused the profile the run it waited for wrote ({paths.profile_json})" in (
        second_err
    )
    assert second_out.strip() == str(paths.profile_json)
    assert json.loads(paths.profile_json.read_text())["usage"]["llm_calls"] == ONE_RUN


def test_no_wait_stops_with_exit_3_naming_the_holder_and_kill_9_leaves_no_lock(
    tmp_path: Path, web: str
) -> None:
    out = tmp_path / "profiles"
    key = profile_key("Kenshiro", HOKUTO)
    holder = start(tmp_path, web, *argv(out, web), hold="EvidenceNotes")
    try:
        wait_for(tmp_path, "EvidenceNotes", 1, holder)
        held = read_holder(lock_path(out, key))
        assert held is not None and held.pid == holder.pid
        refused = start(tmp_path, web, *argv(out, web), "--no-wait", latency=0)
        _, refused_err = refused.communicate(timeout=120)
    finally:
        holder.kill()  # kill -9: no cleanup runs in the holder
        holder.communicate(timeout=30)
    assert refused.returncode == 3, refused_err
    assert refused_err.strip().splitlines()[-1] == (
        f"personae: error: the profile of {key} is running in {held.describe()}; wait for it "
        "to end, or leave out --no-wait to wait for it"
    )

    async def take() -> bool:
        async with run_lock(out, key, what="a check", wait=False) as lock:
            return not lock.waited

    assert asyncio.run(take())  # at once: the kernel released the dead holder's lock
