"""The one place commands open a LangGraph checkpointer: SQLite beside the output, or Postgres.

``PERSONAE_CHECKPOINTER`` picks the backend for every command that checkpoints (``profile``,
``chat``, ``bookmarks act``/``bookmarks bench`` steps, ``arcane build-arcs``/``annotate``). ``sqlite`` (the
default) keeps each command's checkpoints in its own file, as before (``OUT/.checkpoints.sqlite``,
``MEMORY/chats.sqlite``, ...). A Postgres URL keeps them in that database instead, one schema
per file that SQLite would have used: the schema's name is a hash of that file's resolved path
(its comment names the path), so two output folders never share a thread, exactly as two
SQLite files would not, and a command's thread ids, listings and deletions need no change.
``kill -9`` and a rerun resume from Postgres as they do from the file.

Connections are made here and nowhere else; a database that cannot be reached is one line
naming the URL's host (never its password) and exit code 3.

A finished run needs only its last checkpoint (a rerun writes its files from it, a
``--force`` drops it): :func:`prune_finished` deletes the others, and the SQLite file is
compacted when the command closes it. A profile's checkpoints were ~100x the profile (3.3 MB
for 32 KB); ``--keep-checkpoints`` keeps them all (time travel, debugging).
"""

from __future__ import annotations

import contextlib
import hashlib
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.errors import ConfigurationError, InputError, RemoteError
from personae.settings import DEFAULT_CHECKPOINTER, Settings, check_checkpointer_spec

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.serde.base import SerializerProtocol

SCHEMA_PREFIX = "personae_"
"""Every checkpoint schema Personae makes starts with this (``\\dn personae_*`` lists them)."""
POSTGRES_EXTRA = "install the postgres extra: pip install 'personae[postgres]'"


BUSY_SECONDS = 30.0
"""How long a SQLite checkpointer waits for a file another connection is writing (another
``personae`` process on the same folder: the web page and the CLI, two ``bookmarks act`` runs). SQLite's
default is 5 s, which a busy machine exceeded between a run stopped at ``--max-calls`` and its
rerun (CI, stop 32)."""

_PRUNED: weakref.WeakSet[Any] = weakref.WeakSet()
"""SQLite savers a finished thread was pruned on: compacted (VACUUM) when closed."""


