"""Suite-wide guards: no remote network, no real LLM, isolated caches and settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from personae.settings import VARIABLES
from personae.testing import block_remote_network, reset_runtime

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def _no_remote_network() -> Iterator[None]:
    with block_remote_network():
        yield


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
