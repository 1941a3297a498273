"""What the profiler needs from web search, as a protocol its search node codes against.

The real implementation is the Tavily client (``tools/web_search.py``); tests run that same
client against a loopback server. The wiki has one implementation,
:class:`~personae.tools.wiki.MediaWikiClient`, used directly.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from personae.tools.evidence import Evidence


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
