"""Suite-wide guards: no remote network, no real LLM, isolated caches, settings and folders."""

from __future__ import annotations

import gc
import os
import resource
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from personae.settings import VARIABLES
from personae.testing import block_remote_network, reset_runtime

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def _no_remote_network() -> Iterator[None]:
    with block_remote_network():
        yield


_SESSION_FOLDER = pytest.StashKey[tuple[str, Path]]()
"""Where pytest started and the empty folder the session runs in instead."""


def pytest_sessionstart(session: pytest.Session) -> None:
    """The whole session, from collection on, runs in an empty folder of its own.

    Why: the commands' default folders (``profiles/``, ``personas/``, ``data/``, ``runs/``,
    a web job's ``.web-jobs``) are relative to the working directory. Run from a checkout
    where the Getting started tour has run, a test that left one default in place read the
    tour's personas (issue 34). What test modules do on import (a LangGraph server module makes
    ``.langgraph_api``), module-scoped servers and any child process started without its own
    ``cwd`` land here; each test then gets its own (:func:`_test_in_an_empty_folder`). Tests
    reach the checkout's files by absolute paths (``ROOT``). pytest itself resolves its
    arguments against where it started, not the working directory.
    """
    folder = Path(tempfile.mkdtemp(prefix="personae-tests-cwd-"))
    session.stash[_SESSION_FOLDER] = (os.getcwd(), folder)
    os.chdir(folder)


@pytest.hookimpl(trylast=True)  # after the session's fixtures are torn down (servers stopped)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Back to where pytest started; the session's folder goes (each test's ``tmp_path`` stays)."""
    started_in, folder = session.stash[_SESSION_FOLDER]
    os.chdir(started_in)
    shutil_rmtree(folder)


@pytest.fixture(autouse=True)
def _test_in_an_empty_folder(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test starts in an empty working directory of its own (beside, not inside, its
    ``tmp_path``: many tests check that ``tmp_path`` holds exactly what they wrote), so what
    one test's defaults write is never what another's read."""
    _, session_folder = request.session.stash[_SESSION_FOLDER]
    monkeypatch.chdir(tempfile.mkdtemp(dir=session_folder))


@pytest.fixture(autouse=True)
def _fresh_runtime() -> Iterator[None]:
    """Every test starts and ends with a fresh process's caches and registries (no injected
    model, no cached storyline, bank, Chroma client...): personae.testing.reset_runtime."""
    reset_runtime()
    yield
    reset_runtime()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in VARIABLES:  # every variable Personae reads: a developer's shell must not leak in
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(tmp_path / "cache"))
    # A scripted model that raises ConnectionError fails at once, not after two minutes of
    # backoff; the retry tests set their own budget.
    monkeypatch.setenv("PERSONAE_LLM_RETRY_SECONDS", "0")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    monkeypatch.setenv("LANGSMITH_TRACING", "false")


@pytest.fixture
def shared_dir() -> Path:
    """The ``../shared`` folder; tests using it skip when it is absent (a user's fresh clone)."""
    if not SHARED.is_dir():
        pytest.skip("../shared is absent (it only exists on developer machines and in CI)")
    return SHARED


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server's URL: .ci/run's (``PERSONAE_TEST_POSTGRES_URL``), else one started
    from the local binaries for the session; skipped without either (failed under CI)."""
    import os
    import tempfile

    from postgres_world import NO_SERVER, URL_VARIABLE, binary, start, stop

    given = os.environ.get(URL_VARIABLE, "").strip()
    if given:
        yield given
        return
    if binary("initdb") is None or binary("pg_ctl") is None:
        if os.environ.get("CI"):
            pytest.fail(f"{NO_SERVER} (CI must run the Postgres tests)")
        pytest.skip(NO_SERVER)
    folder = Path(tempfile.mkdtemp(prefix="personae-pg-")) / "cluster"
    try:
        url = start(folder)
    except RuntimeError as error:
        shutil_rmtree(folder.parent)
        if os.environ.get("CI"):
            pytest.fail(str(error))
        pytest.skip(f"cannot start PostgreSQL here: {error}")
    yield url
    stop(folder)
    shutil_rmtree(folder.parent)


@pytest.fixture
def postgres_url(postgres_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty database on :func:`postgres_server`, set as ``PERSONAE_CHECKPOINTER``."""
    from postgres_world import fresh_database

    url = fresh_database(postgres_server)
    monkeypatch.setenv("PERSONAE_CHECKPOINTER", url)
    return url


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Leave what importing the test modules made out of the garbage collector's full passes.

    Hundreds of thousands of long-lived objects (LangChain, pydantic, Chroma, OpenAI types)
    were scanned again by every full collection: about 2 % of the suite's CPU. Objects a test
    makes are collected as before.
    """
    gc.collect()
    gc.freeze()


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked ``endtoend`` is also ``slow``: the edit loop (``-m "not slow"``) skips
    whole benchmark and recipe runs; ``scripts/test`` runs them in its in-process half."""
    for item in items:
        if item.get_closest_marker("endtoend") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-report",
        type=int,
        default=0,
        metavar="N",
        help="print the N tests and files that cost the most CPU (setup, call and teardown)",
    )


_CPU: dict[str, float] = {}
_SYSTEM: dict[str, float] = {}


def _cpu_seconds() -> tuple[float, float]:
    """CPU (user + system, and system alone) of this process and of the child processes it
    has waited for."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    system = mine.ru_stime + children.ru_stime
    return mine.ru_utime + children.ru_utime + system, system


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Per-test CPU (this process's threads and the processes a test ran and waited for)."""
    if not item.config.getoption("--cpu-report"):
        yield
        return
    total, system = _cpu_seconds()
    yield
    after, system_after = _cpu_seconds()
    _CPU[item.nodeid], _SYSTEM[item.nodeid] = after - total, system_after - system


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    top = config.getoption("--cpu-report")
    if not top or not _CPU:
        return
    files: dict[str, float] = {}
    for nodeid, seconds in _CPU.items():
        files[nodeid.split("::")[0]] = files.get(nodeid.split("::")[0], 0.0) + seconds
    write = terminalreporter.write_line
    write(
        f"CPU in tests: {sum(_CPU.values()):.1f} s ({sum(_SYSTEM.values()):.1f} s system) "
        f"over {len(_CPU)} tests"
    )
    tables = (("tests", _CPU), ("files", files), ("tests in system time", _SYSTEM))
    for title, table in tables:
        write(f"the {top} costliest {title} (CPU seconds):")
        for name, seconds in sorted(table.items(), key=lambda kv: -kv[1])[:top]:
            write(f"{seconds:8.2f}  {name}")
