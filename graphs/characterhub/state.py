"""State, input/output schemas and run context of the profiler graph (kept apart from wiring)."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, cast

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from personae.agents.characterhub.prose_checker import ProseCheckRecord
from personae.graphs.characterhub.roles import (
    PAPER_SAMPLING,
    parse_role_sampling,
    role_record,
    sampled,
)
from personae.run_context import LLMContext, ModelSpec, context_of, described
from personae.settings import parse_duration

SearchTool = Literal["web", "wiki"]
"""Where one search runs: Tavily web search or the character's wiki."""
ProfilingMethod = Literal["paper", "planned"]
"""``paper``: CharacterHub's R¹/R² deep search and Table 8 rewrite; ``planned``: ours."""


def add_counts(left: Mapping[str, int], right: Mapping[str, int]) -> dict[str, int]:
    """Reducer: sum usage counters key by key (parallel branches each add their own)."""
    merged = dict(left)
    for key, value in right.items():
        merged[key] = merged.get(key, 0) + value
    return merged


class PlannedQuery(TypedDict):
    """One query to run this round."""

    dimension: str
    """The dimension it was planned for."""
    query: str
    """Query text (names the character and franchise)."""


class Passage(TypedDict):
    """One raw search result, before it gets a source id."""

    url: str
    title: str
    content: str
    """The passage text the summarizer reads."""
    origin: Literal["web", "wiki"]
    query: str
    """The query that found it."""
    round: int


class SearchLog(TypedDict):
    """One (query, tool) search: what it returned, or why it failed."""

    round: int
    dimension: str
    query: str
    tool: SearchTool
    results: int
    """Passages kept."""
    error: str | None
    """The remote failure, when the search failed."""


class Source(TypedDict):
    """A passage with its id: what facts cite."""

    id: str
    """``S1``, ``S2``... in order of first appearance."""
    url: str
    title: str
    content: str
    origin: Literal["web", "wiki"]
    round: int
    """The round it first appeared in."""


class FactNote(TypedDict):
    """A cited fact as the summarizer gave it."""

    dimension: str
    text: str
    source_ids: list[str]


class RoundFact(FactNote):
    """A cited fact and the round that found it."""

    round: int


class RoundRecord(TypedDict):
    """What one search round did."""

    round: int
    queries: list[str]
    results: int
    """Passages found this round."""
    new_source_ids: list[str]
    source_ids: list[str]
    """Ids of every passage the summarizer saw this round."""
    notes: list[FactNote]


class Reflection(TypedDict):
    """One coverage review."""

    round: int
    coverage: dict[str, float]
    """Coverage score per dimension."""
    follow_ups: list[PlannedQuery]


class RoundDocument(TypedDict):
    """The paper method's research document after one round."""

    round: int
    text: str


class ProfileFact(TypedDict):
    """A fact of the finished profile with the ids of the sources stating it."""

    text: str
    source_ids: list[str]


