"""The fakes answer with the real services' shapes, so clients tested against them are honest."""

from __future__ import annotations

import httpx
from fake_web import FakeMediaWiki, FakeTavily, FakeWeb

from personae.loopback import LoopbackWebServer

API = {"format": "json", "formatversion": "2"}


def test_mediawiki_shapes() -> None:
    wiki = FakeMediaWiki(
        {
            "Toki": "<p>Toki heals.</p><h2>History<span class='mw-editsection'>[edit]</span></h2><p>Old.</p>"
        },
        redirects={"Toki_(Hokuto)": "Toki"},
        sitename="Hokuto Wiki",
    )
    with LoopbackWebServer(FakeWeb(wikis={"/hokuto": wiki}).route) as server:
        api = server.url + "/hokuto/api.php"
        info = httpx.get(api, params={"action": "query", "meta": "siteinfo", **API}).json()[
            "query"
        ]["general"]
        parsed = httpx.get(
            api, params={"action": "parse", "page": "Toki (Hokuto)", "redirects": "1", **API}
        ).json()
        missing = httpx.get(api, params={"action": "parse", "page": "Jagi", **API}).json()
        hits = httpx.get(
            api, params={"action": "query", "list": "search", "srsearch": "heals", **API}
        ).json()
        article = httpx.get(server.url + "/hokuto/wiki/Toki_(Hokuto)", follow_redirects=True)
    assert info["sitename"] == "Hokuto Wiki" and info["generator"].startswith("MediaWiki")
    assert info["server"] + info["articlepath"] == server.url + "/hokuto/wiki/$1"
    page = parsed["parse"]
    assert page["title"] == "Toki" and page["redirects"] == [
        {"from": "Toki (Hokuto)", "to": "Toki"}
    ]
    assert page["text"].startswith('<div class="mw-parser-output">')
    assert [(s["line"], s["level"], s["anchor"]) for s in page["sections"]] == [
        ("History", "2", "History")
    ]
    assert missing["error"]["code"] == "missingtitle"
    assert hits["query"]["search"][0]["title"] == "Toki"
    assert '<span class="searchmatch">heals</span>' in hits["query"]["search"][0]["snippet"]
    assert article.url.path == "/hokuto/wiki/Toki" and 'id="firstHeading"' in article.text


def test_tavily_shapes_auth_filters_and_failures() -> None:
    tavily = FakeTavily(
        {
            "toki": [
                {"url": "https://a.fandom.com/x", "title": "A", "content": "a"},
                {"url": "https://b.org/y"},
            ]
        },
        api_key="tvly-1",
    )
    with LoopbackWebServer(FakeWeb(tavily=tavily).route) as server:
        auth = {"Authorization": "Bearer tvly-1"}
        ok = httpx.post(
            server.url + "/search",
            json={"query": "toki", "include_domains": ["fandom.com"]},
            headers=auth,
        )
        denied = httpx.post(server.url + "/search", json={"query": "toki"})
        too_long = httpx.post(server.url + "/search", json={"query": "x" * 401}, headers=auth)
        tavily.fail_next(1, 429, retry_after="2")
        limited = httpx.post(server.url + "/search", json={"query": "toki"}, headers=auth)
    body = ok.json()
    assert body["query"] == "toki" and [r["url"] for r in body["results"]] == [
        "https://a.fandom.com/x"
    ]
    assert set(body["results"][0]) == {"url", "title", "content", "score", "raw_content"}
    assert denied.status_code == 401 and too_long.status_code == 400
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "2"
    assert [q["query"] for q in tavily.queries] == ["toki"]