async def prune_finished(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """Keep only the latest checkpoint (per namespace) of the finished thread ``thread_id``.

    The state a rerun reads (``aget_state``) is the latest checkpoint's, so nothing a command
    does afterwards changes; the history (every superstep, every pending write) goes.
    """
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if not isinstance(saver, AsyncSqliteSaver):
        prune = getattr(saver, "aprune", None)
        if prune is not None:
            with contextlib.suppress(NotImplementedError):  # a thread of delta channels
                await prune([thread_id], strategy="keep_latest")
        return
    async with saver.lock:
        conn = saver.conn
        await conn.execute(
            "delete from checkpoints where thread_id = ? and checkpoint_id not in (select "
            "max(checkpoint_id) from checkpoints where thread_id = ? group by checkpoint_ns)",
            (thread_id, thread_id),
        )
        await conn.execute(
            "delete from writes where thread_id = ? and checkpoint_id not in "
            "(select checkpoint_id from checkpoints where thread_id = ?)",
            (thread_id, thread_id),
        )
        await conn.commit()
    _PRUNED.add(saver)


def uses_postgres(settings: Settings) -> bool:
    """Whether checkpoints go to Postgres (``PERSONAE_CHECKPOINTER`` is a URL)."""
    return check_checkpointer_spec(settings.checkpointer) != DEFAULT_CHECKPOINTER


def schema_for(sqlite_file: Path) -> str:
    """The Postgres schema standing for ``sqlite_file`` (a hash of its resolved path)."""
    digest = hashlib.sha256(str(sqlite_file.resolve()).encode()).hexdigest()[:24]
    return f"{SCHEMA_PREFIX}{digest}"


def describe_url(url: str) -> str:
    """``url`` without its user and password, for messages."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 - psycopg raises several kinds for a malformed URL
        return "the PERSONAE_CHECKPOINTER database"
    host = str(parts.get("host") or "localhost")
    port = parts.get("port")
    where = f"{host}:{port}" if port else host
    return f"Postgres at {where}/{parts.get('dbname') or ''}".rstrip("/")


async def checkpoints_exist(sqlite_file: Path, settings: Settings) -> bool:
    """Whether anything was ever checkpointed for ``sqlite_file`` (no file or schema is made)."""
    if not uses_postgres(settings):
        return sqlite_file.is_file()
    async with _connect(settings.checkpointer, None) as conn:
        cursor = await conn.execute(
            "select 1 from information_schema.tables where table_schema = %s "
            "and table_name = 'checkpoints'",
            (schema_for(sqlite_file),),
        )
        return await cursor.fetchone() is not None


@asynccontextmanager
async def open_checkpointer(
    sqlite_file: Path, settings: Settings, *, serde: SerializerProtocol | None = None
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The checkpointer standing for ``sqlite_file``, on one connection, ready to use.

    SQLite: that file (its folder is created). Postgres: the schema for it, created with the
    checkpoint tables on first use. ``serde`` replaces the saver's serializer (ARCANE's).

    Raises:
        ConfigurationError: ``PERSONAE_CHECKPOINTER`` is malformed, or Postgres is asked for
            without the ``postgres`` extra installed.
        RemoteError: the Postgres server cannot be reached or refuses the login.
        InputError: the SQLite file stayed locked by another connection for
            :data:`BUSY_SECONDS` (one line naming the file).
    """
    if not uses_postgres(settings):
        import sqlite3

        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        sqlite_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            async with aiosqlite.connect(sqlite_file, timeout=BUSY_SECONDS) as conn:
                sqlite_saver = AsyncSqliteSaver(conn)
                if serde is not None:
                    sqlite_saver.serde = serde
                await sqlite_saver.setup()  # a thread may be deleted (--force) before any run
                yield sqlite_saver
                if sqlite_saver in _PRUNED:  # give the pruned pages back to the file system
                    await conn.execute("vacuum")
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
            raise InputError(
                f"{sqlite_file} stayed locked for {BUSY_SECONDS:g} s: another personae run is "
                "writing its checkpoints; wait for it to finish, or give this run another folder"
            ) from None
        return
    async with _postgres_saver(settings.checkpointer, sqlite_file, serde) as saver:
        yield saver


@asynccontextmanager
async def _postgres_saver(
    url: str, sqlite_file: Path, serde: SerializerProtocol | None
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        raise ConfigurationError(
            "PERSONAE_CHECKPOINTER is a Postgres URL but langgraph-checkpoint-postgres is not "
            "installed",
            POSTGRES_EXTRA,
        ) from None
    schema = schema_for(sqlite_file)
    async with _connect(url, schema) as conn:
        await _create_schema(conn, schema, sqlite_file)
        saver = AsyncPostgresSaver(conn, serde=serde)
        await saver.setup()  # the tables and their migrations, in the schema
        yield saver


async def _create_schema(conn: Any, schema: str, sqlite_file: Path) -> None:
    """Create ``schema`` (twice at once is fine) with a comment naming the folder it stands for."""
    import psycopg
    from psycopg import sql

    with contextlib.suppress(psycopg.errors.UniqueViolation):  # a concurrent first run made it
        await conn.execute(sql.SQL("create schema if not exists {}").format(sql.Identifier(schema)))
    comment = f"Personae checkpoints of {sqlite_file.resolve()}"
    await conn.execute(
        sql.SQL("comment on schema {} is {}").format(sql.Identifier(schema), sql.Literal(comment))
    )


@asynccontextmanager
async def _connect(url: str, schema: str | None) -> AsyncIterator[Any]:
    """An autocommit connection as AsyncPostgresSaver wants it, searching ``schema`` first."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
        from psycopg.rows import DictRow, dict_row
    except ImportError:
        raise ConfigurationError(
            "PERSONAE_CHECKPOINTER is a Postgres URL but psycopg is not installed", POSTGRES_EXTRA
        ) from None
    try:
        options = str(conninfo_to_dict(url).get("options") or "")
        if schema is not None:
            options = f"{options} -c search_path={schema}".strip()
        conninfo = make_conninfo(url, options=options or None)
    except psycopg.ProgrammingError:
        raise ConfigurationError(
            "PERSONAE_CHECKPOINTER is not a valid Postgres URL",
            "write it as postgresql://user:password@host:5432/database",
        ) from None
    try:
        # Subscripted: ``connect`` returns ``Self``, which a checker reads as the class's default
        # row type (tuples) unless the class names the rows ``row_factory`` makes.
        conn = await psycopg.AsyncConnection[DictRow].connect(
            conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
    except psycopg.OperationalError as error:
        reason = " ".join(str(error).split()[:40]) or type(error).__name__
        raise RemoteError(
            f"cannot reach the checkpoint database ({describe_url(url)}): {reason}",
            "start the server or fix PERSONAE_CHECKPOINTER (unset: SQLite files)",
        ) from None
    async with conn:
        yield conn


async def describe_checkpointer(settings: Settings) -> str:
    """Where checkpoints will go, after one round trip to Postgres when it is a URL.

    What ``personae doctor`` checks before a run: every checkpointing command opens this.

    Raises:
        ConfigurationError: ``PERSONAE_CHECKPOINTER`` is malformed, or Postgres is asked for
            without the ``postgres`` extra installed.
        RemoteError: the Postgres server cannot be reached or refuses the login.
    """
    if not uses_postgres(settings):
        return "sqlite: one file beside each command's output"
    async with _connect(settings.checkpointer, None) as conn:
        await conn.execute("select 1")
    return f"{describe_url(settings.checkpointer)} answers"