def merge_sources(left: Sequence[Source], right: Sequence[Source]) -> list[Source]:
    """Reducer: one record per source id; a record with a known id adds its passage text.

    The same page found by several searches stays one source (one id, one URL) whose content
    gathers every distinct passage seen of it, in the order they came.
    """
    merged = [cast(Source, dict(source)) for source in left]
    where = {source["id"]: index for index, source in enumerate(merged)}
    for source in right:
        index = where.get(source["id"])
        if index is None:
            where[source["id"]] = len(merged)
            merged.append(cast(Source, dict(source)))
            continue
        current = merged[index]
        text = source["content"]
        if text and text not in current["content"]:
            current["content"] = f"{current['content']}\n\n{text}" if current["content"] else text
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
    method: ProfilingMethod
    """The profiling method that made it."""
    profile: str
    """The first-person profile (sentences no kept fact supports are dropped)."""
    drinfo: str
    """The raw deep-search output the rewrite read ("DRInfo"): the R² document (``paper``) or
    the cited notes (``planned``); the evaluation scores it beside the profile."""
    canon: str
    """The canon rule, decided once per run from the name and franchise (empty when off): the
    instruction the prompts carry."""
    canon_version: str
    """What that rule decided, for readers (``Fist of the North Star``, or that no version is
    preferred; empty when off): the *Canon* line of ``profile.md`` and the card."""
    models: dict[str, dict[str, Any]]
    """Every model role the run used (search, rewrite, fast) with its sampling."""
    conflicts: list[str]
    """Conflicts between sources/versions and how they were resolved."""
    dimensions: dict[str, list[ProfileFact]]
    """Facts per dimension, every fact with at least one known id."""
    sources: list[Source]
    """Every source, ids ``S1..Sn``."""
    rounds: list[RoundRecord]
    """Per round: queries, results, new and seen source ids, notes."""
    reflections: list[Reflection]
    """Per round: coverage per dimension and the follow-up queries chosen."""
    usage: dict[str, int]
    """``llm_calls``, ``input_tokens``, ``output_tokens``, ``searches``, ``failed_searches``,
    ``search_credits``, ``pages_fetched``, ``results_dropped`` (web results that were not an
    object, or whose URL was not http(s) with a host and a valid port); the citation check,
    one count per meaning: ``notes_checked`` / ``notes_unsupported`` (the rounds' notes, checked
    against their passages; unsupported ones never reach the rewrite) and ``facts_checked`` /
    ``facts_unsupported`` (the final profile's facts); the model output dropped:
    ``dropped_queries`` (planned beyond the cap, empty or repeated), ``dropped_follow_ups``
    (the reflector's, beyond the cap, empty or already run), ``dropped_ids`` (invented source
    ids), ``dropped_notes`` (summary facts without a known source id), ``dropped_facts`` (the
    rewrite's, likewise), ``sentences_unsupported`` (dropped from the prose); and ``degraded``,
    the items whose answer was still invalid after retries, of which ``notes_unchecked``,
    ``facts_unchecked`` and ``sentences_unchecked`` (kept without a verdict) and
    ``rounds_degraded`` (a round whose summary failed)."""
    unsupported_facts: list[FactNote]
    """Facts dropped because the passages they cite do not state them."""
    unchecked_facts: list[FactNote]
    """Facts no valid verdict came for (degraded): kept, unchecked."""
    prose_check: ProseCheckRecord | None
    """Sentences of the prose: total, supported, without claim, and the ones dropped
    (``None``: the check was off)."""
    stop_reason: str
    """Which stop rule ended the search (see ``STOP_RULES``)."""
    notices: list[str]
    """What the user should know (web search disabled, no wiki found)."""
    wiki_page: str | None
    """URL of the character's wiki page, when one was found."""


