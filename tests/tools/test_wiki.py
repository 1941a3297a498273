"""MediaWikiClient and wiki discovery against a loopback FakeMediaWiki (real HTTP, real parser)."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

import pytest
from fake_web import FakeMediaWiki, FakeWeb

from personae.errors import InputError, RemoteError
from personae.loopback import LoopbackWebServer, WebResponse, free_port
from personae.tools.evidence import Evidence
from personae.tools.http import PoliteHttpClient
from personae.tools.wiki import (
    AmbiguousCharacterError,
    MediaWikiClient,
    NotAMediaWikiSite,
    WikiPageNotFound,
)
from personae.tools.wiki_discovery import discover_wiki, fandom_slugs, open_wiki, slugs_from_urls

FIXTURES = Path(__file__).parent / "fixtures"
UA = "Personae-test/0.1 (+https://example.org)"


def hokuto_wiki() -> FakeMediaWiki:
    return FakeMediaWiki(
        {
            "Kenshiro": (FIXTURES / "kenshiro_fragment.html").read_text(encoding="utf-8"),
            "Raoh": (FIXTURES / "raoh_legacy_page.html").read_text(encoding="utf-8"),
            "Ken": (FIXTURES / "ken_disambiguation_fragment.html").read_text(encoding="utf-8"),
            "Ken Masters": "<p><b>Ken Masters</b> is a fighter from <i>Street Fighter</i> and Ryu's rival.</p>",
            "Toki": "<p>Toki is a healer and the second Hokuto brother.</p><h2>Personality</h2><p>Calm and kind.</p>",
        },
        redirects={"Kenshirō": "Kenshiro", "Ken-oh": "Raoh"},
        sitename="Hokuto no Ken Wiki",
    )


@pytest.fixture
def wiki_server() -> Iterator[tuple[LoopbackWebServer, FakeMediaWiki]]:
    wiki = hokuto_wiki()
    web = FakeWeb(wiki=wiki, pages={"/plain": "<html><body>not a wiki</body></html>"})
    with LoopbackWebServer(web.route) as server:
        yield server, wiki


def http_for(server: LoopbackWebServer, cache: Path | None = None) -> PoliteHttpClient:
    return PoliteHttpClient(
        user_agent=UA, cache_dir=cache, allowed_hosts=[server.url.split("//")[1]]
    )


async def test_redirect_followed_and_page_url_built(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki],
) -> None:
    server, wiki = wiki_server
    async with http_for(server) as http:
        client = MediaWikiClient(server.url, http=http)
        page = await client.find_character_page("Kenshirō", "Fist of the North Star")
    assert page.title == "Kenshiro" and page.url == f"{server.url}/wiki/Kenshiro"
    assert page.infobox_dict()["Name in Kanji"] == "ケンシロウ"
    assert wiki.calls[0]["meta"] == "siteinfo"  # endpoint confirmed before use
    parse_call = next(c for c in wiki.calls if c.get("action") == "parse")
    assert parse_call["redirects"] == "1" and parse_call["formatversion"] == "2"


async def test_disambiguation_resolved_by_franchise(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki],
) -> None:
    server, _ = wiki_server
    async with http_for(server) as http:
        client = MediaWikiClient(server.url, http=http)
        assert (await client.find_character_page("Ken", "Street Fighter")).title == "Ken Masters"
        assert (
            await client.find_character_page("Ken", "Fist of the North Star")
        ).title == "Kenshiro"
        with pytest.raises(AmbiguousCharacterError) as caught:
            await client.find_character_page("Ken", "Dragon Ball")
    assert caught.value.candidates == ["Kenshiro", "Ken Masters", "Ken (Pokémon)"]
    assert "'Ken' is ambiguous" in str(caught.value) and "Ken Masters" in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_missing_page_falls_back_to_search_then_errors(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki],
) -> None:
    server, _ = wiki_server
    async with http_for(server) as http:
        client = MediaWikiClient(server.url, http=http)
        # no page titled "Toki Hokuto": full-text search finds "Toki"
        assert (await client.find_character_page("Toki Hokuto")).title == "Toki"
        with pytest.raises(WikiPageNotFound, match="no page for 'Shin' on http://127.0.0.1"):
            await client.find_character_page("Shin", "Fist of the North Star")
        with pytest.raises(WikiPageNotFound, match="no page 'Jagi'"):
            await client.page("Jagi")


async def test_non_mediawiki_url_is_reported(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki],
) -> None:
    server, _ = wiki_server
    with LoopbackWebServer(lambda r: WebResponse(200, "<html><body>shop</body></html>")) as shop:
        async with PoliteHttpClient(
            user_agent=UA, cache_dir=None, allowed_hosts=[shop.url.split("//")[1]]
        ) as http:
            client = MediaWikiClient(shop.url, http=http)
            with pytest.raises(
                NotAMediaWikiSite, match="is not a MediaWiki site.*check --wiki URL"
            ):
                await client.find_character_page("Toki")
    # one probe round: a site that is no wiki is not probed again for the search fallback
    assert [r.path for r in shop.requests] == ["/api.php", "/w/api.php"]


async def test_wikipedia_style_api_path_detected() -> None:
    wiki = FakeMediaWiki({"Toki": "<p>Toki heals.</p>"}, api_path="/w/api.php")
    with LoopbackWebServer(wiki.route) as server:
        async with http_for(server) as http:
            page = await MediaWikiClient(server.url, http=http).page("toki")
    assert page.title == "Toki" and page.sections[0].text == "Toki heals."


async def test_search_returns_relevant_section_and_infobox(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki],
) -> None:
    server, _ = wiki_server
    async with http_for(server) as http:
        client = MediaWikiClient(server.url, http=http)
        found = await client.search("Kenshiro personality compassion", limit=1)
        again = await client.search(
            "Kenshiro personality compassion",
            limit=1,
            exclude_urls=[f"{server.url}/wiki/Kenshiro#Personality"],
        )
        none_left = await client.search(
            "Kenshiro personality compassion", exclude_urls=[f"{server.url}/wiki/Kenshiro"]
        )
    # The two most relevant sections, each whole, in page order, then the infobox.
    assert [e.url for e in found] == [
        f"{server.url}/wiki/Kenshiro",
        f"{server.url}/wiki/Kenshiro#Personality",
        f"{server.url}/wiki/Kenshiro",
    ]
    _, section, infobox = found
    assert section.content.startswith("Personality\nKenshiro is stoic and quiet")
    assert section.origin == "wiki" and section.title == "Kenshiro"
    assert infobox.content.splitlines()[:2] == ["Infobox of Kenshiro", "Name in Kanji: ケンシロウ"]
    assert f"{server.url}/wiki/Kenshiro#Personality" not in [e.url for e in again]
    assert len(again) == 2  # only the excluded passage dropped
    assert none_left == []  # the whole page excluded


async def test_search_never_cites_reference_lists(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki],
) -> None:
    server, _ = wiki_server
    async with http_for(server) as http:
        found = await MediaWikiClient(server.url, http=http).search("Kenshiro chapter", limit=1)
    assert (
        found[0].url == f"{server.url}/wiki/Kenshiro"
    )  # the lead, not #References ("Chapter 45.")
    assert found[0].content.startswith("Kenshiro\nKenshiro (ケンシロウ) is the protagonist")


async def test_search_follows_continuation(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki],
) -> None:
    server, wiki = wiki_server
    wiki.search_batch = 2
    async with http_for(server) as http:
        titles = await MediaWikiClient(server.url, http=http).search_titles("hokuto", limit=3)
    searches = [c for c in wiki.calls if c.get("list") == "search"]
    assert [c.get("sroffset") for c in searches] == [None, "2"]
    assert searches[1]["continue"] == "-||"
    assert len(titles) == 3 and len(set(titles)) == 3
    assert "Raoh" in titles and "Toki" in titles


async def test_second_run_is_served_from_cache(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki], tmp_path: Path
) -> None:
    server, _ = wiki_server

    async def run() -> PoliteHttpClient:
        async with http_for(server, tmp_path) as http:
            client = MediaWikiClient(server.url, http=http)
            await client.find_character_page("Ken", "Fist of the North Star")
            await client.search("Raoh Kokuoh")
            return http

    await run()
    http = await run()
    assert http.requests_made == 0 and http.cache_hits > 0


def test_fandom_slugs() -> None:
    assert fandom_slugs("Fist of the North Star")[:3] == [
        "fistofthenorthstar",
        "fistnorthstar",
        "fist-of-the-north-star",
    ]
    assert fandom_slugs("The Legend of Zelda")[:2] == ["thelegendofzelda", "legendofzelda"]
    assert fandom_slugs("Pokémon") == ["pokemon"]
    assert slugs_from_urls(
        ["https://hokuto.fandom.com/wiki/Toki", "https://en.wikipedia.org/wiki/Toki"]
    ) == ["hokuto"]


class StubSearcher:
    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.queries: list[str] = []

    async def search(
        self,
        query: str,
        *,
        max_results: int = 5,
        include_domains: Sequence[str] = (),
        exclude_urls: Collection[str] = (),
    ) -> list[Evidence]:
        self.queries.append(query)
        return [
            Evidence(url=u, title="t", content="c", origin="web", query=query) for u in self.urls
        ]


async def test_discovery_prefers_fandom_hosts_from_search() -> None:
    web = FakeWeb(
        wikis={"/hokuto": hokuto_wiki()}, pages={"/fistofthenorthstar/api.php": "<p>shop</p>"}
    )
    with LoopbackWebServer(web.route) as server:
        async with http_for(server) as http:
            searcher = StubSearcher(["https://hokuto.fandom.com/wiki/Kenshiro"])
            base = await discover_wiki(
                "Fist of the North Star",
                http=http,
                searcher=searcher,
                domain_template=server.url + "/{slug}",
            )
            assert base == f"{server.url}/hokuto"
            assert searcher.queries == ["Fist of the North Star wiki fandom"]
            page = await MediaWikiClient(base, http=http).page("Raoh")
    assert page.url == f"{server.url}/hokuto/wiki/Raoh"


async def test_discovery_by_slug_and_failure() -> None:
    web = FakeWeb(wikis={"/fistofthenorthstar": hokuto_wiki()})
    with LoopbackWebServer(web.route) as server:
        async with http_for(server) as http:
            template = server.url + "/{slug}"
            assert await discover_wiki(
                "Fist of the North Star", http=http, domain_template=template
            ) == (f"{server.url}/fistofthenorthstar")
            with pytest.raises(
                InputError, match="found no wiki for 'Dragon Ball'.*pass --wiki URL"
            ):
                await discover_wiki("Dragon Ball", http=http, domain_template=template)


async def test_open_wiki_pinned_discovered_or_neither() -> None:
    web = FakeWeb(
        wikis={"/fistofthenorthstar": hokuto_wiki()}, pages={"/shop/api.php": "<p>no</p>"}
    )
    with LoopbackWebServer(web.route) as server:
        async with http_for(server) as http:
            pinned = await open_wiki(http=http, wiki_url=f"{server.url}/fistofthenorthstar/")
            found = await open_wiki(
                http=http,
                franchise="Fist of the North Star",
                domain_template=server.url + "/{slug}",
            )
            with pytest.raises(NotAMediaWikiSite, match="is not a MediaWiki site"):
                await open_wiki(http=http, wiki_url=f"{server.url}/shop")
            with pytest.raises(InputError, match="neither a wiki URL nor a franchise"):
                await open_wiki(http=http)
            page = await found.page("Raoh")
    assert pinned.base_url == found.base_url == f"{server.url}/fistofthenorthstar"
    assert page.infobox_dict()["Steed"] == "Kokuoh"


async def test_private_wiki_refused_and_api_failure_reported(
    wiki_server: tuple[LoopbackWebServer, FakeMediaWiki],
) -> None:
    server, wiki = wiki_server
    async with PoliteHttpClient(user_agent=UA, cache_dir=None) as http:
        with pytest.raises(InputError, match="127.0.0.1 is not a public host"):
            await MediaWikiClient(server.url, http=http).page("Toki")

    async def no_wait(delay: float) -> None:
        return None

    async with PoliteHttpClient(
        user_agent=UA,
        cache_dir=None,
        allowed_hosts=[server.url.split("//")[1]],
        max_retries=1,
        sleep=no_wait,
    ) as http:
        client = MediaWikiClient(server.url, http=http)
        await client.site()
        wiki.fail_next(2, 503)
        with pytest.raises(RemoteError, match="API request failed: .*HTTP 503.* after 2 attempts"):
            await client.page("Toki")


async def test_search_passages_are_whole_sections_with_their_subsections() -> None:
    page = (
        "<p>Toki is a healer.</p><h2>History</h2><p>Toki grew up in the Hokuto temple.</p>"
        "<h3>Nuclear War</h3><p>Toki shielded Kenshiro from the fallout.</p>"
        "<h3>Prison</h3><p>Toki was imprisoned in Cassandra.</p>"
        "<h2>Personality</h2><p>Toki is gentle.</p>"
    )
    wiki = FakeMediaWiki({"Toki": page})
    with LoopbackWebServer(FakeWeb(wiki=wiki).route) as server:
        async with http_for(server) as http:
            client = MediaWikiClient(server.url, http=http, sections_per_page=1)
            (history,) = await client.search("Toki history fallout prison", limit=1)
    assert history.url.endswith("/wiki/Toki#History")
    assert history.content == (
        "History\nToki grew up in the Hokuto temple.\n\n"
        "Nuclear War\nToki shielded Kenshiro from the fallout.\n\n"
        "Prison\nToki was imprisoned in Cassandra."
    )


def _client(server: LoopbackWebServer) -> PoliteHttpClient:
    return PoliteHttpClient(
        user_agent=UA, cache_dir=None, allowed_hosts=[server.url.split("//", 1)[1]]
    )


async def test_a_wiki_whose_script_path_holds_wiki_is_taken_as_given() -> None:
    """``https://example.org/wiki/hokuto`` is the wiki itself: its API is under it."""
    with LoopbackWebServer(FakeWeb(wikis={"/wiki/hokuto": hokuto_wiki()}).route) as server:
        async with _client(server) as http:
            wiki = await open_wiki(http=http, wiki_url=f"{server.url}/wiki/hokuto/")
            page = await wiki.find_character_page("Toki")
    assert wiki.base_url == f"{server.url}/wiki/hokuto"
    assert page.url == f"{server.url}/wiki/hokuto/wiki/Toki"


