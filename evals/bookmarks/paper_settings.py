"""BOOKMARKS's reported settings (§4, §5.1, the released runner's defaults) beside a bench run's.

The paper: gpt-5.1 acts and updates ETA profiles, gpt-5.4-mini makes every other call, a
distilled DeBERTa-v3 classifier checks behavior evidence, gpt-4.1 judges by key-move exact match;
K = 5 questions, near bookmarks within 5 actions, RICL with 8 examples. The released runner adds
what the text leaves out (temperature 1e-8, K' = 5, 64-action state chunks, 10-action scenes,
concept windows of +-8, the top 8, profiles every 16 actions over 64-action blocks) and assigns
the roles otherwise (``--roles released``). ``bookmarks bench`` prints these rows before its
first instance and keeps them in ``summary.json`` (``paper_settings``) and the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from personae.evals.paper_settings import PaperSetting

ROLES_PAPER = "paper (§5.1) or released (the runner); see the README for Table 2"


def _model(name: str, sampling: str) -> str:
    return f"{name} (temperature {sampling})" if sampling else name


def bench_rows(config: Any, contexts: Mapping[str, Any]) -> list[PaperSetting]:
    """The rows for a bench ``config`` and one context per method label it runs."""
    temperature = config.temperature or "server default"
    rows = [
        PaperSetting("acting model", "gpt-5.1 (§5.1)", config.name_of("model")),
        PaperSetting("auxiliary model", "gpt-5.4-mini (§5.1)", config.name_of("fast_model")),
        PaperSetting("judge", "gpt-4.1 (§4)", config.name_of("judge_model")),
        PaperSetting("judge protocol", "exact (key move, §4)", config.judge),
        PaperSetting("temperature", "1e-8 (the released runner)", str(temperature)),
        PaperSetting(
            "story title in prompts",
            "none (the released prompts)",
            "none" if config.hide_title else "shown",
        ),
    ]
    seen: set[str] = set()
    for label, context in contexts.items():
        name = type(context).__name__
        if name in seen:
            continue
        seen.add(name)
        rows += _method_rows(label, context)
    return rows


def _method_rows(label: str, context: Any) -> list[PaperSetting]:
    if hasattr(context, "k_questions"):
        sync = context.sync_settings()
        classifier = (
            "LLM yes/no, one action a call"
            if context.prompts == "released"
            else (f"LLM, {sync.behavior_batch} action(s) a call (ours)")
        )
        return [
            PaperSetting("BOOKMARKS prompts", "released (the runner)", context.prompts),
            PaperSetting("BOOKMARKS roles", ROLES_PAPER, context.roles),
            PaperSetting("K (questions per step)", "5 (§5.1)", str(context.k_questions)),
            PaperSetting("near window", "5 (§5.1)", str(context.near_window)),
            PaperSetting("K' (candidates)", "5 (the released runner)", str(context.k_candidates)),
            PaperSetting("state chunk", "64 (the released runner)", str(sync.state_chunk)),
            PaperSetting("behavior scene", "10 (the released runner)", str(sync.local_scene)),
            PaperSetting(
                "concept windows",
                "radius 8, top 8 (the released runner)",
                f"radius {sync.concept_radius}, top {sync.concept_top_windows}",
            ),
            PaperSetting(
                "behavior evidence check",
                "distilled DeBERTa-v3-base (§5.1); the runner: LLM without one",
                classifier,
            ),
            PaperSetting("bookmark embedding", "not stated", context.embedding),
        ]
    if hasattr(context, "k_pairs"):
        return [
            PaperSetting("RICL examples", "8 (§5.1)", str(context.k_pairs)),
            PaperSetting("RICL embedding", "not stated", context.embedding),
        ]
    if hasattr(context, "rebuild_every"):
        return [
            PaperSetting(
                "ETA updates",
                "every 16 actions, 64-action blocks (the released runner)",
                f"every {context.rebuild_every}, {context.chunk}-action blocks",
            )
        ]
    return []
