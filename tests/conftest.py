"""Suite-wide guards: no remote network, no real LLM, isolated caches and settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from personae.llm_endpoint import forget_endpoints
from personae.testing import block_remote_network, reset_model_overrides

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def _no_remote_network() -> Iterator[None]:
    with block_remote_network():
        yield


@pytest.fixture(autouse=True)
def _fresh_model_overrides() -> Iterator[None]:
    """Every test starts and ends with no injected model (personae.testing.override_models),
    and no endpoint remembered (a loopback port a later test reuses is another server)."""
    reset_model_overrides()
    forget_endpoints()
    yield
    reset_model_overrides()
    forget_endpoints()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "PERSONAE_MODEL",
        "PERSONAE_FAST_MODEL",
        "PERSONAE_JUDGE_MODEL",
        "PERSONAE_EMBEDDINGS",
        "TAVILY_API_KEY",
        "TAVILY_BASE_URL",
        "CHROMA_HOST",
        "CHROMA_PORT",
    ):
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