async def test_an_article_url_finds_its_api_through_the_edituri_link() -> None:
    """A wiki with its own script path (API at /mw/api.php, articles at /wiki/): the
    article's ``EditURI`` link names the API; the derived root alone finds no API."""
    wiki = FakeMediaWiki({"Toki": "<p>Toki is a healer.</p>"}, api_path="/mw/api.php")
    with LoopbackWebServer(FakeWeb(wikis={"/mirror": wiki}).route) as server:
        async with _client(server) as http:
            found = await open_wiki(http=http, wiki_url=f"{server.url}/mirror/wiki/Toki")
            assert (await found.site()).api_url == f"{server.url}/mirror/mw/api.php"
            wiki.announce_api = False
            with pytest.raises(NotAMediaWikiSite, match="EditURI"):
                await open_wiki(http=http, wiki_url=f"{server.url}/mirror/wiki/Toki")
    assert found.base_url == f"{server.url}/mirror/mw"


async def test_an_api_url_and_a_fandom_article_are_accepted() -> None:
    with LoopbackWebServer(FakeWeb(wiki=hokuto_wiki()).route) as server:
        async with _client(server) as http:
            by_api = await open_wiki(http=http, wiki_url=f"{server.url}/api.php")
            by_article = await open_wiki(http=http, wiki_url=f"{server.url}/wiki/Raoh")
    assert by_api.base_url == by_article.base_url == server.url


