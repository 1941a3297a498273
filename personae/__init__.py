"""Personae: role-playing agents on LangGraph, four papers end to end.

CharacterHub (deep-search character profiles), BOOKMARKS (storyline memory for acting at a story
position), AMADEUS (role-play grounded in an indexed persona) and ARCANE (a character as of a
chapter, through its arcs). Everything an app needs is imported from here::

    from personae import AmadeusContext, ask_character, index_persona

- **Runners**, one per job of each paper's method: they run, resume, write their files and
  return a typed result.
- **Graph builders** (``build_*_graph``): the compiled LangGraph graphs, to run as subgraphs.
- **Tool factories** (``create_*_tool``): LangChain tools for an agent of your own.
- **Contexts** (``*Context``): each graph's run settings; what a run leaves empty comes from
  :class:`Settings` (the environment, read once).
- **Result types**, the one :class:`Progress` protocol and the one error family
  (:class:`PersonaeError`).

Every call has one shape: required inputs positional, the rest keywords, run settings in
``context=``, steps reported to ``progress=``. Each paper's evaluation protocol (benchmarks,
evaluations, exports) is the other face, ``personae.evals``. ``personae.testing`` holds a
scripted chat model and ``override_models``, to test an app without an LLM. Deeper paths
(``personae.graphs...``) stay importable but may move between releases. Names load on first
use, so ``import personae`` and ``personae --help`` stay fast.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from personae.public_names import load_public_name
from personae.version import __version__

_SCRIPT = os.path.basename(getattr(sys.modules.get("__main__"), "__file__", None) or "")
if _SCRIPT in ("personae", "personae-script.py"):
    # Run as the console script: its quiet Ctrl-C handler goes in before anything else loads
    # (a library import changes no signal handler).
    from personae import console  # noqa: F401

_EXPORTS: dict[str, tuple[str, str]] = {
    # The one list of the public names: __all__ and the TYPE_CHECKING imports below are
    # generated from it (`uv run python scripts/public_names.py`), __getattr__ reads it.
    # runners and their results, one module per paper
    "profile_character": ("personae.runners.characterhub", "profile_character"),
    "Profile": ("personae.runners.characterhub", "Profile"),
    "profile_characters": ("personae.runners.characterhub_batch", "profile_characters"),
    "ProfileBatch": ("personae.runners.characterhub_batch", "ProfileBatch"),
    "CharacterRow": ("personae.memory.characterhub.character_list", "CharacterRow"),
    "read_character_list": ("personae.memory.characterhub.character_list", "read_character_list"),
    "predict_action": ("personae.runners.bookmarks", "predict_action"),
    "ActionStep": ("personae.runners.bookmarks", "ActionStep"),
    "index_persona": ("personae.runners.amadeus", "index_persona"),
    "persona_index_settings": ("personae.runners.amadeus", "persona_index_settings"),
    "IndexedPersona": ("personae.runners.amadeus", "IndexedPersona"),
    "open_chat": ("personae.runners.amadeus", "open_chat"),
    "Chat": ("personae.runners.amadeus", "Chat"),
    "ask_character": ("personae.runners.amadeus", "ask_character"),
    "ChatTurn": ("personae.runners.amadeus", "ChatTurn"),
    "import_novel": ("personae.runners.arcane", "import_novel"),
    "ImportedNovel": ("personae.runners.arcane", "ImportedNovel"),
    "build_arcs": ("personae.runners.arcane", "build_arcs"),
    "ArcBuild": ("personae.runners.arcane", "ArcBuild"),
    "act_at_chapter": ("personae.runners.arcane", "act_at_chapter"),
    "ChapterAnswer": ("personae.runners.arcane", "ChapterAnswer"),
    # graph builders
    "build_profiler_graph": ("personae.graphs.characterhub.profiler", "build_graph"),
    "build_bookmarks_graph": ("personae.graphs.bookmarks.graph", "build_graph"),
    "build_amadeus_graph": ("personae.graphs.amadeus.graph", "build_graph"),
    "build_arc_build_graph": ("personae.graphs.arcane.arc_build", "build_graph"),
    "build_arcane_roleplay_graph": ("personae.graphs.arcane.roleplay", "build_graph"),
    # tool factories
    "create_profile_tool": ("personae.graphs.characterhub.tool", "create_profile_tool"),
    "create_storyline_memory_tool": (
        "personae.graphs.bookmarks.tool",
        "create_storyline_memory_tool",
    ),
    "create_ask_character_tool": ("personae.graphs.amadeus.tool", "create_ask_character_tool"),
    "create_arcane_act_tool": ("personae.graphs.arcane.tool", "create_arcane_act_tool"),
    # contexts and settings
    "LLMContext": ("personae.run_context", "LLMContext"),
    "ProfilerContext": ("personae.graphs.characterhub.state", "ProfilerContext"),
    "BookmarksContext": ("personae.graphs.bookmarks.graph", "BookmarksContext"),
    "AmadeusContext": ("personae.graphs.amadeus.graph", "AmadeusContext"),
    "ArcBuildContext": ("personae.graphs.arcane.arc_build", "ArcBuildContext"),
    "RoleplayContext": ("personae.graphs.arcane.roleplay", "RoleplayContext"),
    "Settings": ("personae.settings", "Settings"),
    "load_settings": ("personae.settings", "load_settings"),
    # records, progress and errors
    "profile_document": ("personae.memory.characterhub.profile_store", "profile_document"),
    "Progress": ("personae.progress", "Progress"),
    "PersonaeError": ("personae.errors", "PersonaeError"),
}

# generated from _EXPORTS by `uv run python scripts/public_names.py`: do not edit
if TYPE_CHECKING:  # what IDEs, pyright and mypy read; __getattr__ loads at run time
    from personae.errors import PersonaeError
    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.graphs.amadeus.graph import build_graph as build_amadeus_graph
    from personae.graphs.amadeus.tool import create_ask_character_tool
    from personae.graphs.arcane.arc_build import ArcBuildContext
    from personae.graphs.arcane.arc_build import build_graph as build_arc_build_graph
    from personae.graphs.arcane.roleplay import RoleplayContext
    from personae.graphs.arcane.roleplay import build_graph as build_arcane_roleplay_graph
    from personae.graphs.arcane.tool import create_arcane_act_tool
    from personae.graphs.bookmarks.graph import BookmarksContext
    from personae.graphs.bookmarks.graph import build_graph as build_bookmarks_graph
    from personae.graphs.bookmarks.tool import create_storyline_memory_tool
    from personae.graphs.characterhub.profiler import build_graph as build_profiler_graph
    from personae.graphs.characterhub.state import ProfilerContext
    from personae.graphs.characterhub.tool import create_profile_tool
    from personae.memory.characterhub.character_list import CharacterRow, read_character_list
    from personae.memory.characterhub.profile_store import profile_document
    from personae.progress import Progress
    from personae.run_context import LLMContext
    from personae.runners.amadeus import (
        Chat,
        ChatTurn,
        IndexedPersona,
        ask_character,
        index_persona,
        open_chat,
        persona_index_settings,
    )
    from personae.runners.arcane import (
        ArcBuild,
        ChapterAnswer,
        ImportedNovel,
        act_at_chapter,
        build_arcs,
        import_novel,
    )
    from personae.runners.bookmarks import ActionStep, predict_action
    from personae.runners.characterhub import Profile, profile_character
    from personae.runners.characterhub_batch import ProfileBatch, profile_characters
    from personae.settings import Settings, load_settings

__all__ = [
    "ActionStep",
    "AmadeusContext",
    "ArcBuild",
    "ArcBuildContext",
    "BookmarksContext",
    "ChapterAnswer",
    "CharacterRow",
    "Chat",
    "ChatTurn",
    "ImportedNovel",
    "IndexedPersona",
    "LLMContext",
    "PersonaeError",
    "Profile",
    "ProfileBatch",
    "ProfilerContext",
    "Progress",
    "RoleplayContext",
    "Settings",
    "__version__",
    "act_at_chapter",
    "ask_character",
    "build_amadeus_graph",
    "build_arc_build_graph",
    "build_arcane_roleplay_graph",
    "build_arcs",
    "build_bookmarks_graph",
    "build_profiler_graph",
    "create_arcane_act_tool",
    "create_ask_character_tool",
    "create_profile_tool",
    "create_storyline_memory_tool",
    "import_novel",
    "index_persona",
    "load_settings",
    "open_chat",
    "persona_index_settings",
    "predict_action",
    "profile_character",
    "profile_characters",
    "profile_document",
    "read_character_list",
]
# end of generated


def __getattr__(name: str) -> Any:
    """Load a public name on first use (the heavy libraries load with it, not with Personae).

    A name of the other face (an evaluation runner) fails with where it lives now.
    """
    if name not in _EXPORTS and not name.startswith("__"):
        evals = importlib.import_module("personae.evals")  # a table, no heavy import
        if name in evals._EXPORTS:
            raise AttributeError(
                f"module 'personae' has no attribute {name!r}; each paper's evaluation "
                f"protocol is in personae.evals: from personae.evals import {name}"
            )
    return load_public_name(globals(), _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


# Quiet by default (a library must not print): what Personae logs (errors it recovered from,
# skipped damaged records) shows when the app configures logging, or with `personae -v`.
logging.getLogger("personae").addHandler(logging.NullHandler())
