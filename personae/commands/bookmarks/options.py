"""Flags `bookmarks act` and `bookmarks bench` share: the story title, the role preset, the prompt set."""

from __future__ import annotations

from typing import Any, Literal

ROLE_PRESETS = ("paper", "released")
PROMPT_METHODS: dict[str, Literal["released", "personae"]] = {
    "bookmarks": "released",
    "bookmarks-personae": "personae",
}
"""The BOOKMARKS method names and the prompt set each runs (the paper's, then ours)."""


def add_title_flags(parser: Any) -> None:
    """``--show-title`` (ours) and ``--hide-title`` (the default, kept for older scripts)."""
    title = parser.add_mutually_exclusive_group()
    title.add_argument(
        "--show-title",
        dest="hide_title",
        action="store_false",
        help="name the story in the acting prompt (ours; the released prompts name none, and "
        "a famous title invites recall of later plot)",
    )
    title.add_argument(
        "--hide-title",
        dest="hide_title",
        action="store_true",
        help="leave the story title out of every prompt (the default, as the released prompts)",
    )
    parser.set_defaults(hide_title=True)


def add_roles_flag(parser: Any) -> None:
    """``--roles paper|released``: which model runs which call (see the README)."""
    parser.add_argument(
        "--roles",
        choices=ROLE_PRESETS,
        default="paper",
        help="paper (default, §5.1: the strong model acts, the fast one makes every other call, "
        "grounding on bookmarks) or released (the released runner: the strong model also "
        "proposes, matches, derives and summarises, the fast one checks; the proposer and "
        "actor also see the running profile)",
    )


def prompt_set(method: str) -> Literal["released", "personae"]:
    """The prompt set of a BOOKMARKS method name (``bookmarks``: the released runner's)."""
    return PROMPT_METHODS[method]


def add_method_flag(parser: Any) -> None:
    """``--method bookmarks|bookmarks-personae`` for `bookmarks act`."""
    parser.add_argument(
        "--method",
        choices=tuple(PROMPT_METHODS),
        default="bookmarks",
        help="bookmarks (default: the paper's method, the released runner's prompts) or "
        "bookmarks-personae (ours: typed proposer with code checks, one-call matching and "
        "state updates, batched evidence checks)",
    )
