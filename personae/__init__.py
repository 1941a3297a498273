"""Personae: role-playing agents on LangGraph, four papers end to end.

CharacterHub (deep-search character profiles), BOOKMARKS (storyline memory for acting at a story
position), AMADEUS (role-play grounded in an indexed persona) and ARCANE (a character as of a
chapter, through its arcs). Everything an app needs is imported from here::

    from personae import AmadeusContext, ask_character, index_persona

- **Runners**, one job each, run and write their files and return a typed result:
  :func:`profile_character` (CharacterHub), :func:`predict_action` (BOOKMARKS),
  :func:`index_persona`, :func:`open_chat` and :func:`ask_character` (AMADEUS),
  :func:`import_novel`, :func:`build_arcs` and :func:`act_at_chapter` (ARCANE).
- **Benchmarks and evaluations**, each paper's protocol (run, resume, write the reports):
  :func:`evaluate_profiles` (CharacterHub), :func:`run_bench` (BOOKMARKS Table 2),
  :func:`run_personality_eval` and :func:`run_persona_qa` (AMADEUS), :func:`evaluate_arcane`,
  :func:`evaluate_pov_control`, :func:`perturb_arcane` and :func:`write_arcane_report` (ARCANE).
- **Graph builders** (``build_*_graph``): the compiled LangGraph graphs, to run as subgraphs.
- **Tool factories** (``create_*_tool``): LangChain tools for an agent of your own.
- **Contexts** (``*Context``): each graph's run settings; what a run leaves empty comes from
  :class:`Settings` (the environment, read once).

``personae.testing`` is the one public submodule (a scripted chat model and
``override_models``, to test an app without an LLM). Deeper paths (``personae.graphs...``)
stay importable but may move between releases. Names load on first use, so ``import personae``
and ``personae --help`` stay fast.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from personae.version import __version__

_SCRIPT = os.path.basename(getattr(sys.modules.get("__main__"), "__file__", None) or "")
if _SCRIPT in ("personae", "personae-script.py"):
    # Run as the console script: its quiet Ctrl-C handler goes in before anything else loads
    # (a library import changes no signal handler).
    from personae import console  # noqa: F401

if TYPE_CHECKING:  # what IDEs, pyright and mypy see; at run time __getattr__ loads each name
    from personae.errors import PersonaeError
    from personae.evals.amadeus.persona_qa import QARun, run_persona_qa
    from personae.evals.amadeus.personality_eval import PersonalityRun, run_personality_eval
    from personae.evals.arcane.eval_graph import ArcaneEvalContext
    from personae.evals.bookmarks.bench import BenchConfig, run_bench
    from personae.evals.characterhub.profile_eval import evaluate_profiles
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
    from personae.runners.amadeus_eval import (
        ChunkAnalysis,
        analyse_persona_chunks,
        export_rating_sheet,
    )
    from personae.runners.arcane import (
        ArcBuild,
        ChapterAnswer,
        ImportedNovel,
        act_at_chapter,
        build_arcs,
        import_novel,
    )
    from personae.runners.arcane_eval import (
        ArcaneEvalRun,
        evaluate_arcane,
        evaluate_pov_control,
        perturb_arcane,
        write_arcane_report,
    )
    from personae.runners.arcane_export import TrainingExport, export_training_data
    from personae.runners.arcane_votes import (
        VoteSheet,
        export_vote_sheet,
        read_votes,
        resume_with_votes,
    )
    from personae.runners.bookmarks import ActionStep, predict_action
    from personae.runners.characterhub import Profile, profile_character
    from personae.runners.characterhub_batch import ProfileBatch, profile_characters
    from personae.settings import Settings, load_settings

_EXPORTS: dict[str, tuple[str, str]] = {
    # runners, one module per paper (ARCANE's evaluation in its own)
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
    # benchmarks and evaluations (each paper's protocol: run, resume, write the reports)
    "evaluate_profiles": ("personae.evals.characterhub.profile_eval", "evaluate_profiles"),
    "run_bench": ("personae.evals.bookmarks.bench", "run_bench"),
    "BenchConfig": ("personae.evals.bookmarks.bench", "BenchConfig"),
    "run_personality_eval": ("personae.evals.amadeus.personality_eval", "run_personality_eval"),
    "PersonalityRun": ("personae.evals.amadeus.personality_eval", "PersonalityRun"),
    "run_persona_qa": ("personae.evals.amadeus.persona_qa", "run_persona_qa"),
    "QARun": ("personae.evals.amadeus.persona_qa", "QARun"),
    "analyse_persona_chunks": ("personae.runners.amadeus_eval", "analyse_persona_chunks"),
    "ChunkAnalysis": ("personae.runners.amadeus_eval", "ChunkAnalysis"),
    "export_rating_sheet": ("personae.runners.amadeus_eval", "export_rating_sheet"),
    "evaluate_arcane": ("personae.runners.arcane_eval", "evaluate_arcane"),
    "ArcaneEvalRun": ("personae.runners.arcane_eval", "ArcaneEvalRun"),
    "evaluate_pov_control": ("personae.runners.arcane_eval", "evaluate_pov_control"),
    "perturb_arcane": ("personae.runners.arcane_eval", "perturb_arcane"),
    "write_arcane_report": ("personae.runners.arcane_eval", "write_arcane_report"),
    "export_training_data": ("personae.runners.arcane_export", "export_training_data"),
    "TrainingExport": ("personae.runners.arcane_export", "TrainingExport"),
    "export_vote_sheet": ("personae.runners.arcane_votes", "export_vote_sheet"),
    "read_votes": ("personae.runners.arcane_votes", "read_votes"),
    "resume_with_votes": ("personae.runners.arcane_votes", "resume_with_votes"),
    "VoteSheet": ("personae.runners.arcane_votes", "VoteSheet"),
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
    "ArcaneEvalContext": ("personae.evals.arcane.eval_graph", "ArcaneEvalContext"),
    "RoleplayContext": ("personae.graphs.arcane.roleplay", "RoleplayContext"),
    "Settings": ("personae.settings", "Settings"),
    "load_settings": ("personae.settings", "load_settings"),
    # records and errors
    "profile_document": ("personae.memory.characterhub.profile_store", "profile_document"),
    "PersonaeError": ("personae.errors", "PersonaeError"),
}

__all__ = [
    "ActionStep",
    "AmadeusContext",
    "ArcBuild",
    "ArcBuildContext",
    "ArcaneEvalContext",
    "ArcaneEvalRun",
    "BenchConfig",
    "BookmarksContext",
    "ChapterAnswer",
    "CharacterRow",
    "Chat",
    "ChatTurn",
    "ChunkAnalysis",
    "ImportedNovel",
    "IndexedPersona",
    "LLMContext",
    "PersonaeError",
    "PersonalityRun",
    "Profile",
    "ProfileBatch",
    "ProfilerContext",
    "QARun",
    "RoleplayContext",
    "Settings",
    "TrainingExport",
    "VoteSheet",
    "__version__",
    "act_at_chapter",
    "analyse_persona_chunks",
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
    "evaluate_arcane",
    "evaluate_pov_control",
    "evaluate_profiles",
    "export_rating_sheet",
    "export_training_data",
    "export_vote_sheet",
    "import_novel",
    "index_persona",
    "load_settings",
    "open_chat",
    "persona_index_settings",
    "perturb_arcane",
    "predict_action",
    "profile_character",
    "profile_characters",
    "profile_document",
    "read_character_list",
    "read_votes",
    "resume_with_votes",
    "run_bench",
    "run_persona_qa",
    "run_personality_eval",
    "write_arcane_report",
]


def __getattr__(name: str) -> Any:
    """Load a public name on first use (the heavy libraries load with it, not with Personae)."""
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'personae' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


# Quiet by default (a library must not print): what Personae logs (errors it recovered from,
# skipped damaged records) shows when the app configures logging, or with `personae -v`.
logging.getLogger("personae").addHandler(logging.NullHandler())
