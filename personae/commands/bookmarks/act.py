"""`personae act`: predict a character's next action with the BOOKMARKS agent, show its grounding.

The flags fill the graph's run context; what they leave out the context takes from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL`` (``--model``), ``PERSONAE_FAST_MODEL`` (``--fast-model``),
``PERSONAE_TEMPERATURE`` (``--temperature``; default 0), ``CHROMA_HOST`` / ``CHROMA_PORT`` (bank
on a Chroma server instead of ``--memory``), ``PERSONAE_EMBEDDINGS`` (``--embedding``: the
bank's embedding; each has its own bank). With ``--memory DIR`` the bookmark bank persists
there, so later calls reuse and extend it; without it the bank lives in this process only and
starts empty. With ``--memory`` the step is also checkpointed there
(:mod:`personae.graphs.bookmarks.step_checkpoints`): a rerun of a killed step resumes it,
paying only for the LLM calls that were in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.bookmarks.options import (
    add_method_flag,
    add_roles_flag,
    add_title_flags,
    prompt_set,
)
from personae.commands.models import add_embedding_flag, add_model_flags, model_fields
from personae.degraded import RERUN_ASKS_AGAIN, print_degraded
from personae.files import check_writable_dir
from personae.graphs.bookmarks.step_checkpoints import StepCheckpoints, StepRun

if TYPE_CHECKING:
    from personae.graphs.bookmarks.graph import BookmarksContext

DEGRADED_NOTE = (
    "model answers still invalid after retries, each kept as its role's safe default (no "
    f"question, no match, the bookmark unsynced, no evidence); {RERUN_ASKS_AGAIN}"
)


def register(commands: Any) -> None:
    """Add the `act` subcommand."""
    parser = commands.add_parser(
        "act",
        help="predict a character's next action at a story position (BOOKMARKS agent)",
    )
    parser.add_argument("storyline", type=Path, help="BOOKMARKS release JSON or JSONL storyline")
    parser.add_argument("--character", required=True, help="who acts, e.g. Haruhi")
    parser.add_argument(
        "--at", type=int, required=True, dest="position", help="target position (0-based)"
    )
    parser.add_argument("--memory", type=Path, help="bookmark bank folder (kept between runs)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_method_flag(parser)
    add_roles_flag(parser)
    add_title_flags(parser)
    parser.add_argument(
        "--scene",
        action="store_true",
        help="also print the scene the agent saw and, when the position is one of the "
        "character's actions, the storyline's true next action",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="with --memory: start the step over, discarding what an interrupted run of the "
        "same step left (by default a rerun resumes it, paying only for calls in flight)",
    )
    add_model_flags(parser)
    add_embedding_flag(parser)
    parser.set_defaults(handler=run)


def render_text(result: dict[str, Any], warnings: list[str] | None = None) -> str:
    """The action, one line per grounding bookmark, then the step's counters and warnings."""
    lines = [result["action"], "", "Grounded by:" if result["bookmarks"] else "No bookmarks yet."]
    for bookmark in result["bookmarks"]:
        lines.append(
            f"  {bookmark['id']} ({bookmark['type']}, synced to {bookmark['position']}): "
            f"Q: {bookmark['question']} A: {bookmark['answer']}"
        )
    stats = result["stats"]
    lines.append(
        f"Step: {stats['reuse']} reused, {stats['derive']} derived, {stats['new']} new; "
        f"sync read {stats['actions_read']} actions ({stats['actions_from_scratch']} from "
        f"scratch); {stats['llm_calls']} LLM calls"
        + (
            f"; {stats['questions_dropped']} proposed questions dropped"
            if stats.get("questions_dropped")
            else ""
        )
    )
    lines += [f"Warning: {warning}" for warning in warnings or []]
    return "\n".join(lines) + "\n"


def scene_view(storyline: Any, character: str, position: int, size: int) -> dict[str, Any]:
    """The scene before ``position`` and, when ``character`` acts there, the true action.

    A benchmark storyline knows what the character really did next: showing it beside the
    prediction is how a user checks one step by eye (the agent never sees it).
    """
    truth = storyline.actions[position]
    after = [p for p in storyline.positions_of(character) if p >= position]
    return {
        "scene": [action.render() for action in storyline.scene(position, size)],
        "true_action": truth.text if truth.by(character) else None,
        "next_own_position": after[0] if after else None,
    }


def render_scene(view: dict[str, Any], character: str, position: int) -> str:
    """The scene lines, then the true next action (or where the character acts next)."""
    lines = ["Scene:", *[f"  {line}" for line in view["scene"]]]
    if view["true_action"] is not None:
        lines.append(f"True next action at [{position}]: {view['true_action']}")
    elif view["next_own_position"] is not None:
        lines.append(
            f"[{position}] is not an action of {character}; "
            f"their next one is at {view['next_own_position']}"
        )
    else:
        lines.append(f"{character} takes no action at or after [{position}]")
    return "\n".join(lines) + "\n\n"


async def run_step(
    graph: Any, payload: dict[str, Any], context: Any, memory: Path | None, fresh: bool
) -> StepRun:
    """One step, checkpointed in ``memory`` (``None``: an in-process bank, nothing to resume)."""
    async with StepCheckpoints(memory, context.settings) as checkpoints:
        return await checkpoints.invoke(graph, payload, context, fresh=fresh)


def act_context(args: argparse.Namespace) -> BookmarksContext:
    """The BOOKMARKS run context of the flags; the settings fill the rest.

    The models and the embedding are asked for here: no LLM, a bad spec or a missing
    embedding package fails before any model call.
    """
    from personae.graphs.bookmarks.graph import BookmarksContext

    context = BookmarksContext(
        storyline_path=str(args.storyline),
        memory_dir=str(args.memory) if args.memory else None,
        embedding=args.embedding,
        hide_title=args.hide_title,
        prompts=prompt_set(args.method),
        roles=args.roles,
        **model_fields(args),
    )
    context.llm("strong")
    context.llm("fast")
    context.text_embedding()
    return context


def run(args: argparse.Namespace) -> int:
    """Check the input, run one BOOKMARKS step and print the action and its grounding."""
    from personae.graphs.bookmarks.graph import build_graph, step_warnings
    from personae.memory.bookmarks.storyline import open_storyline

    storyline = open_storyline(args.storyline)
    character = storyline.check_character(args.character)
    position = storyline.check_position(args.position)
    if args.memory is not None:
        check_writable_dir(args.memory, "--memory")
    context = act_context(args)
    step = asyncio.run(
        run_step(
            build_graph(),
            {"character": character, "position": position},
            context,
            args.memory,
            args.fresh,
        )
    )
    if step.resumed:
        sys.stderr.write(
            "personae: resumed the interrupted step: its finished work was reused "
            "(--fresh starts over)\n"
        )
    result: dict[str, Any] = step.output
    warnings = step_warnings(result["stats"])
    degraded = int(result["stats"].get("degraded", 0))
    print_degraded(degraded, {"answers": degraded}, DEGRADED_NOTE)
    view = scene_view(storyline, character, position, context.scene_size) if args.scene else None
    if args.json:
        payload = {"storyline": storyline.name, "character": character, "position": position}
        payload.update({key: result[key] for key in ("action", "grounding", "bookmarks", "stats")})
        payload["warnings"] = warnings
        if view is not None:
            payload.update(view)
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        for warning in warnings:  # the JSON carries them; the terminal must show them too
            sys.stderr.write(f"personae: warning: {warning}\n")
        return 0
    if view is not None:
        sys.stdout.write(render_scene(view, character, position))
    sys.stdout.write(render_text(result, warnings))
    return 0
