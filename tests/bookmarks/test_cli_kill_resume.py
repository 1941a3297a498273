"""kill -9 in the middle of an `act` or benchmark step: the rerun pays only for calls in flight.

Real child processes (the CLI), the real OpenAI client, a loopback model server that holds
chosen calls open (``kill_world``), real SQLite checkpoints and Chroma on disk. The child is
killed while its sync fan-out runs: the state sync has finished, the behavioral sync has five
of its evidence checks answered and the rest in flight, the concept sync is in flight.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from bookmarks_world import write_storyline
from kill_world import HeldChat, finish, kill_when_held, mid_sync, start_cli

from personae.graphs.bookmarks.step_checkpoints import CHECKPOINT_FILE, JOURNAL_DIR
from personae.loopback import LoopbackWebServer

pytestmark = pytest.mark.slow

ANSWERED_BEFORE_KILL = 7
"""Propose, the state sync's one chunk, five evidence checks."""


def run_cold(server: LoopbackWebServer, argv: list[str]) -> tuple[str, list[str]]:
    """A run that is never killed: its output and every call it paid for."""
    server.route = chat = HeldChat()
    out, _ = finish(start_cli(argv, server.url))
    return out, chat.answered


def kill_mid_sync(server: LoopbackWebServer, argv: list[str], memory: Path) -> HeldChat:
    """Start ``argv``, kill -9 it mid-sync; the chat server's record of what was paid/held."""
    server.route = chat = HeldChat(mid_sync)
    child = start_cli(argv, server.url)
    try:
        kill_when_held(child, chat, memory, answered=ANSWERED_BEFORE_KILL, held=2)
    finally:
        chat.release()
    return chat


def rerun(server: LoopbackWebServer, argv: list[str]) -> tuple[str, str, list[str]]:
    """Run ``argv`` to the end (the same server: its URL is part of the step's key)."""
    server.route = chat = HeldChat()
    out, err = finish(start_cli(argv, server.url))
    return out, err, chat.answered


@pytest.fixture
def server() -> Iterator[LoopbackWebServer]:
    with LoopbackWebServer(HeldChat()) as running:
        yield running


def threads_left(memory: Path) -> int:
    with sqlite3.connect(memory / CHECKPOINT_FILE) as db:
        return int(db.execute("select count(*) from checkpoints").fetchone()[0])


def schema(call: str) -> str:
    return call.split("\n", 1)[0]


def test_a_killed_act_step_reruns_only_the_calls_in_flight(
    tmp_path: Path, server: LoopbackWebServer
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")

    def act(memory: Path) -> list[str]:
        return ["bookmarks", "act", str(story), "--character", "Haruhi", "--at", "40", "--json",
                "--method", "bookmarks-personae", "--memory", str(memory)]  # fmt: skip

    cold_out, cold_calls = run_cold(server, act(tmp_path / "cold"))
    memory = tmp_path / "mem"
    killed = kill_mid_sync(server, act(memory), memory)
    assert len(killed.answered) == ANSWERED_BEFORE_KILL and len(killed.in_flight) >= 2
    assert threads_left(memory) > 0  # the step's checkpoint survived the kill

    out, err, again = rerun(server, act(memory))
    assert "resumed the interrupted step" in err
    assert not set(again) & set(killed.answered)  # nothing paid for is asked again
    assert set(killed.in_flight) <= set(again)  # what was in flight is
    never_started = [schema(c) for c in again if c not in killed.in_flight]
    assert sorted(never_started) == ["BehaviorSummary", "NextAction"]
    assert len(killed.answered) + len(again) == len(cold_calls)  # no call paid twice
    assert sorted(killed.answered + again) == sorted(cold_calls)
    resumed, cold = json.loads(out), json.loads(cold_out)
    for key in ("action", "grounding", "bookmarks", "stats"):
        assert resumed[key] == cold[key], key  # the counters include the calls before the kill
    assert threads_left(memory) == 0 and not (memory / JOURNAL_DIR).exists()


def test_a_killed_benchmark_step_resumes_with_its_finished_syncs(
    tmp_path: Path, server: LoopbackWebServer
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")

    def bench(out: Path) -> list[str]:
        return ["bookmarks", "bench", str(story), "--characters", "Haruhi", "--limit", "1",
                "--method", "bookmarks-personae", "--out", str(out)]  # fmt: skip

    cold_out, cold_calls = run_cold(server, bench(tmp_path / "cold"))
    out = tmp_path / "bench"
    killed = kill_mid_sync(server, bench(out), out / "memory")
    assert not (out / "results.jsonl").exists()

    stdout, _, again = rerun(server, bench(out))
    assert "1 instances run (1 interrupted step resumed), 0 already done" in stdout
    assert not set(again) & set(killed.answered) and set(killed.in_flight) <= set(again)
    step = [c for c in cold_calls if schema(c) != "KeyMoveVerdict"]  # verdicts: judge cache
    assert sorted(killed.answered + again) == sorted(step)
    [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    [cold] = [
        json.loads(line) for line in (tmp_path / "cold/results.jsonl").read_text().splitlines()
    ]
    for key in ("prediction", "grounding", "stats", "score"):
        assert record[key] == cold[key], key


def postgres_synced_writes(url: str) -> Callable[[Path], int]:
    """Finished sync tasks held in the Postgres schema standing for ``memory``'s SQLite file."""
    import psycopg
    from psycopg import sql

    from personae.checkpointers import schema_for

    def count(memory: Path) -> int:
        table = sql.Identifier(schema_for(memory / CHECKPOINT_FILE), "checkpoint_writes")
        query = sql.SQL("select count(*) from {} where channel = 'synced'").format(table)
        with psycopg.connect(url) as conn:
            try:
                row = conn.execute(query).fetchone()
            except psycopg.errors.UndefinedTable:  # the saver has not made its tables yet
                return 0
        return int(row[0]) if row else 0

    return count


def test_a_killed_act_step_resumes_from_postgres(
    tmp_path: Path, server: LoopbackWebServer, postgres_url: str
) -> None:
    """PERSONAE_CHECKPOINTER=postgresql://...: the kill -9 test above, checkpoints in Postgres."""
    story = write_storyline(tmp_path / "club.jsonl")
    memory = tmp_path / "mem"
    # The kill point follows our prompt set's calls, as in the SQLite test above.
    act = ["bookmarks", "act", str(story), "--character", "Haruhi", "--at", "40", "--json",
           "--method", "bookmarks-personae", "--memory", str(memory)]  # fmt: skip
    cold_out, cold_calls = run_cold(server, [*act[:-1], str(tmp_path / "cold")])
    server.route = chat = HeldChat(mid_sync)
    child = start_cli(act, server.url)  # the child inherits PERSONAE_CHECKPOINTER
    saved = postgres_synced_writes(postgres_url)
    try:
        kill_when_held(child, chat, memory, answered=ANSWERED_BEFORE_KILL, held=2,
                       saved_writes=saved)  # fmt: skip
    finally:
        chat.release()
    assert saved(memory) >= 1 and not (memory / CHECKPOINT_FILE).exists()

    out, err, again = rerun(server, act)
    assert "resumed the interrupted step" in err
    assert not set(again) & set(chat.answered) and set(chat.in_flight) <= set(again)
    assert sorted(chat.answered + again) == sorted(cold_calls)
    resumed, cold = json.loads(out), json.loads(cold_out)
    for key in ("action", "grounding", "bookmarks", "stats"):
        assert resumed[key] == cold[key], key
    assert saved(memory) == 0  # the finished step dropped its thread
