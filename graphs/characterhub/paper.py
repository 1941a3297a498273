"""Nodes of the ``paper`` profiling method: CharacterHub's R¹/R² deep search and Table 8 rewrite.

Round one (R¹) gives the agent the Table 7 first-search instruction: it plans its searches,
reads the results and writes an encyclopedic document. Round two (R²) always runs (unless the
user asked for the paper's "w.o. IS" ablation with one round): the R¹ document goes back with
the Table 7 iterative instruction, the agent searches again and writes the whole document
against all the evidence (with ``--check-citations``, re-checking R¹ under our rules). The R² document is DRInfo; the
Table 8 prompt rewrites it in the first person.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from personae.agents.characterhub.deep_searcher import propose_searches, write_document
from personae.agents.characterhub.profile_rewriter import (
    rewrite_paper_profile,
    rewrite_paper_profile_text,
)
from personae.errors import InputError
from personae.graphs.characterhub.evidence import (
    draft_with_citations,
    passages_text,
    rewrite_update,
    round_sources,
)
from personae.graphs.characterhub.state import ProfilerContext, ProfilerState, profiler_context


def paper_rounds(context: ProfilerContext) -> int:
    """R¹ and R² (2), or R¹ alone when ``max_rounds`` is 1 (the paper's ablation)."""
    return 1 if context.max_rounds < 2 else 2


def _first_document(state: ProfilerState) -> str | None:
    documents = state.get("documents", [])
    return str(documents[0]["text"]) if documents else None


async def propose_paper_searches(
    state: ProfilerState, runtime: Runtime[ProfilerContext]
) -> dict[str, Any]:
    """The agent's searches for this round (Table 7 first or iterative instruction)."""
    context = profiler_context(runtime)
    queries, usage, dropped = await propose_searches(
        context.role_llm("search"),
        entity=state["name"],
        franchise=state.get("franchise"),
        canon=state["canon"],
        first_document=_first_document(state) if state["round"] > 1 else None,
        count=context.paper_queries,
    )
    if not queries:  # a model that plans nothing still searches for the character
        queries = [" ".join(p for p in (state["name"], state.get("franchise")) if p)]
    pending = [{"dimension": "general", "query": q} for q in queries]
    return {"pending": pending, "usage": {**usage.as_dict(), "dropped_queries": dropped}}


async def write_paper_document(
    state: ProfilerState, runtime: Runtime[ProfilerContext]
) -> dict[str, Any]:
    """Give this round's passages ids and write the round's document (R¹, then R²)."""
    context = profiler_context(runtime)
    current = state["round"]
    sources = round_sources(state, context.exclude_urls)
    everything = sources.everything
    first = _first_document(state) if current > 1 else None
    shown = sources.ids if current == 1 else [s["id"] for s in everything]  # R² re-checks all
    document, usage = first or "", {}
    if shown:
        document, used = await write_document(
            context.role_llm("search"),
            entity=state["name"],
            franchise=state.get("franchise"),
            canon=state["canon"],
            first_document=first,
            passages=passages_text(everything, shown, context.evidence_chars),
            known_ids={s["id"] for s in everything},
            grounded=bool(context.check_citations),  # ours, opt-in: grounding rules
        )
        usage = used.as_dict()
    update: dict[str, Any] = {
        "sources": sources.updates,
        "rounds": [sources.record(state, [])],
        "documents": [{"round": current, "text": document}],
        "usage": usage,
    }
    if current >= paper_rounds(context):
        update["stop_reason"] = "paper_rounds"
    else:
        update["round"] = current + 1
    return update


def route_after_document(
    state: ProfilerState,
) -> Literal["propose_paper_searches", "rewrite_paper_profile"]:
    """R² after R¹; the rewrite after the last round."""
    return "rewrite_paper_profile" if state.get("stop_reason") else "propose_paper_searches"


async def _unedited_rewrite(
    state: ProfilerState, context: ProfilerContext, drinfo: str
) -> dict[str, Any]:
    """Table 8 alone over DRInfo; the answer is the profile (no fact list, nothing checked)."""
    draft, used = await rewrite_paper_profile_text(
        context.role_llm("rewrite"), name=state["name"], document=drinfo, canon=state["canon"]
    )
    profile = {"profile": draft.profile.strip(), "conflicts": [], "drinfo": drinfo}
    return {**profile, "draft_facts": [], "usage": used.as_dict()}


async def rewrite_paper_profile_node(
    state: ProfilerState, runtime: Runtime[ProfilerContext]
) -> dict[str, Any]:
    """Table 8 over DRInfo, unedited; with our opt-in check, its facts listed and checked next."""
    sources = state.get("sources", [])
    documents = state.get("documents", [])
    drinfo = str(documents[-1]["text"]) if documents else ""
    if not sources or not drinfo.strip():
        raise InputError(
            f"found nothing about {state['name']!r} in {len(documents)} search round(s)",
            "check the name, --franchise or --wiki, or set TAVILY_API_KEY for web search",
        )
    known = {s["id"] for s in sources}
    context = profiler_context(runtime)
    if not context.check_citations:  # the paper's method: Table 8 verbatim, its answer as is
        return await _unedited_rewrite(state, context, drinfo)
    draft, kept, usage = await draft_with_citations(
        lambda reminder: rewrite_paper_profile(
            context.role_llm("rewrite"),
            name=state["name"],
            document=drinfo,
            known_ids=known,
            canon=state["canon"],
            reminder=reminder,
        ),
        known,
    )
    return rewrite_update(draft, kept, usage, drinfo)
