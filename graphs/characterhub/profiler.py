"""The deep-search profiler (CharacterHub), one graph for two methods chosen by ``method``.

``paper`` is the paper's pipeline (``profiler_paper``): R¹ with the Table 7 instruction, R²
that always runs, the Table 8 rewrite. ``planned`` is ours: plan queries per dimension, search
in parallel, summarize into cited notes, reflect on coverage, repeat until a stop rule decided
in code fires (coverage reached, two rounds with nothing new, round cap, budget spent, all
searches empty; the rule that fired is recorded), then rewrite. Both share the search node and
end in ``verify_profile``: each fact checked against the passage it cites, each prose sentence
against the kept facts. Sources get short ids ``S1..Sn`` in order of first appearance; the
models only see those ids and the code drops invented ones. The canon rule is decided once, in
``resolve_character``. Importable as a compiled subgraph with typed input and output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from personae.agents.characterhub.canon import canon_of_rule, decide_canon
from personae.agents.characterhub.citation_checker import check_citations
from personae.agents.characterhub.coverage_reflector import review_coverage, settle_coverage
from personae.agents.characterhub.evidence_summarizer import CitedFact, summarize_round
from personae.agents.characterhub.profile_rewriter import rewrite_first_person
from personae.agents.characterhub.query_planner import plan_search_queries
from personae.errors import InputError
from personae.graphs.characterhub.checks import verify_profile
from personae.graphs.characterhub.evidence import (
    RoundSources,
    assign_source_ids,
    draft_with_citations,
    facts_by_dimension,
    notes_document,
    passages_text,
    rewrite_update,
    round_sources,
    source_key,
)
from personae.graphs.characterhub.paper import (
    propose_paper_searches,
    rewrite_paper_profile_node,
    route_after_document,
    write_paper_document,
)
from personae.graphs.characterhub.sources import (
    find_character,
    search_once,
    web_search_enabled,
)
from personae.graphs.characterhub.state import (
    Passage,
    PlannedQuery,
    ProfileInput,
    ProfileOutput,
    ProfilerContext,
    ProfilerState,
    Reflection,
    SearchLog,
    SearchTask,
    SearchTool,
    profiler_context,
)
from personae.graphs.server_entry import server_entry
from personae.llm import InvalidAnswerError, LLMUsage
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.tools.wiki import page_passages
from personae.tools.wiki_page import WikiPage

STOP_RULES = (
    "budget_llm_calls",
    "budget_tokens",
    "budget_search_credits",
    "all_searches_empty",
    "coverage_reached",
    "no_new_sources",
    "round_cap",
    "no_follow_ups",
    "paper_rounds",
)
"""Stop rules in the order they are checked (``planned``); ``paper_rounds``: the ``paper``
method's R¹ and R² are done. ``stop_reason`` is one of them."""

CALLS_PER_ROUND = 3
"""LLM calls one more round costs (summarize, check citations, reflect); the rewrite and its two
checks are kept in reserve."""

__all__ = ["assign_source_ids", "build_graph", "graph", "source_key"]


async def resolve_character(
    state: ProfilerState, runtime: Runtime[ProfilerContext]
) -> dict[str, Any]:
    """Find the character's wiki page; an ambiguous name raises unless the franchise picks one.

    Under ``planned`` the page found is evidence: its sections are round 1's first passages,
    before any search (:func:`page_evidence`). The paper's loop never reads it (§3.2: the agent
    only sees what its own searches return), so ``paper`` does not either.
    """
    context = profiler_context(runtime)
    wiki_base, page, notices = await find_character(
        state["name"], state.get("franchise"), state.get("wiki_url"), context
    )
    evidence = page_evidence(page, context) if page and context.method == "planned" else []
    if page and context.method == "planned" and not evidence:
        notices = [*notices, f"{page.url} is excluded (--exclude-url): not read"]
    rule = decide_canon(state["name"], state.get("franchise")) if context.canon_rule else ""
    return {
        "evidence": evidence,
        "wiki_base": wiki_base,
        "wiki_page": page.url if page else None,
        "name": page.title if page else state["name"].strip(),
        "notices": notices,
        "round": 1,
        "method": context.method,
        "canon": rule,
        "canon_version": canon_of_rule(rule),
        "models": context.model_records(),
    }


