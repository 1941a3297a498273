"""A parent graph: profile a character, index the profile as a persona, then talk to it.

Two Personae graphs run as subgraphs of an app's own LangGraph graph, each with its own run
context: the profiler (CharacterHub) with a ``ProfilerContext``, then the AMADEUS role-play
graph with an ``AmadeusContext``. The parent's context holds both, so one run's settings travel
to each subgraph (models, budgets, folders), and whatever they leave empty is filled from the
settings when the contexts are built (``PERSONAE_MODEL``, ``OPENAI_BASE_URL``, ...). Between
them, a node of the app indexes the profile as a persona (Personae's ``index_persona``).

    uv run python examples/profile_then_talk.py "Kenshiro" --question "What do you fight for?"
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from personae import (
    AmadeusContext,
    PersonaeError,
    ProfilerContext,
    build_amadeus_graph,
    build_profiler_graph,
    index_persona,
    persona_index_settings,
    profile_document,
)

PROFILER = build_profiler_graph()
AMADEUS = build_amadeus_graph()


@dataclass(frozen=True, kw_only=True)
class AppContext:
    """The app's run settings: one context per subgraph."""

    profiler: ProfilerContext = field(default_factory=ProfilerContext)
    """How the character is researched (models, rounds, web search, wiki)."""
    amadeus: AmadeusContext = field(default_factory=AmadeusContext)
    """How the character answers (models, persona memory folder, method)."""


class AppInput(TypedDict):
    """Who to profile and what to ask them."""

    name: str
    franchise: str | None
    wiki_url: str | None
    question: str


class AppState(AppInput):
    """The input, the profile document and the answer."""

    profile: dict[str, Any]
    answer: str


async def research(state: AppState, runtime: Runtime[AppContext]) -> dict[str, Any]:
    """The profiler subgraph, with its own context."""
    request: Any = {  # the profiler's input (its ProfileInput TypedDict)
        "name": state["name"],
        "franchise": state["franchise"],
        "wiki_url": state["wiki_url"],
    }
    result = await PROFILER.ainvoke(request, context=runtime.context.profiler)
    return {"profile": profile_document(result)}


async def index_profile(state: AppState, runtime: Runtime[AppContext]) -> dict[str, Any]:
    """The profile as an AMADEUS persona in the AMADEUS context's memory folder."""
    amadeus = runtime.context.amadeus
    where = persona_index_settings(amadeus.memory_dir, context=amadeus)
    await index_persona(state["profile"], index=where, context=amadeus)
    return {}


async def talk(state: AppState, runtime: Runtime[AppContext]) -> dict[str, Any]:
    """The AMADEUS subgraph, with its own context."""
    character = str(state["profile"]["character"])
    request = {"character": character, "query": state["question"]}
    result = await AMADEUS.ainvoke(request, context=runtime.context.amadeus)
    return {"answer": str(result["response"])}


builder = StateGraph(AppState, context_schema=AppContext, input_schema=AppInput)
builder.add_node(research)
builder.add_node(index_profile)
builder.add_node(talk)
builder.add_edge(START, "research")
builder.add_edge("research", "index_profile")
builder.add_edge("index_profile", "talk")
builder.add_edge("talk", END)
graph = builder.compile(name="profile_then_talk")


def main(argv: Sequence[str] | None = None) -> int:
    """Profile, index and ask; print the answer."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--franchise")
    parser.add_argument("--wiki", help="the character's wiki (default: found)")
    parser.add_argument("--question", default="Who are you?")
    parser.add_argument("--personas", type=Path, default=Path("personas"))
    parser.add_argument("--max-rounds", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        context = AppContext(
            profiler=ProfilerContext(max_rounds=args.max_rounds),
            amadeus=AmadeusContext(memory_dir=str(args.personas)),
        )
        context.profiler.llm("strong")  # no LLM configured: one line now, not mid-run
        payload: AppInput = {
            "name": args.name,
            "franchise": args.franchise,
            "wiki_url": args.wiki,
            "question": args.question,
        }
        result = asyncio.run(graph.ainvoke(payload, context=context))
    except PersonaeError as error:
        sys.stderr.write(f"profile_then_talk: error: {error}\n")
        return error.exit_code
    sys.stdout.write(f"{result['profile']['character']}: {result['answer']}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
