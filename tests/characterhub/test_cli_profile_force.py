"""`personae profile --force` profiles again; `PERSONAE_CACHE_TTL`/`--cache-ttl` expire pages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from profiler_world import fake_web, scripted_model

from personae.cli import main
from personae.loopback import LoopbackWebServer
from personae.testing import ScriptedChatModel, override_models

HOKUTO = "Fist of the North Star"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    web, _, _ = fake_web()
    with LoopbackWebServer(web.route) as running:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", running.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:cli-test")
        yield running


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    override_models(specs={"openai:cli-test": scripted})
    yield scripted


def profile(server: LoopbackWebServer, out: Path, *extra: str) -> int:
    argv = ["profile", "Kenshiro", "--franchise", HOKUTO, "--wiki", server.url, "--out", str(out)]
    return main([*argv, *extra])


def test_force_profiles_again_instead_of_reusing_the_checkpoint(
    server: LoopbackWebServer,
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert profile(server, tmp_path) == 0
    calls = len(model.calls)
    assert profile(server, tmp_path) == 0
    assert "already profiled" in capsys.readouterr().err and len(model.calls) == calls
    assert profile(server, tmp_path, "--force") == 0
    err = capsys.readouterr().err
    assert "already profiled" not in err and "Kenshiro: profile drafted" in err
    assert len(model.calls) == 2 * calls  # the whole run again


def test_force_in_a_batch_does_not_skip_done_characters(
    server: LoopbackWebServer,
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch = tmp_path / "batch.csv"
    batch.write_text(f"name,franchise,wiki\nKenshiro,{HOKUTO},{server.url}\n")
    argv = ["profile", "--batch", str(batch), "--out", str(tmp_path / "p")]
    assert main(argv) == 0
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("0 profiled, 1 already done")
    assert main([*argv, "--force"]) == 0
    assert capsys.readouterr().out.startswith("1 profiled, 0 already done")


def wiki_requests(server: LoopbackWebServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("api.php"))


@pytest.mark.parametrize("expire", ["env", "flag"])
def test_cache_ttl_fetches_old_pages_again(
    server: LoopbackWebServer,
    model: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    expire: str,
) -> None:
    assert profile(server, tmp_path) == 0
    first = wiki_requests(server)
    assert profile(server, tmp_path, "--force") == 0
    assert wiki_requests(server) == first  # every wiki page came from the cache
    if expire == "env":
        monkeypatch.setenv("PERSONAE_CACHE_TTL", "0s")
        assert profile(server, tmp_path, "--force") == 0
    else:
        assert profile(server, tmp_path, "--force", "--cache-ttl", "0") == 0
    assert wiki_requests(server) >= 2 * first  # all expired: fetched again (repeats too)


def test_a_bad_cache_ttl_is_one_line(
    server: LoopbackWebServer,
    model: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PERSONAE_CACHE_TTL", "a week")
    assert profile(server, tmp_path) == 2
    assert capsys.readouterr().err.strip() == (
        "personae: error: PERSONAE_CACHE_TTL='a week' is not a duration; "
        "set PERSONAE_CACHE_TTL to seconds or 30m, 12h, 7d"
    )
    assert model.calls == []