def test_edituri_link_is_read_whatever_its_attribute_order() -> None:
    from personae.tools.wiki_discovery import edit_uri_api

    page = (
        "<html><head><link href='//w.org/w/api.php?action=rsd' type='application/rsd+xml'"
        " REL=EditURI></head><body></body></html>"
    )
    assert edit_uri_api(page, "https://w.org/wiki/Toki") == "https://w.org/w/api.php"
    assert edit_uri_api("<link rel='EditURI' href='/x.php'>", "https://w.org/") is None
    assert edit_uri_api("<p>no head</p>", "https://w.org/") is None


async def test_a_wiki_answering_503_is_a_remote_failure_naming_the_status() -> None:
    """Not "is not a MediaWiki site" (bad input, exit 2): the server is failing (exit 3)."""
    wiki = hokuto_wiki()
    with LoopbackWebServer(FakeWeb(wiki=wiki).route) as server:
        wiki.fail_next(100, 503)
        async with PoliteHttpClient(
            user_agent=UA, cache_dir=None, allowed_hosts=[server.url.split("//", 1)[1]],
            max_retries=1, sleep=_no_wait,
        ) as http:  # fmt: skip
            with pytest.raises(RemoteError, match=r"is failing: .*HTTP 503") as caught:
                await open_wiki(http=http, wiki_url=server.url)
    assert not isinstance(caught.value, InputError) and caught.value.exit_code == 3


async def _no_wait(delay: float) -> None:
    return None


async def test_an_unreachable_announced_api_falls_back_to_the_derived_root_with_a_notice() -> None:
    """The article's EditURI names an API on a host that cannot be reached: the root derived
    from the URL is tried next, and the client says what happened."""
    dead = f"http://127.0.0.1:{free_port()}"
    wiki = hokuto_wiki()
    wiki.server_url = dead  # absolute EditURI links pointing at a host nobody serves
    with LoopbackWebServer(FakeWeb(wiki=wiki).route) as server:
        hosts = [server.url.split("//", 1)[1], dead.split("//", 1)[1]]
        async with PoliteHttpClient(
            user_agent=UA, cache_dir=None, allowed_hosts=hosts, max_retries=0, sleep=_no_wait
        ) as http:
            found = await open_wiki(http=http, wiki_url=f"{server.url}/wiki/Toki")
            page = await found.find_character_page("Kenshiro")
    assert found.base_url == server.url and page.title == "Kenshiro"
    [notice] = found.notices
    assert notice.startswith(f"the API {dead}/api.php announced by {server.url}/wiki/Toki")
    assert "cannot be used (cannot reach 127.0.0.1:" in notice and notice.endswith(server.url)
