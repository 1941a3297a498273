"""TavilySearch and page-text extraction against a loopback Tavily (FakeTavily)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_web import FakeTavily, FakeWeb

from personae.errors import ConfigurationError, InputError, RemoteError
from personae.loopback import LoopbackWebServer, WebResponse
from personae.settings import load_settings
from personae.tools.evidence import Evidence
from personae.tools.http import PoliteHttpClient
from personae.tools.page_text import extract_main_text
from personae.tools.web_search import (
    TavilySearch,
    normalize_url,
    prepare_query,
    split_site_operators,
)

UA = "Personae-test/0.1 (+https://example.org)"
ARTICLE = """<html><head><script>var x = "tracking";</script></head><body>
<header><nav><a href="/">Home</a> <a href="/about">About us and our many menus</a></nav></header>
<div class="sidebar"><p>Short ad</p></div>
<div class="content"><h1>Toki of Hokuto</h1>
<p>Toki is the second of the four Hokuto brothers and a gifted healer of the wasteland.</p>
<p>He was exposed to fallout while shielding Kenshiro and Yuria in a shelter.</p></div>
<footer><p>Copyright 2024 Example Media Group, all rights reserved worldwide.</p></footer>
<form><p>Subscribe to our newsletter for weekly updates on anime.</p></form></body></html>"""


def test_extract_main_text_keeps_paragraphs_drops_chrome() -> None:
    text = extract_main_text(ARTICLE)
    assert text.splitlines() == [
        "Toki is the second of the four Hokuto brothers and a gifted healer of the wasteland.",
        "He was exposed to fallout while shielding Kenshiro and Yuria in a shelter.",
    ]
    assert "Copyright" not in text and "newsletter" not in text and "tracking" not in text
    capped = extract_main_text(ARTICLE, max_chars=40)
    assert len(capped) <= 40 and capped == "Toki is the second of the four Hokuto"


def test_query_preparation() -> None:
    long_query = "Toki " + "healer " * 100
    text, domains = prepare_query(long_query)
    assert len(text) <= 400 and text.endswith("healer") and not text.endswith(" ")
    assert split_site_operators("Toki site:hokuto.fandom.com personality -site:reddit.com") == (
        "Toki personality",
        ["hokuto.fandom.com"],
    )
    with pytest.raises(InputError, match="is empty"):
        prepare_query("site:hokuto.fandom.com")
    assert (
        normalize_url("HTTPS://Hokuto.Fandom.com:443/wiki/Toki/#History")
        == "https://hokuto.fandom.com/wiki/Toki"
    )
    assert normalize_url("http://a.org:8080/x?y=1") == "http://a.org:8080/x?y=1"


@pytest.fixture
def tavily_server() -> Iterator[tuple[LoopbackWebServer, FakeTavily]]:
    results: dict[str, list[dict[str, Any]]] = {}
    fake = FakeTavily(lambda payload: results.get(payload["query"], []), api_key="tvly-good")
    web = FakeWeb(tavily=fake, pages={"/toki-article": ARTICLE, "/gone": WebResponse(404, "no")})
    with LoopbackWebServer(web.route) as server:
        base = server.url
        results["Toki personality"] = [
            {
                "url": "https://hokuto.fandom.com/wiki/Toki",
                "title": "Toki | Hokuto Wiki",
                "content": "Toki is calm.",
            },
            {
                "url": "https://reddit.com/r/Hokuto/toki",
                "title": "Toki thread",
                "content": "Toki best brother.",
            },
            {
                "url": "https://hokuto.fandom.com/wiki/Raoh",
                "title": "Raoh",
                "content": "Raoh is Toki's brother.",
            },
        ]
        results["Toki hostile"] = [
            {"url": "javascript:alert(document.cookie)", "title": "X", "content": "Toki js."},
            {"url": "data:text/html,<script>x</script>", "title": "D", "content": "Toki data."},
            {"url": "file:///etc/passwd", "title": "F", "content": "Toki file."},
            {"url": "JavaScript://hokuto.fandom.com/%0aalert(1)", "title": "J", "content": "Toki."},
            {"url": "https://example.org/fine", "title": "Fine", "content": "Toki is kind."},
        ]
        results["Toki healer"] = [
            {"url": f"{base}/toki-article", "title": "Toki article", "content": ""},
            {"url": f"{base}/gone", "title": "Gone", "content": ""},
            {"url": "http://127.0.0.2:9/private", "title": "Private", "content": ""},
            {"url": "https://example.org/ok", "title": "Ok", "content": "Toki heals the sick."},
        ]
        yield server, fake


def client_for(server: LoopbackWebServer, **kw: Any) -> PoliteHttpClient:
    return PoliteHttpClient(
        user_agent=UA, cache_dir=None, allowed_hosts=[server.url.split("//")[1]], **kw
    )


async def test_search_sends_clean_query_and_filters(
    tavily_server: tuple[LoopbackWebServer, FakeTavily],
) -> None:
    server, fake = tavily_server
    async with client_for(server) as http:
        search = TavilySearch(
            api_key="tvly-good", base_url=server.url, http=http, search_depth="advanced"
        )
        found = await search.search(
            "Toki personality site:fandom.com",
            max_results=5,
            exclude_urls=["HTTPS://hokuto.fandom.com/wiki/Raoh/#Trivia"],
        )
    sent = fake.queries[-1]
    assert sent["query"] == "Toki personality" and sent["include_domains"] == ["fandom.com"]
    assert sent["search_depth"] == "advanced"
    # reddit is dropped by include_domains, Raoh by exclude_urls
    assert [(e.url, e.content, e.origin, e.query) for e in found] == [
        (
            "https://hokuto.fandom.com/wiki/Toki",
            "Toki is calm.",
            "web",
            "Toki personality site:fandom.com",
        )
    ]
    assert search.searches == 1 and search.credits_used == 2
    assert server.requests[-1].headers["Authorization"] == "Bearer tvly-good"


async def test_missing_content_fetched_from_allowed_or_public_hosts_only(
    tavily_server: tuple[LoopbackWebServer, FakeTavily],
) -> None:
    server, _ = tavily_server
    async with client_for(server) as http:
        search = TavilySearch(api_key="tvly-good", base_url=server.url, http=http)
        found = await search.search("Toki healer", max_results=5)
    by_title = {e.title: e.content for e in found}
    assert by_title["Toki article"].startswith("Toki is the second of the four Hokuto brothers")
    assert "Copyright" not in by_title["Toki article"]
    assert by_title["Ok"] == "Toki heals the sick."
    assert "Gone" not in by_title and "Private" not in by_title  # 404 and private host give nothing
    assert not any(r.path == "/private" for r in server.requests)
    assert search.pages_fetched == 1 and search.credits_used == 1


async def test_invalid_key_is_a_configuration_error(
    tavily_server: tuple[LoopbackWebServer, FakeTavily],
) -> None:
    server, _ = tavily_server
    async with client_for(server) as http:
        search = TavilySearch(api_key="tvly-wrong", base_url=server.url, http=http)
        with pytest.raises(ConfigurationError, match="TAVILY_API_KEY is invalid"):
            await search.search("Toki personality")
    assert search.credits_used == 0
    with pytest.raises(ConfigurationError, match="TAVILY_API_KEY is not set"):
        TavilySearch(api_key=None, http=http)
    settings = load_settings({"TAVILY_API_KEY": "tvly-x", "TAVILY_BASE_URL": server.url + "/"})
    configured = TavilySearch.from_settings(settings, http=http, search_depth="advanced")
    assert (configured.api_key, configured.base_url) == ("tvly-x", server.url)


async def test_rate_limit_retried_then_reported(
    tavily_server: tuple[LoopbackWebServer, FakeTavily],
) -> None:
    server, fake = tavily_server
    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    async with client_for(server, sleep=record, max_retries=2) as http:
        search = TavilySearch(api_key="tvly-good", base_url=server.url, http=http)
        fake.fail_next(2, 429, retry_after="1")
        assert len(await search.search("Toki personality")) == 3
        assert slept == [1.0, 1.0]
        fake.fail_next(3, 429)
        with pytest.raises(RemoteError, match="Tavily usage limit exceeded"):
            await search.search("Toki personality")
        fake.fail_next(1, 432)
        with pytest.raises(RemoteError, match="plan limit"):
            await search.search("Toki personality")
    assert search.searches == 1


async def test_cached_searches_cost_nothing(
    tavily_server: tuple[LoopbackWebServer, FakeTavily], tmp_path: Any
) -> None:
    server, fake = tavily_server

    async def run() -> TavilySearch:
        async with PoliteHttpClient(
            user_agent=UA, cache_dir=tmp_path, allowed_hosts=[server.url.split("//")[1]]
        ) as http:
            search = TavilySearch(api_key="tvly-good", base_url=server.url, http=http, cache=True)
            assert len(await search.search("Toki personality")) == 3
            return search

    await run()
    search = await run()
    assert len(fake.queries) == 1 and search.credits_used == 0


async def test_raw_content_of_the_top_results_capped_in_text_not_in_count() -> None:
    long_page = "Toki heals the sick. " * 400
    rows = [
        {"url": f"https://example.org/{i}", "title": f"T{i}", "content": f"snippet {i}"}
        for i in range(4)
    ]
    rows[0]["raw_content"] = long_page
    rows[1]["raw_content"] = "Toki was born in the Hokuto clan."
    rows[2]["raw_content"] = "never used: not a top result"
    fake = FakeTavily(lambda _payload: rows, api_key="tvly-good")
    with LoopbackWebServer(FakeWeb(tavily=fake).route) as server:
        async with client_for(server) as http:
            search = TavilySearch(
                api_key="tvly-good",
                base_url=server.url,
                http=http,
                search_depth="advanced",
                raw_content_results=2,
                max_content_chars=500,
            )
            found = await search.search("Toki", max_results=4)
    assert fake.queries[0]["include_raw_content"] is True
    assert [e.content[:12] for e in found] == [
        "Toki heals t",
        "Toki was bor",
        "snippet 2",
        "snippet 3",
    ]
    assert 450 < len(found[0].content) <= 500  # the text is capped, every result kept
    assert search.credits_used == 2


async def test_non_web_result_urls_never_become_sources(
    tavily_server: tuple[LoopbackWebServer, FakeTavily],
) -> None:
    server, _ = tavily_server
    async with client_for(server) as http:
        search = TavilySearch(api_key="tvly-good", base_url=server.url, http=http)
        found = await search.search("Toki hostile", max_results=5)
    assert [e.url for e in found] == ["https://example.org/fine"]
    assert search.results_dropped == 4  # counted, not silent
    with pytest.raises(ValueError, match="must be http"):
        Evidence(url="javascript:alert(1)", title="t", content="c", origin="web", query="q")
