"""ARCANE's reported evaluation settings (§4, App. D-F) beside a run's.

The paper: the judge is ``deepseek/deepseek-v4-flash`` on OpenRouter at T = 0 (App. F, App. D),
scores 1-100, sees ``ref_thought``; role-play passes no decoding parameters (the backend's
default, "effectively temperature 1.0"); the TimeCHARA hint extractor runs at T = 0; RAG takes 6
chunks of 1,500 characters embedded with ``text-embedding-3-small``; Summary shows chapters
qc-4..qc. These rows are printed before ``arcane eval`` calls a model and kept, from the
results' own records, in ``summary.json`` (``paper_settings``) and ``report.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from personae.evals.paper_settings import PaperSetting

if TYPE_CHECKING:
    from personae.evals.arcane.eval_graph import ArcaneEvalContext

PAPER_JUDGE = "openai:deepseek/deepseek-v4-flash (App. F)"
PAPER_MODES = "vanilla, summary, rag, lifechoice, timechara, arc (Table 2)"


def _sampling(values: Mapping[str, Any] | None) -> str:
    shown = ", ".join(f"{k} {v:g}" for k, v in sorted((values or {}).items()))
    return shown or "server default"


def _one(values: Iterable[str]) -> str:
    found = sorted(set(values))
    return "; ".join(found) if found else "-"


def run_rows(
    *,
    models: Sequence[str],
    judges: Iterable[str],
    judge_sampling: Iterable[str],
    roleplay_sampling: Iterable[str],
    expert_temperatures: Iterable[str],
    embeddings: Iterable[str],
    rag_k: Iterable[str],
    summary_chapters: Iterable[str],
    modes: Iterable[str],
    thought: Iterable[str],
) -> list[PaperSetting]:
    """The rows from the values a run used (several when results mix runs)."""
    return [
        PaperSetting(
            "role-play models",
            "Qwen3-8B/32B, DeepSeek-V4-Flash/Pro, ARCANE-8B/32B (§4.1)",
            _one(models),
        ),
        PaperSetting("role-play sampling", "server default (App. D)", _one(roleplay_sampling)),
        PaperSetting("judge", PAPER_JUDGE, _one(judges)),
        PaperSetting("judge sampling", "temperature 0 (App. D)", _one(judge_sampling)),
        PaperSetting("judge sees ref_thought", "yes (App. F)", _one(thought)),
        PaperSetting("TimeChara experts' temperature", "0 (App. D)", _one(expert_temperatures)),
        PaperSetting("modes", PAPER_MODES, _one(modes)),
        PaperSetting("chunk embedding", "openai:text-embedding-3-small (App. E)", _one(embeddings)),
        PaperSetting("RAG chunks k", "6 (App. E)", _one(rag_k)),
        PaperSetting("summary chapters", "5 (App. E)", _one(summary_chapters)),
    ]


def context_rows(
    context: ArcaneEvalContext, models: Sequence[str], modes: Sequence[str]
) -> list[PaperSetting]:
    """The rows of a run about to start (printed before its first call)."""
    return run_rows(
        models=[context.cache_name(m) for m in models],
        judges=[context.cache_name(context.judge_model)],
        judge_sampling=[_sampling(context.sampling("judge"))],
        roleplay_sampling=[_sampling(context.sampling("strong"))],
        expert_temperatures=[f"{context.expert_temperature:g}"],
        embeddings=[context.embedding],
        rag_k=[str(context.rag_k)],
        summary_chapters=[str(context.summary_max_chapters)],
        modes=[", ".join(modes)],
        thought=["yes" if context.judge_include_thought else "no (ablation)"],
    )


def record_rows(records: Sequence[Mapping[str, Any]]) -> list[PaperSetting]:
    """The rows from ``results.jsonl``: what the reported numbers were really made with.

    Results written before the settings were recorded show ``not recorded``.
    """

    def setting(name: str, shown: Any = str) -> list[str]:
        return [shown(r["settings"][name]) if "settings" in r else "not recorded" for r in records]

    return run_rows(
        models=[str(r.get("model", "not recorded")) for r in records],
        judges=[str(r.get("judge", "not recorded")) for r in records],
        judge_sampling=setting("judge_sampling", _sampling),
        roleplay_sampling=setting("roleplay_sampling", _sampling),
        expert_temperatures=setting("expert_temperature", lambda v: f"{v:g}"),
        embeddings=setting("embedding"),
        rag_k=setting("rag_k"),
        summary_chapters=setting("summary_max_chapters"),
        modes=[", ".join(sorted({str(r.get("mode")) for r in records}))],
        thought=[
            "yes" if r.get("judge_include_thought", True) else "no (ablation)" for r in records
        ],
    )
