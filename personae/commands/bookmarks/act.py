"""`personae bookmarks act`: predict a character's next action with the BOOKMARKS agent, show its grounding.

The flags fill the graph's run context; what they leave out the context takes from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL`` (``--model``), ``PERSONAE_FAST_MODEL`` (``--fast-model``),
``PERSONAE_TEMPERATURE`` (``--temperature``; default 0), ``CHROMA_HOST`` / ``CHROMA_PORT`` (bank
on a Chroma server instead of ``--memory``), ``PERSONAE_EMBEDDINGS`` (``--embedding``: the
bank's embedding; each has its own bank). With ``--memory DIR`` the bookmark bank persists
there, so later calls reuse and extend it; without it the bank lives in this process only and
starts empty. With ``--memory`` the step is also checkpointed there
(:mod:`personae.graphs.bookmarks.step_checkpoints`): a rerun of a killed step resumes it,
paying only for the LLM calls that were in flight. Before the step, the estimate of its model
calls is printed (:func:`personae.evals.bookmarks.costs.estimate_step`), and ``--max-calls N``
stops it cleanly at N paid calls: the rerun resumes it, reusing every answer already paid for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
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
from personae.errors import InputError
from personae.files import check_writable_dir
from personae.progress import to_stderr

if TYPE_CHECKING:
    from personae.agents.costs import Estimate
    from personae.graphs.bookmarks.graph import BookmarksContext
    from personae.llm import CallLimitReached
    from personae.memory.bookmarks.storyline import Storyline

DEGRADED_NOTE = (
    "model answers still invalid after retries, each kept as its role's safe default (no "
    f"question, no match, the bookmark unsynced, no evidence); {RERUN_ASKS_AGAIN}"
)


def register(commands: Any) -> None:
    """Add `bookmarks act`."""
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
    parser.add_argument(
        "--max-calls",
        type=int,
        metavar="N",
        help="stop cleanly before model call N+1 (needs --memory: the stopped step is kept "
        "there, and a rerun resumes it, reusing every answer already paid for); the estimate "
        "printed before the step says what to expect",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="with --memory: when another step runs on that memory, stop (exit 3) instead of "
        "waiting for it",
    )
    # The BOOKMARKS context's default sampling (graphs/bookmarks/acting.py), not the server's.
    add_model_flags(parser, temperature_default="0 for every role, as the released runner's 1e-8")
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


def check_max_calls(args: argparse.Namespace) -> None:
    """``--max-calls``: at least 1, and with ``--memory`` (where a stopped step resumes)."""
    if args.max_calls is None:
        return
    if args.max_calls < 1:
        raise InputError(f"--max-calls {args.max_calls} allows no call", "pass 1 or more")
    if args.memory is None:
        raise InputError(
            "--max-calls needs --memory",
            "pass --memory DIR: the stopped step is kept there and a rerun resumes it",
        )


def estimate_act(storyline: Storyline, character: str, position: int, context: Any) -> Estimate:
    """The step's calls, from where the bank last synced the character's bookmarks."""
    from personae.agents.costs import Estimate
    from personae.evals.bookmarks.costs import estimate_step
    from personae.graphs.bookmarks.resources import resources_for

    bank = resources_for(
        context.storyline_path, context.memory_dir, context.chroma, context.text_embedding()
    ).bank
    synced = [b.position for b in bank.all() if b.character == character]
    before = [p for p in synced if p <= position]
    step = estimate_step(
        storyline,
        character,
        position,
        max(before) if before else None,
        released=context.prompts == "released",
    )
    where = f"bookmarks synced to {max(before)}" if before else "no bookmark of them yet"
    return Estimate(step.calls, step.tokens, f"one step of {character} at {position}, {where}")


def stopped_at_limit(args: argparse.Namespace) -> CallLimitReached:
    """The one line for a step stopped by ``--max-calls``: the limit, and how to go on."""
    from personae.llm import CallLimitReached

    again = " ".join(shlex.quote(a) for a in sys.argv[1:] if a) or "personae bookmarks act ..."
    return CallLimitReached(
        f"stopped at --max-calls {args.max_calls}: the step is kept in {args.memory}",
        f"rerun to continue (answers already paid for are reused; raise or drop --max-calls): "
        f"personae {again}",
    )


def run(args: argparse.Namespace) -> int:
    """Check the input, run one BOOKMARKS step and print the action and its grounding."""
    from personae.agents.costs import estimate_line
    from personae.llm import CallLimitReached, call_limit
    from personae.runners.bookmarks import check_step, predict_action, scene_view

    storyline, character, position = check_step(args.storyline, args.character, args.position)
    check_max_calls(args)
    if args.memory is not None:
        check_writable_dir(args.memory, "--memory")
    context = act_context(args)
    if args.memory is not None:  # a bad setting is one line, before the estimate
        from personae.settings import check_checkpointer_spec

        check_checkpointer_spec(context.settings.checkpointer)
    estimate = estimate_act(storyline, character, position, context)
    models = {"model": context.model, "fast model": context.fast_model}
    sys.stderr.write("personae: " + estimate_line(estimate, models))
    sys.stderr.flush()
    try:
        with call_limit(args.max_calls):
            step = asyncio.run(
                predict_action(
                    character,
                    position,
                    context=context,
                    fresh=args.fresh,
                    wait=not args.no_wait,
                    progress=to_stderr,
                )
            )
    except CallLimitReached:
        raise stopped_at_limit(args) from None
    if step.resumed:
        sys.stderr.write(
            "personae: resumed the interrupted step: its finished work was reused "
            "(--fresh starts over)\n"
        )
    result: dict[str, Any] = step.output
    warnings = step.warnings
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
