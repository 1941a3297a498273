"""State, input/output schemas and run context of the profiler graph (kept apart from wiring)."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict

from personae.run_context import LLMContext, described
from personae.settings import load_settings

SearchTool = Literal["web", "wiki"]
"""Where one search runs: Tavily web search or the character's wiki."""


def add_counts(left: Mapping[str, int], right: Mapping[str, int]) -> dict[str, int]:
    """Reducer: sum usage counters key by key (parallel branches each add their own)."""
    merged = dict(left)
    for key, value in right.items():
        merged[key] = merged.get(key, 0) + value
    return merged


class ProfileInput(TypedDict):
    """Who to profile."""

    name: str
    """Character name as the user typed it."""
    franchise: str | None
    """Franchise that disambiguates the name (``Fist of the North Star``), if known."""
    wiki_url: str | None
    """A pinned wiki root (``https://hokuto.fandom.com``); ``None`` discovers one."""


class ProfileOutput(TypedDict):
    """The finished profile with its evidence trail."""

    name: str
    """Character name as resolved on the wiki (page title) or as given."""
    franchise: str | None
    """Franchise as given."""
    profile: str
    """The first-person profile."""
    canon: str
    """The one canon/version the profile keeps."""
    conflicts: list[str]
    """Conflicts between sources/versions and how they were resolved."""
    dimensions: dict[str, list[dict[str, Any]]]
    """``{dimension: [{"text", "source_ids"}]}``, every fact with at least one known id."""
    sources: list[dict[str, Any]]
    """``{"id", "url", "title", "origin", "round"}`` for every source, ids ``S1..Sn``."""
    rounds: list[dict[str, Any]]
    """Per round: queries, results, new and seen source ids, notes."""
    reflections: list[dict[str, Any]]
    """Per round: coverage per dimension and the follow-up queries chosen."""
    usage: dict[str, int]
    """``llm_calls``, ``input_tokens``, ``output_tokens``, ``searches``, ``search_credits``,
    ``pages_fetched``."""
    stop_reason: str
    """Which stop rule ended the search (see ``STOP_RULES``)."""
    notices: list[str]
    """What the user should know (web search disabled, no wiki found)."""
    wiki_page: str | None
    """URL of the character's wiki page, when one was found."""


class ProfilerState(ProfileInput):
    """Everything the profiler carries between nodes (output fields documented above)."""

    profile: str
    canon: str
    conflicts: list[str]
    dimensions: dict[str, list[dict[str, Any]]]
    stop_reason: str
    wiki_page: str | None

    wiki_base: str | None
    """Base URL of the wiki in use (confirmed), ``None`` for web-only runs."""
    round: int
    """Current search round, from 1."""
    pending: list[dict[str, Any]]
    """Queries to run this round: ``{"dimension", "query"}``."""
    evidence: Annotated[list[dict[str, Any]], operator.add]
    """Raw passages from every search branch: ``url, title, content, origin, query, round``."""
    searches: Annotated[list[dict[str, Any]], operator.add]
    """One log entry per (query, tool) search: ``round, query, tool, results, error``."""
    facts: Annotated[list[dict[str, Any]], operator.add]
    """Cited facts from the summarizer: ``dimension, text, source_ids, round``."""
    coverage: dict[str, float]
    """Latest coverage score per dimension."""
    usage: Annotated[dict[str, int], add_counts]
    sources: Annotated[list[dict[str, Any]], operator.add]
    rounds: Annotated[list[dict[str, Any]], operator.add]
    reflections: Annotated[list[dict[str, Any]], operator.add]
    notices: Annotated[list[str], operator.add]


class SearchTask(TypedDict):
    """The payload of one ``Send`` to the search node."""

    round: int
    """Round the search belongs to."""
    dimension: str
    """Dimension the query was planned for."""
    query: str
    """Query text."""
    tool: SearchTool
    """Client the search runs through."""
    wiki_base: str | None
    """Wiki to search (``tool == "wiki"``)."""


@described
@dataclass(frozen=True, kw_only=True)
class ProfilerContext(LLMContext):
    """Run settings of one profile.

    The strong model writes the profile; the fast one plans, summarizes and reflects.
    """

    tavily_base_url: str = ""
    """Tavily API root. Empty: TAVILY_BASE_URL, else https://api.tavily.com. The key is read
    from TAVILY_API_KEY, never from a run's context."""
    web_search: bool = True
    """Use web search when a Tavily key is set."""
    max_rounds: int = 3
    """Round cap (R1 plus refinement rounds)."""
    coverage_target: float = 0.7
    """Stop when every dimension's coverage reaches this."""
    queries_per_dimension: int = 1
    """Planned queries per dimension in round 1 (and follow-ups per thin dimension)."""
    max_llm_calls: int = 30
    """LLM call budget (a rewrite call is always kept in reserve)."""
    max_tokens: int = 300_000
    """Token budget (input plus output)."""
    max_search_credits: int = 60
    """Tavily credit budget."""
    max_results: int = 3
    """Results per search."""
    exclude_urls: tuple[str, ...] = ()
    """Pages never used as sources (evaluation without leakage)."""
    cache_dir: str | None = ""
    """HTTP disk cache folder (pages under its http/). Empty: PERSONAE_CACHE_DIR, else
    ~/.cache/personae; null disables caching."""
    search_concurrency: int = 8
    """Searches running at once."""
    contact: str = ""
    """Contact put in the User-Agent of every web request. Empty: PERSONAE_CONTACT, else the
    project URL."""

    def __post_init__(self) -> None:
        """Fill models, Tavily and cache from the environment where the run left them empty."""
        super().__post_init__()
        settings = load_settings()
        object.__setattr__(
            self, "tavily_base_url", self.tavily_base_url or settings.tavily_base_url
        )
        object.__setattr__(self, "contact", self.contact or settings.contact)
        if self.cache_dir == "":
            object.__setattr__(self, "cache_dir", str(settings.cache_dir))
        object.__setattr__(self, "_tavily_api_key", settings.tavily_api_key or "")

    @property
    def tavily_api_key(self) -> str | None:
        """The Tavily key read from ``TAVILY_API_KEY`` when the context was built."""
        key: str = getattr(self, "_tavily_api_key", "")
        return key or None
