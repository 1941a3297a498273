"""`personae profile` when the network fails: exit 3 (not bad input), notices on every output."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_web import FakeTavily
from profiler_world import fake_web, scripted_model

from personae.cli import main
from personae.graphs.characterhub import sources as profiler_sources
from personae.loopback import LoopbackWebServer, free_port
from personae.memory.characterhub.profile_store import paths_for
from personae.testing import override_models
from personae.tools.http import PoliteHttpClient

HOKUTO = "Fist of the North Star"


async def _no_sleep(seconds: float) -> None:
    return None


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LoopbackWebServer, FakeTavily]]:
    monkeypatch.setattr(
        profiler_sources, "PoliteHttpClient", functools.partial(PoliteHttpClient, sleep=_no_sleep)
    )
    override_models(specs={"openai:cli-test": scripted_model(score=0.9)})
    web, _, tavily = fake_web()
    with LoopbackWebServer(web.route) as server:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:cli-test")
        yield server, tavily


def test_unreachable_wiki_is_a_remote_failure_not_bad_input(
    world: tuple[LoopbackWebServer, FakeTavily],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    offline = f"http://127.0.0.1:{free_port()}"
    code = main(["profile", "Kenshiro", "--wiki", offline, "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3
    assert err[-1].startswith("personae: error: cannot reach 127.0.0.1:")
    assert "not a MediaWiki" not in err[-1]
    assert not list(tmp_path.rglob("profile.json"))


def test_a_wiki_address_without_its_scheme_is_one_line_naming_it(
    world: tuple[LoopbackWebServer, FakeTavily],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    given = "hokuto.fandom.com/wiki/Kenshiro"
    code = main(["profile", "Kenshiro", "--wiki", given, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"personae: error: the wiki URL '{given}' is not an http(s) URL")
    assert "https://hokuto.fandom.com" in err


def test_failed_web_searches_reach_the_terminal_json_and_markdown(
    world: tuple[LoopbackWebServer, FakeTavily],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, tavily = world
    tavily.fail_next(1000, 432)
    argv = ["profile", "Kenshiro", "--franchise", HOKUTO, "--wiki", f"{server.url}/wiki/Raoh"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    paths = paths_for(tmp_path, "Kenshiro", HOKUTO)
    document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    article = f"--wiki {server.url}/wiki/Raoh is an article; using its wiki {server.url}"
    failed = "round 1: 7 of 7 web searches failed (Tavily plan limit reached (HTTP 432)"
    assert document["notices"][0] == article
    assert document["notices"][1].startswith(failed)
    assert document["usage"]["failed_searches"] == 7
    assert f"Kenshiro: notice: {failed}" in err and f"Kenshiro: notice: {article}" in err
    markdown = paths.profile_md.read_text(encoding="utf-8")
    assert "> **Notices**" in markdown and "7 of 7 web searches failed" in markdown


def test_a_wiki_answering_503_is_exit_3_with_the_status_not_bad_input(
    world: tuple[LoopbackWebServer, FakeTavily],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    web, wiki, _ = fake_web()
    wiki.fail_next(1000, 503)
    with LoopbackWebServer(web.route) as failing:
        code = main(["profile", "Kenshiro", "--wiki", failing.url, "--out", str(tmp_path)])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 3 and "not a MediaWiki" not in last
    assert last.startswith(f"personae: error: {failing.url} is failing: ") and "HTTP 503" in last
    assert not list(tmp_path.rglob("profile.json"))
