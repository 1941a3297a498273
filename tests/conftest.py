"""Suite-wide guards: no remote network, no real LLM, isolated caches and settings."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from personae.settings import VARIABLES
from personae.testing import block_remote_network, reset_model_overrides

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def _no_remote_network() -> Iterator[None]:
    with block_remote_network():
        yield


@pytest.fixture(autouse=True)
def _fresh_model_overrides() -> Iterator[None]:
    """Every test starts and ends with no injected model (personae.testing.override_models)."""
    reset_model_overrides()
    yield
    reset_model_overrides()
    embeddings = sys.modules.get("personae.memory.embeddings")  # loaded only by tests using it
    if embeddings is not None:
        embeddings.reset_embedding_overrides()


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