def page_evidence(page: WikiPage, context: ProfilerContext) -> list[Passage]:
    """The character's page as round-1 passages, at most half the model's reading budget.

    The other half is left for what the searches find. Each section is a source of its own.
    """
    found = page_passages(
        page,
        passage_chars=context.passage_chars,
        max_chars=max(context.passage_chars, context.evidence_chars // 2),
        exclude_urls=context.exclude_urls,
    )
    return [
        Passage(url=e.url, title=e.title, content=e.content, origin="wiki", query="", round=1)
        for e in found
    ]


def route_method(state: ProfilerState) -> Literal["plan_queries", "propose_paper_searches"]:
    """The paper's R¹ agent, or our per-dimension planner."""
    return "propose_paper_searches" if state["method"] == "paper" else "plan_queries"


def route_after_search(
    state: ProfilerState,
) -> Literal["summarize_evidence", "write_paper_document"]:
    """Both methods share the search node; each reads the results its own way."""
    return "write_paper_document" if state["method"] == "paper" else "summarize_evidence"


async def plan_queries(state: ProfilerState, runtime: Runtime[ProfilerContext]) -> dict[str, Any]:
    """Round-1 queries: at least one per dimension, each naming the character (fast model)."""
    context = profiler_context(runtime)
    queries, usage, dropped = await plan_search_queries(
        context.llm("fast"),
        name=state["name"],
        franchise=state.get("franchise"),
        per_dimension=context.queries_per_dimension,
    )
    pending = [PlannedQuery(dimension=q.dimension, query=q.query) for q in queries]
    return {"pending": pending, "usage": {**usage.as_dict(), "dropped_queries": dropped}}


def dispatch_searches(state: ProfilerState, runtime: Runtime[ProfilerContext]) -> list[Send]:
    """One ``Send`` per (query, tool): the wiki always (when found), the web when enabled."""
    tools: list[SearchTool] = []
    if web_search_enabled(profiler_context(runtime)):
        tools.append("web")
    if state.get("wiki_base"):
        tools.append("wiki")
    return [
        Send(
            "search",
            SearchTask(
                round=state["round"],
                dimension=item["dimension"],
                query=item["query"],
                tool=tool,
                wiki_base=state.get("wiki_base"),
            ),
        )
        for item in state["pending"]
        for tool in tools
    ]


async def search(state: SearchTask, runtime: Runtime[ProfilerContext]) -> dict[str, Any]:
    """Run one search through the real web or wiki client and keep its passages."""
    outcome = await search_once(
        state["tool"], state["query"], state["wiki_base"], profiler_context(runtime)
    )
    passages = [
        Passage(
            url=e.url,
            title=e.title,
            content=e.content,
            origin=e.origin,
            query=state["query"],
            round=state["round"],
        )
        for e in outcome.evidence
    ]
    log = SearchLog(
        round=state["round"],
        dimension=state["dimension"],
        query=state["query"],
        tool=state["tool"],
        results=len(passages),
        error=outcome.error,
    )
    usage = {
        "searches": outcome.searches,
        "failed_searches": int(outcome.error is not None),
        "search_credits": outcome.credits,
        "pages_fetched": outcome.pages_fetched,
        "results_dropped": outcome.results_dropped,
    }
    return {
        "evidence": passages,
        "searches": [log],
        "usage": usage,
        "notices": outcome.notices,
    }


def search_failure_notices(searches: Sequence[SearchLog], current: int) -> list[str]:
    """One notice per search tool that failed this round: how many, and the first error.

    Failed searches do not stop a round (the others may have found enough), but the user must
    see them: a profile built without the web because Tavily answered 432 is not the same
    profile, and a rerun later may do better.
    """
    notices = []
    for tool in ("web", "wiki"):
        ran = [s for s in searches if s["round"] == current and s["tool"] == tool]
        failed = [s for s in ran if s.get("error")]
        if failed:
            notices.append(
                f"round {current}: {len(failed)} of {len(ran)} {tool} searches failed "
                f"({failed[0]['error']})"
            )
    return notices


async def summarize_evidence(
    state: ProfilerState, runtime: Runtime[ProfilerContext]
) -> dict[str, Any]:
    """Give this round's passages ids and turn them into cited per-dimension notes."""
    context = profiler_context(runtime)
    sources = round_sources(state, context.exclude_urls)
    facts, usage = await _cited_notes(state, context, sources)
    notes = [f.model_dump() for f in facts]
    return {
        "sources": sources.updates,
        "facts": [{**note, "round": state["round"]} for note in notes],
        "rounds": [sources.record(state, notes)],
        "usage": usage,
        "notices": search_failure_notices(state["searches"], state["round"]),
    }


async def _cited_notes(
    state: ProfilerState, context: ProfilerContext, sources: RoundSources
) -> tuple[list[CitedFact], dict[str, int]]:
    """The round's cited notes (citations checked when asked) and what they cost.

    A summary still invalid after retries degrades the round: no notes from it (counted).
    """
    if not sources.ids:
        return [], {}
    everything = {s["id"]: s for s in sources.everything}
    shown = [(i, everything[i]["title"], "\n\n".join(sources.texts[i])) for i in sources.ids]
    try:
        facts, used, dropped_notes = await summarize_round(
            context.llm("fast"),
            name=state["name"],
            franchise=state.get("franchise"),
            sources=shown,
            canon=state["canon"],
            chars=max(1000, context.evidence_chars // len(sources.ids)),
        )
    except InvalidAnswerError as failed:
        return [], {**(failed.usage + LLMUsage(degraded=1)).as_dict(), "rounds_degraded": 1}
    if not (context.check_citations and facts):
        return facts, {**used.as_dict(), "dropped_notes": dropped_notes}
    texts = {i: str(s["content"]) for i, s in everything.items()}
    facts, dropped, unchecked, checked = await check_citations(context.llm("fast"), facts, texts)
    return facts, {
        **(used + checked).as_dict(),
        "dropped_notes": dropped_notes,
        "notes_checked": len(facts) + len(dropped),
        "notes_unsupported": len(dropped),
        "notes_unchecked": len(unchecked),
    }


async def reflect_coverage(
    state: ProfilerState, runtime: Runtime[ProfilerContext]
) -> dict[str, Any]:
    """Score coverage per dimension and choose follow-up queries for thin ones (fast model)."""
    context = profiler_context(runtime)
    if state["rounds"][-1]["results"] == 0:
        return {"coverage": dict.fromkeys(DIMENSIONS, 0.0), "pending": []}
    grouped = facts_by_dimension(state["facts"])
    done = list(dict.fromkeys(s["query"] for s in state["searches"]))
    review, usage = await review_coverage(
        context.llm("fast"),
        name=state["name"],
        franchise=state.get("franchise"),
        facts_by_dimension=grouped,
        done_queries=done,
        target=context.coverage_target,
        per_dimension=context.queries_per_dimension,
    )
    scores, follow_ups, dropped = settle_coverage(
        review,
        facts_per_dimension={d: len(f) for d, f in grouped.items()},
        name=state["name"],
        franchise=state.get("franchise"),
        done_queries=done,
        per_dimension=context.queries_per_dimension,
    )
    pending = [PlannedQuery(dimension=d, query=q) for d, q in follow_ups]
    reflection = Reflection(round=state["round"], coverage=scores, follow_ups=pending)
    return {
        "coverage": scores,
        "pending": pending,
        "reflections": [reflection],
        "usage": {**usage.as_dict(), "dropped_follow_ups": dropped},
    }


def stop_rule(state: ProfilerState, context: ProfilerContext) -> str | None:
    """The first stop rule that fires after a round, or ``None`` to search again."""
    usage = state.get("usage", {})
    rounds = state["rounds"]
    tokens = usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
    reserve = 1 + (2 if context.check_citations else 0)  # rewrite, then facts and prose checks
    if usage.get("llm_calls", 0) + CALLS_PER_ROUND + reserve > context.max_llm_calls:
        return "budget_llm_calls"
    if tokens >= context.max_tokens:
        return "budget_tokens"
    if usage.get("search_credits", 0) >= context.max_search_credits:
        return "budget_search_credits"
    if rounds[-1]["results"] == 0:
        return "all_searches_empty"
    coverage = state.get("coverage", {})
    if coverage and all(coverage.get(d, 0.0) >= context.coverage_target for d in DIMENSIONS):
        return "coverage_reached"
    if len(rounds) >= 2 and not rounds[-1]["new_source_ids"] and not rounds[-2]["new_source_ids"]:
        return "no_new_sources"
    if len(rounds) >= context.max_rounds:
        return "round_cap"
    if not state.get("pending"):
        return "no_follow_ups"
    return None


def check_stop_rules(state: ProfilerState, runtime: Runtime[ProfilerContext]) -> dict[str, Any]:
    """Record which stop rule fired, or move on to the next round."""
    reason = stop_rule(state, profiler_context(runtime))
    if reason is None:
        return {"round": state["round"] + 1}
    return {"stop_reason": reason}


def route_after_check(
    state: ProfilerState, runtime: Runtime[ProfilerContext]
) -> list[Send] | Literal["rewrite_profile"]:
    """Search again (fan-out) unless a stop rule fired."""
    if state.get("stop_reason"):
        return "rewrite_profile"
    return dispatch_searches(state, runtime)


async def rewrite_profile(
    state: ProfilerState, runtime: Runtime[ProfilerContext]
) -> dict[str, Any]:
    """Write the first-person profile from the notes and the passages; facts checked next."""
    sources = state.get("sources", [])
    if not sources:
        raise InputError(
            f"found nothing about {state['name']!r} ({state.get('stop_reason')})",
            "check the name, --franchise or --wiki, or set TAVILY_API_KEY for web search",
        )
    notes = facts_by_dimension(state.get("facts", []))
    known = {s["id"] for s in sources}
    context = profiler_context(runtime)
    draft, kept, usage = await draft_with_citations(
        lambda reminder: rewrite_first_person(
            context.role_llm("rewrite"),
            name=state["name"],
            franchise=state.get("franchise"),
            facts_by_dimension=notes,
            passages=passages_text(sources, [], context.evidence_chars),
            known_ids=known,
            canon=state["canon"],
            reminder=reminder,
        ),
        known,
    )
    return rewrite_update(draft, kept, usage, notes_document(state["name"], notes))


def finish_profile(state: ProfilerState) -> dict[str, Any]:
    """Make the optional output fields explicit (``None``) so readers need no ``.get``."""
    return {"franchise": state.get("franchise"), "wiki_page": state.get("wiki_page")}


builder = StateGraph(
    ProfilerState,
    context_schema=ProfilerContext,
    input_schema=ProfileInput,
    output_schema=ProfileOutput,
)
builder.add_node(resolve_character)
builder.add_node(plan_queries)
builder.add_node(propose_paper_searches)
builder.add_node("search", search, input_schema=SearchTask)
builder.add_node(summarize_evidence)
builder.add_node(reflect_coverage)
builder.add_node(check_stop_rules)
builder.add_node(rewrite_profile)
builder.add_node(write_paper_document)
builder.add_node("rewrite_paper_profile", rewrite_paper_profile_node)
builder.add_node(verify_profile)
builder.add_node(finish_profile)
builder.add_edge(START, "resolve_character")
builder.add_conditional_edges(
    "resolve_character", route_method, ["plan_queries", "propose_paper_searches"]
)
builder.add_conditional_edges("plan_queries", dispatch_searches, ["search"])
builder.add_conditional_edges("propose_paper_searches", dispatch_searches, ["search"])
builder.add_conditional_edges(
    "search", route_after_search, ["summarize_evidence", "write_paper_document"]
)
builder.add_edge("summarize_evidence", "reflect_coverage")
builder.add_edge("reflect_coverage", "check_stop_rules")
builder.add_conditional_edges("check_stop_rules", route_after_check, ["search", "rewrite_profile"])
builder.add_conditional_edges(
    "write_paper_document",
    route_after_document,
    ["propose_paper_searches", "rewrite_paper_profile"],
)
builder.add_edge("rewrite_profile", "verify_profile")
builder.add_edge("rewrite_paper_profile", "verify_profile")
builder.add_edge("verify_profile", "finish_profile")
builder.add_edge("finish_profile", END)

graph = builder.compile(name="profiler")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[ProfilerState, ProfilerContext, ProfileInput, ProfileOutput]:
    """The profiler compiled with a checkpointer (resume)."""
    return builder.compile(checkpointer=checkpointer, name="profiler")
