"""`personae act`: predict a character's next action with the BOOKMARKS agent, show its grounding.

Environment read here, at the edge (flags win): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL`` (``--model``), ``PERSONAE_FAST_MODEL`` (``--fast-model``; precedence in
:mod:`personae.commands.models`), ``CHROMA_HOST`` / ``CHROMA_PORT`` (bank on a Chroma server
instead of ``--memory``). With ``--memory DIR`` the bookmark bank persists there, so later calls
reuse and extend it; without it the bank lives in this process only and starts empty.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from personae.commands.models import add_model_flags, resolve_models
from personae.files import check_writable_dir


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
    parser.add_argument(
        "--hide-title",
        action="store_true",
        help="leave the story title out of every prompt (it invites recall of later plot)",
    )
    add_model_flags(parser)
    parser.set_defaults(handler=run)


def render_text(result: dict[str, Any]) -> str:
    """The action, one line per grounding bookmark, then the step's counters."""
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
    )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Check the input, run one BOOKMARKS step and print the action and its grounding."""
    from personae.graphs.bookmarks import BookmarksContext, build_graph
    from personae.memory.storyline import open_storyline

    storyline = open_storyline(args.storyline)
    character = storyline.check_character(args.character)
    position = storyline.check_position(args.position)
    if args.memory is not None:
        check_writable_dir(args.memory, "--memory")
    models = resolve_models(args, ("strong", "fast"), default_sampling={"temperature": 0.0})
    context = BookmarksContext(
        storyline_path=str(args.storyline),
        memory_dir=str(args.memory) if args.memory else None,
        model=models.settings.model,
        fast_model=models.settings.fast_model,
        openai_base_url=models.settings.openai_base_url or "",
        temperature=models.sampling_text("temperature"),
        top_p=models.sampling_text("top_p"),
        hide_title=args.hide_title,
    )
    result: dict[str, Any] = asyncio.run(
        build_graph().ainvoke({"character": character, "position": position}, context=context)
    )
    if args.json:
        payload = {"storyline": storyline.name, "character": character, "position": position}
        payload.update({key: result[key] for key in ("action", "grounding", "bookmarks", "stats")})
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(result))
    return 0
