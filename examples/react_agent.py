"""A ReAct agent that uses Personae's four tools, and survives the ones that fail.

The agent (LangChain's ``create_agent``, a LangGraph graph) gets ``profile_character``,
``ask_character`` (AMADEUS), ``storyline_memory`` (BOOKMARKS) and ``arcane_act`` (ARCANE), built
with Personae's tool factories from the settings (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL``, ... as for every command). ``profile_character`` indexes each profile where
``ask_character`` reads (``--personas``), so "profile X, then ask X" works in one question. A
tool that fails (an unknown character, a
position past the end of the story, an unreachable wiki) must not end the conversation: the
``report_tool_errors`` middleware turns Personae's one-line error into an error tool message,
so the model reads what went wrong and can try something else.

    uv run --extra examples python examples/react_agent.py "What does Iago want?" --data data
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import wrap_tool_call
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException
from langgraph.types import Command

from personae import (
    AmadeusContext,
    LLMContext,
    PersonaeError,
    ProfilerContext,
    RoleplayContext,
    create_arcane_act_tool,
    create_ask_character_tool,
    create_profile_tool,
    create_storyline_memory_tool,
)

SYSTEM = (
    "You answer questions about fictional characters with your tools. When a tool reports an "
    "error, read it, fix the call if you can, and otherwise say what you could not find."
)


@wrap_tool_call
async def report_tool_errors(
    request: Any, handler: Callable[[Any], Awaitable[ToolMessage | Command[Any]]]
) -> ToolMessage | Command[Any]:
    """A failing tool becomes an error message the model reads, not the end of the run."""
    try:
        return await handler(request)
    except (PersonaeError, ToolException) as error:
        call = request.tool_call
        return ToolMessage(
            content=f"error: {error}", tool_call_id=call["id"], name=call["name"], status="error"
        )


def build_tools(args: argparse.Namespace) -> list[BaseTool]:
    """The four tools, their contexts filled from the settings once, here."""
    personas = AmadeusContext(memory_dir=args.personas)  # profiled characters are indexed here
    profiler = ProfilerContext(max_rounds=args.max_rounds)
    tools: list[BaseTool] = [
        create_profile_tool(profiler, wiki=args.wiki, index=personas),
        create_ask_character_tool(personas),
        create_arcane_act_tool(RoleplayContext(data_dir=args.data, arc_scope="character")),
    ]
    if args.storyline:
        tools.append(create_storyline_memory_tool(args.storyline, memory_dir=args.memory))
    return tools


def build_agent(args: argparse.Namespace) -> Any:
    """The ReAct agent: the strong model of the settings, the tools, the error middleware."""
    model = LLMContext().llm("strong")
    return create_agent(
        model, build_tools(args), system_prompt=SYSTEM, middleware=[report_tool_errors]
    )


async def ask(agent: Any, question: str) -> dict[str, Any]:
    """One question to the agent; its final state (every message, tool calls included)."""
    state: Any = {"messages": [{"role": "user", "content": question}]}
    return dict(await agent.ainvoke(state))


def main(argv: Sequence[str] | None = None) -> int:
    """Ask the agent one question and print its answer."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--personas", default="personas", help="AMADEUS persona memory")
    parser.add_argument("--storyline", help="a BOOKMARKS storyline file")
    parser.add_argument("--memory", help="the bookmark bank's folder (default: in memory)")
    parser.add_argument("--data", default="data", help="ARCANE's data folder")
    parser.add_argument("--wiki", help="the wiki profile_character uses")
    parser.add_argument("--max-rounds", type=int, default=1, help="profiler search rounds")
    args = parser.parse_args(argv)
    try:
        result = asyncio.run(ask(build_agent(args), args.question))
    except PersonaeError as error:  # a setting or the LLM itself: one line, as the CLI does
        sys.stderr.write(f"react_agent: error: {error}\n")
        return error.exit_code
    sys.stdout.write(str(result["messages"][-1].content) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
