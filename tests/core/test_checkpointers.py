"""PERSONAE_CHECKPOINTER: SQLite files by default, a Postgres database when it is a URL.

The Postgres tests run against a real server (``postgres_server`` in conftest: the one .ci/run
starts, or one started from the local binaries) and are marked slow; the setting's errors and
the rule that every command opens its saver here need no server.
"""

from __future__ import annotations

import ast
import asyncio
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from arcane_world import imported_novel
from cli_errors import assert_one_line_error
from langgraph.graph import START, StateGraph
from source_tree import walked
from typing_extensions import TypedDict

from personae.checkpointers import checkpoints_exist, open_checkpointer, schema_for
from personae.cli import main
from personae.errors import ConfigurationError, RemoteError
from personae.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]


class Count(TypedDict):
    n: int


def bump(state: Count) -> Count:
    return {"n": state["n"] + 1}


def counter() -> Any:
    builder = StateGraph(Count)
    builder.add_node(bump)
    builder.add_edge(START, "bump")
    return builder


THREAD: Any = {"configurable": {"thread_id": "t1"}}


def test_every_command_opens_its_saver_through_personae_checkpointers() -> None:
    """No module but personae/checkpointers.py builds a saver: the setting cannot be bypassed."""
    savers = {"AsyncSqliteSaver", "SqliteSaver", "AsyncPostgresSaver", "PostgresSaver"}
    found: list[str] = []
    for folder in ("personae", "agents", "tools", "memory", "graphs", "evals"):
        for path in (ROOT / folder).rglob("*.py"):
            if path == ROOT / "personae/checkpointers.py":
                continue
            for node in walked(path):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = {alias.name for alias in node.names}
                    if names & savers:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_the_default_is_a_sqlite_file_beside_the_output(tmp_path: Path) -> None:
    settings = load_settings({})
    path = tmp_path / "out" / ".checkpoints.sqlite"

    async def run() -> dict[str, Any]:
        assert not await checkpoints_exist(path, settings)
        async with open_checkpointer(path, settings) as saver:
            return dict(await counter().compile(checkpointer=saver).ainvoke({"n": 1}, THREAD))

    assert asyncio.run(run()) == {"n": 2}
    assert path.is_file()
    assert asyncio.run(checkpoints_exist(path, settings))


@pytest.mark.parametrize(
    "value", ["mysql://u:secret@db/x", "postgresql://", "sqlite3", "/var/db/checkpoints"]
)
def test_a_malformed_setting_names_the_forms_and_hides_the_password(
    value: str, tmp_path: Path
) -> None:
    settings = load_settings({"PERSONAE_CHECKPOINTER": value})  # read as written: not checked

    async def run() -> None:
        async with open_checkpointer(tmp_path / "x.sqlite", settings):
            pass

    with pytest.raises(ConfigurationError) as caught:
        asyncio.run(run())
    message = str(caught.value)
    assert "PERSONAE_CHECKPOINTER" in message and "postgresql://" in message
    assert "secret" not in message and not (tmp_path / "x.sqlite").exists()


