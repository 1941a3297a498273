"""kill -9 in the middle of an acting step: a loopback model server that can hold calls open.

The child is the real ``personae`` CLI in its own process, talking to :class:`HeldChat` over
HTTP with the real OpenAI client; the BOOKMARKS world's scripted answers (``bookmarks_world``)
make every run deterministic. ``HeldChat`` holds the calls ``hold`` picks open until released,
so a test (or ``benchmarks/bench_act_kill.py``) knows exactly which calls were in flight when it
killed the child, and which had been answered and paid for.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bookmarks_world import scripted_model
from fake_openai import FakeOpenAIChat
from langchain_core.messages import convert_to_messages

from personae.graphs.bookmarks.step_checkpoints import CHECKPOINT_FILE, JOURNAL_DIR
from personae.testing import prompt_text

Hold = Callable[[str, str, int], bool]
"""(schema name, prompt text, how many calls of that schema came before) -> hold it open?"""


def never(name: str, text: str, before: int) -> bool:
    """Hold nothing: a cold run."""
    return False


def hold_after(evidence: int) -> Hold:
    """Hold the concept summary and every evidence check after the first ``evidence``: the
    step dies with its state sync finished, its behavioral sync part done, its concept sync in
    flight."""

    def hold(name: str, text: str, before: int) -> bool:
        return name == "ConceptAnswer" or (name == "EvidenceVerdicts" and before >= evidence)

    return hold


mid_sync = hold_after(5)
"""Five evidence checks answered, the rest held (the tests' kill point)."""


def _judge(messages: Any) -> dict[str, Any]:
    """The benchmark's exact-match judge: a fixed grade (the test is about calls, not scores)."""
    return {"reasoning": "compared", "score": "C"}


class HeldChat(FakeOpenAIChat):
    """The scripted world over HTTP; calls picked by ``hold`` wait until :meth:`release`."""

    def __init__(self, hold: Hold = never) -> None:
        scripted = scripted_model(KeyMoveVerdict=_judge)
        super().__init__({name: self._answer(name) for name in scripted.responders})
        self._scripted = scripted
        self.hold = hold
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.seen: dict[str, int] = {}
        self.answered: list[str] = []
        """Every answered call as ``schema + prompt`` (what was paid for)."""
        self.in_flight: list[str] = []
        """Calls received and held open, not answered."""

    def _answer(self, name: str) -> Callable[[list[dict[str, Any]]], Any]:
        def respond(raw: list[dict[str, Any]]) -> Any:
            messages = convert_to_messages(raw)
            call = f"{name}\n{json.dumps(raw, sort_keys=True)}"
            with self.lock:
                before = self.seen.get(name, 0)
                self.seen[name] = before + 1
                held = self.hold(name, prompt_text(messages), before)
                if held:
                    self.in_flight.append(call)
            if held:
                self.released.wait(120)
                return "(released after the client died)"
            answer = self._scripted.responders[name](messages)
            with self.lock:
                self.answered.append(call)
            return answer

        return respond

    def release(self) -> None:
        """Let held calls return (their client is gone), so server threads end."""
        self.released.set()


def cli_env(server_url: str) -> dict[str, str]:
    """The child's environment: every role on the loopback server, no retries, no telemetry."""
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=f"{server_url}/v1",
        OPENAI_API_KEY="test-key",
        PERSONAE_MODEL="openai:fake",
        PERSONAE_FAST_MODEL="openai:fake",
        PERSONAE_JUDGE_MODEL="openai:fake",
        PERSONAE_LLM_RETRY_SECONDS="0",
        ANONYMIZED_TELEMETRY="False",
        LANGSMITH_TRACING="false",
    )
    return env


def start_cli(argv: Sequence[str], server_url: str) -> subprocess.Popen[str]:
    """``personae ARGV`` in a child process talking to the loopback server."""
    code = "import sys; from personae.cli import run; sys.argv[0] = 'personae'; run()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        env=cli_env(server_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def synced_writes(memory: Path) -> int:
    """Finished sync tasks whose result the interrupted step's checkpoint holds."""
    path = memory / CHECKPOINT_FILE
    if not path.is_file():
        return 0
    with contextlib.closing(sqlite3.connect(path, timeout=5)) as db:
        try:
            row = db.execute("select count(*) from writes where channel = 'synced'").fetchone()
        except sqlite3.OperationalError:  # the saver has not created its tables yet
            return 0
    return int(row[0])


def journaled(memory: Path) -> int:
    """Answers journaled by interrupted steps under ``memory``."""
    return len(list((memory / JOURNAL_DIR).glob("*/*/*.json")))  # <step>/<key[:2]>/<key>.json


def kill_when_held(
    child: subprocess.Popen[str],
    chat: HeldChat,
    memory: Path,
    *,
    answered: int,
    held: int,
    synced: int = 1,
    quiet: float = 0.0,
    timeout: float = 120,
    saved_writes: Callable[[Path], int] | None = None,
) -> None:
    """SIGKILL ``child`` once ``answered`` calls are answered and journaled, ``held`` wait and
    ``synced`` sync tasks are in the checkpoint.

    Waiting for the journal and the checkpoint makes the kill land after the child saved what
    it was paid for: the point is what a rerun redoes, not a race with the disk. ``quiet``:
    also wait until no call came or went for that many seconds (every call that can still be
    made is held), for kill points not counted in advance. ``saved_writes`` counts the synced
    writes where the checkpoints live (default: the memory folder's SQLite file).
    """
    count_synced = saved_writes or synced_writes
    deadline = time.monotonic() + timeout
    last, since = (-1, -1), time.monotonic()
    while True:
        with chat.lock:
            done, waiting = len(chat.answered), len(chat.in_flight)
        if (done, waiting) != last:
            last, since = (done, waiting), time.monotonic()
        saved = journaled(memory) >= done and count_synced(memory) >= synced
        settled = time.monotonic() - since >= quiet
        if done >= answered and waiting >= held and saved and settled:
            break
        if child.poll() is not None:
            raise AssertionError(f"the child ended before the kill: {child.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no kill point: {done} answered, {waiting} held")
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)  # reaps it and closes its pipes


def finish(child: subprocess.Popen[str], timeout: float = 180) -> tuple[str, str]:
    """Wait for ``child``; its stdout and stderr (it must exit 0)."""
    out, err = child.communicate(timeout=timeout)
    if child.returncode != 0:
        raise AssertionError(f"exit {child.returncode}: {err}")
    return out, err
