"""What the profiler needs from the outside world, as protocols its search node codes against.

The real implementations are the Tavily client (``tools/web_search.py``) and the MediaWiki
client (``tools/wiki.py``); tests run those same clients against a loopback server.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from personae.tools.evidence import Evidence
from personae.tools.wiki_page import WikiPage


class WebSearcher(Protocol):
    """Web search returning clean passages."""

    async def search(
        self,
        query: str,
        *,
        max_results: int = 5,
        include_domains: Sequence[str] = (),
        exclude_urls: Collection[str] = (),
    ) -> list[Evidence]:
        """Search the web; results whose URL is in ``exclude_urls`` are dropped."""
        ...


class WikiSource(Protocol):
    """A character wiki (Fandom or any MediaWiki)."""

    base_url: str
    """Wiki root, e.g. ``https://hokuto.fandom.com``."""

    async def search(
        self, query: str, *, limit: int = 3, exclude_urls: Collection[str] = ()
    ) -> list[Evidence]:
        """Full-text search; each hit becomes one passage (a relevant page section)."""
        ...

    async def find_character_page(self, name: str, franchise: str | None = None) -> WikiPage:
        """Find and parse the character's page (search, redirects, disambiguation)."""
        ...