def test_a_command_with_an_unreachable_database_exits_3_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    imported_novel(tmp_path)
    annotate = ["arcane", "annotate-arcs", "the_river", "--data", str(tmp_path)]
    monkeypatch.setenv("PERSONAE_CHECKPOINTER", "postgresql://me:hunter2@127.0.0.1:9/db")
    assert main([*annotate, "--export", str(tmp_path / "sheet.csv")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "cannot reach the checkpoint database (Postgres at 127.0.0.1:9/db)" in err
    assert "hunter2" not in err and "PERSONAE_CHECKPOINTER" in err
    monkeypatch.setenv("PERSONAE_CHECKPOINTER", "redis://127.0.0.1")
    assert main([*annotate, "--export", str(tmp_path / "sheet.csv")]) == 2
    assert "is not a checkpointer" in capsys.readouterr().err
    assert not (tmp_path / "sheet.csv").exists()


SECRET = "Hunter2Pw"
MALFORMED = [
    f"postgres//u:{SECRET}@h/db",  # the colon of :// missing: did not parse, was echoed whole
    f"postgresql:u:{SECRET}@h/db",
    f"postgresql://u:{SECRET}@h:notaport/db",
    f"postgresql://u:{SECRET}@127.0.0.1:99999/db",
    f"postgresql://u:{SECRET}@127.0.0.1/db?sslmode=bogus",
    f"postgresql://u:{SECRET}@[::1/db",
    f"postgresql://u:{SECRET[:4]}@{SECRET[4:]}@h/db",
    f"postgresql://u:{SECRET[:4]} {SECRET[4:]}@h/db",
    f"postgresql://u:{SECRET}/db",
    f"postgresql://u:{SECRET}@/db?host=%zz",
    f"postgresql://u@127.0.0.1/db?password={SECRET}&port=0",
    f"host=127.0.0.1 password={SECRET}",
    f"mysql://u:{SECRET}@db/x",
    f"postgresql://u:{SECRET}@127.0.0.1:5432,h2:x/db",
]


@pytest.mark.parametrize("value", MALFORMED)
def test_no_malformed_setting_shows_its_password_and_each_exits_2(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: unparsed values were echoed whole; a bad port or sslmode was exit 3."""
    imported_novel(tmp_path)
    monkeypatch.setenv("PERSONAE_CHECKPOINTER", value)
    sheet = tmp_path / "sheet.csv"
    assert (
        main(
            [
                "arcane",
                "annotate-arcs",
                "the_river",
                "--data",
                str(tmp_path),
                "--export",
                str(sheet),
            ]
        )
        == 2
    )
    captured = capsys.readouterr()
    assert_one_line_error(captured.err, r"PERSONAE_CHECKPOINTER=.* is not a (checkpointer|valid)")
    for shown in (captured.out, captured.err):
        assert SECRET not in shown and SECRET[:4] not in shown and SECRET[4:] not in shown
    assert not sheet.exists()


def test_every_error_message_hides_a_url_password() -> None:
    error = RemoteError(f"cannot reach postgresql://u:{SECRET}@h/db", "start it")
    assert str(error) == "cannot reach postgresql://***@h/db; start it"
    param = ConfigurationError(f"conninfo 'host=h password={SECRET}' refused")
    assert str(param) == "conninfo 'host=h password=***' refused"


def test_a_missing_postgres_server_is_a_remote_error(tmp_path: Path) -> None:
    settings = load_settings({"PERSONAE_CHECKPOINTER": "postgresql://127.0.0.1:9/none"})

    async def run() -> None:
        async with open_checkpointer(tmp_path / "x.sqlite", settings):
            pass

    with pytest.raises(RemoteError, match="start the server or fix PERSONAE_CHECKPOINTER"):
        asyncio.run(run())


@pytest.mark.slow
def test_postgres_keeps_one_schema_per_folder_and_resumes_across_connections(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = load_settings({"PERSONAE_CHECKPOINTER": postgres_url})
    first, second = tmp_path / "a" / ".checkpoints.sqlite", tmp_path / "b" / ".checkpoints.sqlite"

    async def run() -> tuple[dict[str, Any], list[Any], int]:
        assert not await checkpoints_exist(first, settings)
        async with open_checkpointer(first, settings) as saver:
            result = await counter().compile(checkpointer=saver).ainvoke({"n": 1}, THREAD)
        async with open_checkpointer(second, settings) as saver:  # another folder: no threads
            other = [c async for c in saver.alist(None)]
        async with open_checkpointer(first, settings) as saver:  # a new connection: still there
            state = await counter().compile(checkpointer=saver).aget_state(THREAD)
        return dict(result), other, state.values["n"]

    result, other, kept = asyncio.run(run())
    assert result == {"n": 2} and other == [] and kept == 2
    assert asyncio.run(checkpoints_exist(first, settings))
    assert not first.exists() and not second.exists()  # nothing written beside the output
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute(
            "select obj_description(oid, 'pg_namespace') from pg_namespace where nspname = %s",
            (schema_for(first),),
        ).fetchone()
    assert row is not None and row[0] == f"Personae checkpoints of {first.resolve()}"


@pytest.mark.parametrize(
    "value",
    [
        "postgresql://u:pw@[::1]:5432/db",
        "postgresql://u:pw@[::1]/db",
        "postgresql://h1:5432,h2:5433/db?sslmode=require&port=5432",
        "postgres://u:p%40ss@h/db?sslmode=verify-full",
        "postgresql:///db?host=/var/run/postgresql",
    ],
)
def test_well_formed_postgres_urls_pass_the_form_check(value: str) -> None:
    from personae.settings import check_checkpointer_spec

    assert check_checkpointer_spec(f"  {value} ") == value


def test_a_masked_setting_keeps_what_cannot_be_a_password() -> None:
    from personae.credentials import masked_setting

    assert masked_setting("postgresql://h:5432/db") == "postgresql://h:5432/db"
    assert masked_setting("postgresql://[::1]/db") == "postgresql://[::1]/db"
    assert masked_setting("postgresql://u:secret/db") == "postgresql://***/db"
    assert masked_setting("host=h password='a b' dbname=x") == "host=h password=*** dbname=x"


def _hold_write_lock(path: Path, seconds: float) -> threading.Timer:
    """Another connection's write transaction on ``path``, released after ``seconds``."""
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    other = sqlite3.connect(path, check_same_thread=False)
    other.execute("pragma journal_mode=wal")  # as every checkpointer opens it
    other.execute("create table if not exists held (x)")
    other.commit()
    other.execute("begin immediate")
    other.execute("insert into held values (1)")

    def done() -> None:
        other.commit()
        other.close()

    release = threading.Timer(seconds, done)
    release.start()
    return release


def test_a_sqlite_file_another_run_is_writing_is_waited_for(tmp_path: Path) -> None:
    """A short lock (another personae process committing) delays the run; nothing fails."""
    path = tmp_path / "out" / ".checkpoints.sqlite"
    release = _hold_write_lock(path, 1.0)

    async def run() -> int:
        async with open_checkpointer(path, load_settings({})) as saver:
            app = counter().compile(checkpointer=saver)
            return int((await app.ainvoke({"n": 1}, THREAD))["n"])

    try:
        assert asyncio.run(run()) == 2
    finally:
        release.join()


def test_a_sqlite_file_locked_past_the_wait_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from personae import checkpointers
    from personae.errors import InputError

    monkeypatch.setattr(checkpointers, "BUSY_SECONDS", 0.2)
    path = tmp_path / "out" / ".checkpoints.sqlite"
    release = _hold_write_lock(path, 1.0)  # past the 0.2 s wait; joined at the end

    async def run() -> None:
        async with open_checkpointer(path, load_settings({})) as saver:
            await counter().compile(checkpointer=saver).ainvoke({"n": 1}, THREAD)

    try:
        with pytest.raises(InputError) as raised:
            asyncio.run(run())
    finally:
        release.join()
    message = str(raised.value)
    assert str(path) in message and "locked for 0.2 s" in message
    assert "wait for it to finish" in message and "\n" not in message
