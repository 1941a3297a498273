"""`personae bookmarks fetch|positions`: get the benchmark; list where a character acts.

``bookmarks fetch`` gets the benchmark for users who do not have it; ``bookmarks positions``
lists a character's positions (the paper's history / test split marked) so a user can pick a
target for ``personae bookmarks act --at``.

Settings read here, at the edge: ``HF_ENDPOINT`` (mirror; ``--endpoint`` wins), ``HF_TOKEN``
(optional bearer token), ``PERSONAE_CONTACT`` (through the User-Agent).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from personae.errors import InputError
from personae.files import check_writable_dir
from personae.urls import web_url

DEFAULT_DEST = Path("data/bookmarks")
DEFAULT_MAX_MB = 1000
"""Largest file downloaded by default (the storylines are a few MB each)."""


def register(commands: Any) -> None:
    """Add `bookmarks fetch` and `bookmarks positions`."""
    fetch = commands.add_parser(
        "fetch",
        help="download a benchmark",
        description="Download the BOOKMARKS storylines (its Fandom and Bandori datasets) from "
        "the Hugging Face Hub; files already present with the same size are skipped.",
    )
    fetch.add_argument(
        "dataset", nargs="?", default="bookmarks", choices=["bookmarks"], help="which benchmark"
    )
    fetch.add_argument(
        "--dest", type=Path, default=DEFAULT_DEST, help=f"target folder (default {DEFAULT_DEST})"
    )
    fetch.add_argument(
        "--endpoint", help="Hub URL (default $HF_ENDPOINT or https://huggingface.co)"
    )
    fetch.add_argument(
        "--max-mb",
        type=int,
        default=DEFAULT_MAX_MB,
        help=f"largest file downloaded, in MB (default {DEFAULT_MAX_MB})",
    )
    fetch.set_defaults(handler=run)
    positions = commands.add_parser(
        "positions",
        help="list a character's positions in a storyline (history / test split marked)",
        description="List every position where the character acts, with its chapter and text; "
        "the first half of them is the history, the second half the benchmark's test targets.",
    )
    positions.add_argument("storyline", type=Path, help="BOOKMARKS release JSON or JSONL")
    positions.add_argument("--character", required=True, help="who, e.g. Haruhi")
    positions.add_argument("--test", action="store_true", help="only the test positions")
    positions.add_argument("--json", action="store_true", help="print one JSON object")
    positions.set_defaults(handler=run_positions)


def run(args: argparse.Namespace) -> int:
    """Fetch the benchmark and print what was downloaded, skipped and converted."""
    if args.max_mb < 1:
        raise InputError("--max-mb must be at least 1", "pass a size in megabytes")
    if args.endpoint is not None:
        web_url(args.endpoint, "--endpoint", "https://huggingface.co")
    from personae.settings import load_settings, user_agent
    from personae.tools.bookmarks.hf_datasets import (
        DEFAULT_ENDPOINT,
        FetchReport,
        HubClient,
        fetch_bookmarks,
    )

    settings = load_settings()
    endpoint = args.endpoint or settings.hf_endpoint or DEFAULT_ENDPOINT
    dest: Path = args.dest
    check_writable_dir(dest, "--dest")

    async def fetch() -> FetchReport:
        async with HubClient(
            endpoint,
            user_agent=user_agent(settings),
            token=settings.hf_token,
            max_bytes=args.max_mb * 1_000_000,
        ) as client:
            return await fetch_bookmarks(client, dest)

    report = asyncio.run(fetch())
    out = sys.stdout
    for path in report.downloaded:
        out.write(f"downloaded {path}\n")
    for path in report.converted:
        out.write(f"converted  {path}\n")
    for name in report.ignored:
        out.write(f"ignored    {name} (format not used)\n")
    out.write(
        f"{len(report.downloaded)} downloaded, {len(report.skipped)} already present, "
        f"{len(report.converted)} converted into {dest}\n"
    )
    return 0


def run_positions(args: argparse.Namespace) -> int:
    """Print the character's positions: a summary line, then one line per position."""
    import json

    from personae.memory.bookmarks.storyline import open_storyline

    storyline = open_storyline(args.storyline)
    character = storyline.check_character(args.character)
    history, test = storyline.test_split(character)
    shown = test if args.test else (*history, *test)
    rows: list[dict[str, Any]] = [
        {
            "position": p,
            "split": "test" if p in set(test) else "history",
            "chapter": storyline.actions[p].chapter,
            "text": storyline.actions[p].text,
        }
        for p in shown
    ]
    if args.json:
        payload = {
            "storyline": storyline.name,
            "character": character,
            "actions": len(storyline),
            "history": len(history),
            "test": len(test),
            "positions": rows,
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return 0
    first_test = f", from {test[0]}" if test else ""
    out = [
        f"{character} in {storyline.name}: {len(history) + len(test)} of {len(storyline)} "
        f"actions; history {len(history)}, test {len(test)}{first_test}"
    ]
    width = len(str(len(storyline)))
    for row in rows:
        text = row["text"] if len(row["text"]) <= 100 else row["text"][:99] + "…"
        out.append(f"{row['position']:>{width}}  {row['split']:<7}  {row['chapter']}: {text}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0
