"""Hostile search results and over-size pages through `personae profile`: dropped or skipped,
counted or noticed, never a traceback and never the end of the run."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_web import FakeMediaWiki, FakeTavily, FakeWeb
from profiler_world import KENSHIRO, hokuto_wiki, scripted_model, web_results

from personae.cli import main
from personae.graphs.characterhub import sources as profiler_sources
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import paths_for
from personae.testing import override_models
from personae.tools.http import PoliteHttpClient

HOKUTO = "Fist of the North Star"
CAP = 50_000
"""The size cap the tests give the profiler's HTTP client (the default is 5 MB)."""
HOSTILE = [
    {"url": "http://a.com:99999/x", "title": "Bad port", "content": "Kenshiro port."},
    {"url": "http://[::1/x", "title": "Unclosed bracket", "content": "Kenshiro bracket."},
    5,
    None,
    "https://example.org/a-bare-string",
    ["https://example.org/a-list"],
    {"url": 7, "title": "A number", "content": "Kenshiro number."},
    {"title": "No URL", "content": "Kenshiro nothing."},
]
"""Eight result items no source may come from (seven are not even well-formed)."""


class HostileTavily(FakeTavily):
    """Tavily whose every answer also carries the hostile items (after the real ones)."""

    def __init__(self, extra_results: list[dict[str, Any]]) -> None:
        super().__init__(web_results, api_key="tvly-test")
        self.extra_results = extra_results

    def _answer(self, payload: dict[str, Any]) -> dict[str, Any]:
        answer = super()._answer(payload)
        answer["results"] += [*self.extra_results, *HOSTILE]
        return answer


@pytest.fixture
def capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        profiler_sources, "PoliteHttpClient", functools.partial(PoliteHttpClient, max_bytes=CAP)
    )
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    monkeypatch.setenv("PERSONAE_MODEL", "openai:cli-test")
    override_models(specs={"openai:cli-test": scripted_model(score=0.9)})


@contextmanager
def serve(monkeypatch: pytest.MonkeyPatch, wiki: FakeMediaWiki) -> Iterator[LoopbackWebServer]:
    huge = "<html><body><article>" + "<p>Kenshiro walks on.</p>" * 3000 + "</article></body></html>"
    with LoopbackWebServer(lambda request: routes.route(request)) as server:
        extra = [{"url": f"{server.url}/huge-page", "title": "A huge page", "content": ""}]
        routes = FakeWeb(tavily=HostileTavily(extra), wiki=wiki, pages={"/huge-page": huge})
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        yield server


def profile(server: LoopbackWebServer, out: Path) -> int:
    argv = ["profile", "Kenshiro", "--franchise", HOKUTO, "--wiki", server.url, "--out", str(out)]
    return main([*argv, "--max-rounds", "1"])


def test_hostile_results_are_dropped_counted_and_reported(
    capped: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve(monkeypatch, hokuto_wiki()) as server:
        assert profile(server, tmp_path) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    paths = paths_for(tmp_path, "Kenshiro", HOKUTO)
    document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    web_searches = sum(1 for s in document["rounds"][0]["queries"])
    assert document["usage"]["results_dropped"] == len(HOSTILE) * web_searches
    urls = {s["url"] for s in document["sources"]}
    assert not any(":99999" in u or "[::1" in u or "a-bare-string" in u for u in urls)
    assert f"{len(HOSTILE) * web_searches} web search results dropped" in err
    assert "## Dropped search results" in paths.profile_md.read_text(encoding="utf-8")
    # The over-size result page is skipped with a notice saying why, once per profile.
    [skipped] = [n for n in document["notices"] if "huge-page" in n]
    assert skipped.startswith("skipped a search result: http://")
    assert skipped.endswith(f"huge-page is larger than the {CAP:,}-byte size cap")
    assert err.count("huge-page") == 1
    assert not any("huge-page" in u for u in urls)


@pytest.mark.endtoend
def test_an_over_size_character_page_is_skipped_and_the_profile_goes_on(
    capped: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wiki = hokuto_wiki()
    wiki.pages["Kenshiro"] = KENSHIRO + "<p>Kenshiro walks on.</p>" * 3000  # over the cap
    with serve(monkeypatch, wiki) as server:
        assert profile(server, tmp_path) == 0
    err = capsys.readouterr().err
    assert "try again later" not in err and "Traceback" not in err
    document = json.loads(
        paths_for(tmp_path, "Kenshiro", HOKUTO).profile_json.read_text(encoding="utf-8")
    )
    [notice] = [n for n in document["notices"] if n.startswith("skipped Kenshiro's")]
    assert f"larger than the {CAP:,}-byte size cap" in notice
    assert document["wiki_page"] is None and document["sources"]  # searches still found pages