class ProfilerState(ProfileInput):
    """Everything the profiler carries between nodes (output fields documented above)."""

    method: ProfilingMethod
    profile: str
    drinfo: str
    canon: str
    canon_version: str
    models: dict[str, dict[str, Any]]
    prose_check: ProseCheckRecord | None
    unsupported_facts: Annotated[list[FactNote], operator.add]
    unchecked_facts: Annotated[list[FactNote], operator.add]
    documents: Annotated[list[RoundDocument], operator.add]
    """The paper method's documents per round (R¹, then R²)."""
    draft_facts: list[FactNote]
    """The rewrite's facts (known ids only), before the citation check."""
    conflicts: list[str]
    dimensions: dict[str, list[ProfileFact]]
    stop_reason: str
    wiki_page: str | None

    wiki_base: str | None
    """Base URL of the wiki in use (confirmed), ``None`` for web-only runs."""
    round: int
    """Current search round, from 1."""
    pending: list[PlannedQuery]
    """Queries to run this round."""
    evidence: Annotated[list[Passage], operator.add]
    """Raw passages from every search branch."""
    searches: Annotated[list[SearchLog], operator.add]
    """One log entry per (query, tool) search."""
    facts: Annotated[list[RoundFact], operator.add]
    """Cited facts from the summarizer."""
    coverage: dict[str, float]
    """Latest coverage score per dimension."""
    usage: Annotated[dict[str, int], add_counts]
    sources: Annotated[list[Source], merge_sources]
    rounds: Annotated[list[RoundRecord], operator.add]
    reflections: Annotated[list[Reflection], operator.add]
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

    The strong model writes the profile (and is the ``paper`` method's search agent); the fast
    one plans, summarizes, reflects and checks citations. ``method`` fixes the paper's bundle
    (its rounds, models' sampling, no checks, no canon rule); the fields that follow from it
    (or from ``max_rounds``, or from ``model``) are left empty unless a run departs from it.
    """

    paper_queries: ClassVar[int] = 8
    """Searches the paper's agent may run per round (its prompt's budget)."""
    coverage_target: ClassVar[float] = 0.7
    """``planned``: stop when every dimension's coverage reaches this."""
    queries_per_dimension: ClassVar[int] = 1
    """``planned``: queries per dimension in round 1 (and follow-ups per thin dimension)."""

    # -- the method
    method: ProfilingMethod = "planned"
    """``paper`` (CharacterHub's R¹/R² search and Table 8 rewrite) or ``planned`` (ours)."""
    max_rounds: int = 3
    """Round cap (R1 plus refinement rounds); ``paper`` runs R¹ and R² (1: R¹ only, the
    paper's "w.o. IS" ablation)."""
    web_search: bool = True
    """Use web search when a Tavily key is set."""
    exclude_urls: tuple[str, ...] = ()
    """Pages never used as sources (evaluation without leakage)."""
    # -- how much evidence a search brings and the model reads
    max_results: int = 5
    """Results per search."""
    search_depth: Literal["basic", "advanced"] = "advanced"
    """Tavily search depth (advanced: better passages, 2 credits a search)."""
    raw_content_results: int = 2
    """Top web results per search whose whole page text is kept (capped by passage_chars)."""
    passage_chars: int = 6000
    """Cap of one passage's text: a web page or a whole wiki section with its subsections."""
    evidence_chars: int = 60_000
    """Passage text shown to the model in one call (shared evenly between passages)."""
    # -- derived: empty follows from ``method`` (the paper's bundle) or from ``model``
    search_model: ModelSpec = ""
    """The paper method's search agent (R¹/R² searches and documents; the paper: Gemini-2.5-Pro).
    Empty: the strong model."""
    rewrite_model: ModelSpec = ""
    """The profile rewriter of both methods (the paper: Qwen-plus). Empty: the strong model."""
    search_sampling: str = ""
    """The search agent's sampling, ``temperature=1.0,top_p=0.95,top_k=64`` (any of the
    three; top-k is sent in the request body to servers other than OpenAI's API). Empty: the
    paper's Table 3 values under ``paper``, the strong role's sampling under ``planned``."""
    rewrite_sampling: str = ""
    """The rewriter's sampling, same form. Empty: Table 3's 0.85 / 0.8 / 50 under ``paper``, the
    strong role's sampling under ``planned``."""
    check_citations: bool | None = None
    """Ours: check each fact against the passage it cites and each prose sentence against the
    kept facts (fast model); unsupported ones are dropped and counted. Empty (null): on for
    ``planned``, off for ``paper`` (the paper's Table 8 output is kept as written)."""
    canon_rule: bool | None = None
    """Ours: tell the search and rewrite prompts which version of the character is canon (or
    to keep versions apart). Empty (null): on for ``planned``, off for ``paper`` (its Table 7
    and 8 prompts have no such rule)."""
    # -- derived: the budgets follow from ``max_rounds`` (0: 10 calls, 100k tokens, 20 credits a
    # round, for at least 3 rounds)
    max_llm_calls: int = 0
    """LLM call budget (the rewrite and its two checks are always kept in reserve). 0: 10 a
    round, at least 30."""
    max_tokens: int = 0
    """Token budget (input plus output). 0: 100,000 a round, at least 300,000."""
    max_search_credits: int = 0
    """Tavily credit budget. 0: 20 a round, at least 60."""
    # -- plumbing: the web clients and their cache
    tavily_base_url: str = ""
    """Tavily API root. Empty: TAVILY_BASE_URL, else https://api.tavily.com. The key is read
    from TAVILY_API_KEY, never from a run's context."""
    fandom_template: str = ""
    """Where a Fandom wiki with subdomain ``{slug}`` lives (wiki discovery). Empty:
    PERSONAE_FANDOM_TEMPLATE, else https://{slug}.fandom.com."""
    contact: str = ""
    """Contact put in the User-Agent of every web request. Empty: PERSONAE_CONTACT, else the
    project URL."""
    cache_dir: str | None = ""
    """HTTP disk cache folder (pages under its http/). Empty: PERSONAE_CACHE_DIR, else
    ~/.cache/personae; null disables caching."""
    cache_ttl: str = ""
    """How long a cached page stays fresh: seconds, or 30m, 12h, 7d. Empty: PERSONAE_CACHE_TTL,
    else cached pages never expire."""
    search_concurrency: int = 8
    """Searches running at once."""

    def __post_init__(self) -> None:
        """Fill models, Tavily and cache from the settings where the run left them empty."""
        super().__post_init__()
        settings = self.settings
        ours = self.method == "planned"
        for name in ("check_citations", "canon_rule"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, ours)
        for role in ("search", "rewrite"):
            text = getattr(self, f"{role}_sampling")
            parse_role_sampling(text, f"{role}_sampling")  # a bad value fails here
            if not text and not ours:
                object.__setattr__(self, f"{role}_sampling", PAPER_SAMPLING[role])
        object.__setattr__(
            self, "tavily_base_url", self.tavily_base_url or settings.tavily_base_url
        )
        object.__setattr__(self, "contact", self.contact or settings.contact)
        if self.cache_dir == "":
            object.__setattr__(self, "cache_dir", str(settings.cache_dir))
        rounds = max(3, self.max_rounds)
        for name, per_round in BUDGET_PER_ROUND.items():
            object.__setattr__(self, name, getattr(self, name) or per_round * rounds)
        ttl = parse_duration(self.cache_ttl, "cache_ttl") if self.cache_ttl else settings.cache_ttl
        object.__setattr__(self, "_cache_ttl_seconds", ttl)
        if not self.fandom_template:
            object.__setattr__(self, "fandom_template", settings.fandom_template)

    def role_sampling(self, role: Literal["search", "rewrite"]) -> dict[str, float | int]:
        """The sampling of the search agent or the rewriter (see ``search_sampling``)."""
        text = getattr(self, f"{role}_sampling")
        if text:
            return parse_role_sampling(text, f"{role}_sampling")
        return dict(self.sampling("strong"))

    def role_llm(self, role: Literal["search", "rewrite"]) -> BaseChatModel:
        """The search agent's or the rewriter's chat model, sampled as its role is."""
        spec = getattr(self, f"{role}_model") or self.model
        return sampled(
            self.chat_model(spec, "strong"), self.role_sampling(role), self.openai_base_url
        )

    def model_records(self) -> dict[str, dict[str, Any]]:
        """Every role this run uses, with its model and sampling (``profile.json``'s ``models``)."""
        records = {
            "rewrite": role_record(
                self.cache_name(self.rewrite_model or self.model),
                self.role_sampling("rewrite"),
                self.openai_base_url,
            )
        }
        if self.method == "paper":
            records["search"] = role_record(
                self.cache_name(self.search_model or self.model),
                self.role_sampling("search"),
                self.openai_base_url,
            )
        if self.method == "planned" or self.check_citations:
            records["fast"] = {"model": self.cache_name(self.fast_model), **self.sampling("fast")}
        return records

    @property
    def cache_ttl_seconds(self) -> float | None:
        """``cache_ttl`` (or ``PERSONAE_CACHE_TTL``) in seconds; ``None``: never expire."""
        seconds: float | None = getattr(self, "_cache_ttl_seconds", None)
        return seconds

    @property
    def tavily_api_key(self) -> str | None:
        """The Tavily key read from ``TAVILY_API_KEY`` when the context was built."""
        return self.settings.tavily_api_key


BUDGET_PER_ROUND: dict[str, int] = {
    "max_llm_calls": 10,
    "max_tokens": 100_000,
    "max_search_credits": 20,
}
"""A profile's budgets per search round when a run sets none (3 rounds: 30 calls, 300,000
tokens, 60 credits)."""


def profiler_context(runtime: Runtime[ProfilerContext]) -> ProfilerContext:
    """The run's :class:`ProfilerContext`, also when the profiler runs as a subgraph.

    A parent graph that passes no ``ProfilerContext`` (its own context, or none) gets the
    settings' defaults, as the CLI does, instead of an ``AttributeError`` in the first node.
    """
    return context_of(runtime.context, ProfilerContext)
