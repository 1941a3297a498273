"""An offline wiki is a network failure, not "not a wiki"; article URLs give their wiki root."""

from __future__ import annotations

import pytest

from personae.errors import InputError
from personae.loopback import free_port
from personae.tools.http import PoliteHttpClient, UnreachableError
from personae.tools.wiki_discovery import discover_wiki, open_wiki, wiki_root

UA = "Personae-test/0 (+https://example.org)"


async def _no_wait(delay: float) -> None:
    return None


def closed_host() -> str:
    return f"127.0.0.1:{free_port()}"


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("https://hokuto.fandom.com", "https://hokuto.fandom.com"),
        ("https://hokuto.fandom.com/", "https://hokuto.fandom.com"),
        ("https://hokuto.fandom.com/wiki/Kenshiro", "https://hokuto.fandom.com"),
        ("https://hokuto.fandom.com/de/wiki/Kenshiro#Story", "https://hokuto.fandom.com/de"),
        ("https://en.wikipedia.org/wiki/Kenshiro", "https://en.wikipedia.org"),
        ("https://en.wikipedia.org/w/index.php?title=Kenshiro", "https://en.wikipedia.org/w"),
        ("https://wiki.example.org/api.php", "https://wiki.example.org"),
    ],
)
def test_wiki_root_of_article_urls(url: str, root: str) -> None:
    assert wiki_root(url) == root


@pytest.mark.parametrize("url", ["hokuto.fandom.com/wiki/Kenshiro", "notaurl", "ftp://x.org"])
def test_a_wiki_url_without_http_is_named_as_given(url: str) -> None:
    with pytest.raises(InputError, match=f"the wiki URL '{url}' is not an http"):
        wiki_root(url)


async def test_pinned_wiki_that_cannot_be_reached() -> None:
    host = closed_host()
    async with PoliteHttpClient(
        user_agent=UA, cache_dir=None, allowed_hosts=[host], max_retries=1, sleep=_no_wait
    ) as http:
        with pytest.raises(UnreachableError, match=f"cannot reach {host}") as caught:
            await open_wiki(http=http, wiki_url=f"http://{host}/wiki/Kenshiro")
    assert not isinstance(caught.value, InputError) and caught.value.exit_code == 3


async def test_discovery_offline_says_so_instead_of_no_wiki_found() -> None:
    host = closed_host()
    async with PoliteHttpClient(
        user_agent=UA, cache_dir=None, allowed_hosts=[host], max_retries=0, sleep=_no_wait
    ) as http:
        with pytest.raises(UnreachableError, match="cannot reach any candidate wiki for 'Hokuto'"):
            await discover_wiki("Hokuto", http=http, domain_template=f"http://{host}/{{slug}}")
