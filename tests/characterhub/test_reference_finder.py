"""Finding a reference page when none is given: the franchise's Fandom wiki, then web search."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pytest
from fake_web import FakeMediaWiki, FakeWeb

from personae.errors import InputError
from personae.evals.characterhub.reference_finder import find_reference
from personae.loopback import LoopbackWebServer
from personae.tools.evidence import Evidence
from personae.tools.http import PoliteHttpClient

UA = "Personae-test/0.1 (+https://example.org)"


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


async def test_fandom_first_then_web_search_with_fandom_hosts_ranked_first() -> None:
    wiki = FakeMediaWiki({"Toki": "<p>Toki is the second Hokuto brother.</p>"})
    with LoopbackWebServer(FakeWeb(wikis={"/fistofthenorthstar": wiki}).route) as server:
        template = server.url + "/{slug}"
        async with PoliteHttpClient(
            user_agent=UA, cache_dir=None, allowed_hosts=[server.url.split("//")[1]]
        ) as http:
            found = await find_reference(
                "Toki", "Fist of the North Star", http=http, fandom_template=template
            )
            searcher = StubSearcher(
                ["https://example.org/toki", "https://hokuto.fandom.com/wiki/Toki#Bio"]
            )
            by_web = await find_reference(
                "Toki", None, http=http, searcher=searcher, fandom_template=template
            )
            with pytest.raises(InputError, match="found no reference page for 'Raoh'") as caught:
                await find_reference("Raoh", "Dragon Ball", http=http, fandom_template=template)
    assert found == (f"{server.url}/fistofthenorthstar/wiki/Toki", "fandom")
    assert by_web == ("https://hokuto.fandom.com/wiki/Toki", "web search")
    assert searcher.queries == ["Toki fandom wiki"]
    assert "TAVILY_API_KEY is not set" in str(caught.value)
    assert "pass --reference URL_OR_FILE, or --references FILE.csv" in str(caught.value)
