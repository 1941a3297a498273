"""A throwaway PostgreSQL server on loopback: what the Postgres checkpoint tests run against.

`.ci/run` starts one with ``python tests/postgres_world.py start DIR`` (Debian's ``postgresql``
package: the machine image has it, ``apt-get install postgresql`` otherwise), exports the URL it
prints as ``PERSONAE_TEST_POSTGRES_URL`` and stops it afterwards. Without that variable the
``postgres_url`` fixture starts its own from the same binaries when they are installed, and skips
with the reason when they are not. Under CI (``CI=true``) a missing server fails instead:
CI must run these tests.

The cluster lives in DIR (data, socket, log), trusts local connections, listens on 127.0.0.1
only, on a free port. ``initdb`` refuses to run as root, so as root it runs as the ``postgres``
user the Debian package creates.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

URL_VARIABLE = "PERSONAE_TEST_POSTGRES_URL"
NO_SERVER = (
    "no PostgreSQL server: set PERSONAE_TEST_POSTGRES_URL, or install PostgreSQL's binaries "
    "(apt-get install postgresql) so the tests start one; .ci/run starts one"
)


def binary(name: str) -> str | None:
    """``name`` (initdb, pg_ctl) from PATH or Debian's ``/usr/lib/postgresql/<version>/bin``."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return candidates[0] if candidates else None


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(folder: Path) -> str:
    """Start a fresh cluster in ``folder``; its URL. Raises RuntimeError without binaries."""
    initdb, pg_ctl = binary("initdb"), binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError(NO_SERVER)
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        folder.chmod(0o700)
        for parent in folder.parents:  # the server user must reach its folder
            if parent.stat().st_mode & 0o001 == 0:
                parent.chmod(parent.stat().st_mode | 0o001)
    data = folder / "data"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True}
    done = subprocess.run(
        _as_server_user([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        check=False,
        **quiet,  # type: ignore[call-overload]
    )
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stderr.strip()}")
    port = _free_port()
    settings = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={folder}"
    argv = [pg_ctl, "-D", str(data), "-l", str(folder / "log"), "-o", settings, "-w", "start"]
    done = subprocess.run(_as_server_user(argv), check=False, **quiet)  # type: ignore[call-overload]
    if done.returncode != 0:
        log = (folder / "log").read_text() if (folder / "log").exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()} {log[-500:]}")
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    _wait_ready(port)
    return url


def _wait_ready(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"PostgreSQL did not listen on port {port} within {timeout} s")


def stop(folder: Path) -> None:
    """Stop the cluster in ``folder`` (fast shutdown) and delete it."""
    pg_ctl = binary("pg_ctl")
    if pg_ctl is not None and (folder / "data").is_dir():
        argv = [pg_ctl, "-D", str(folder / "data"), "-m", "fast", "-w", "stop"]
        subprocess.run(_as_server_user(argv), check=False, capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    command, where = sys.argv[1], Path(sys.argv[2])
    if command == "start":
        sys.stdout.write(start(where) + "\n")
    else:
        stop(where)


def fresh_database(server_url: str) -> str:
    """A new empty database on the server at ``server_url``; its URL."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg
    from psycopg import sql

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
