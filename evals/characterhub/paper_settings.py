"""CharacterHub's reported settings (§5.1, App. A, Table 3) beside a run's.

Profiling: the search agent is Gemini-2.5-Pro (temperature 1.0, top-p 0.95, top-k 64), R¹ then
R², the rewriter Qwen-plus (0.85, 0.8, 50) with the Table 8 prompt, nothing edited after it.
Evaluation: Qwen3-235B-A22B-Instruct-2507 extracts the knowledge points (Table 9) and judges
them (Table 10) at temperature 0.7, top-p 0.8, top-k 20, whole page and whole knowledge list.
``personae profile`` prints the first rows, ``personae characterhub eval`` the second and keeps them
in its report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from personae.evals.paper_settings import PaperSetting
from personae.graphs.characterhub.roles import PAPER_MODELS, PAPER_SAMPLING

if TYPE_CHECKING:
    from personae.graphs.characterhub.state import ProfilerContext

PAPER_JUDGE = "Qwen3-235B-A22B-Instruct-2507 (§5.1)"
PAPER_JUDGE_SAMPLING = "temperature=0.7,top_p=0.8,top_k=20 (Table 3)"


def sampling_text(record: Mapping[str, Any]) -> str:
    """``temperature=1.0,top_p=0.95,top_k=64`` from a recorded role (``server default``)."""
    unsent = record.get("top_k_sent") is False and "top_k" in record
    keys = ("temperature", "top_p") if unsent else ("temperature", "top_p", "top_k")
    shown = [f"{k}={record[k]:g}" for k in keys if k in record]
    text = ",".join(shown) or "server default"
    if unsent:  # outside the compared value: the run did not use it
        text += f" (top_k={record['top_k']:g} not sent: OpenAI's API takes none)"
    return text


def profile_rows(context: ProfilerContext) -> list[PaperSetting]:
    """The rows of a ``personae profile`` run about to start."""
    records = context.model_records()
    rows = [PaperSetting("method", "paper (§3.2, App. F)", context.method)]
    if context.method == "paper":
        rows += [
            PaperSetting("search model", PAPER_MODELS["search"], records["search"]["model"]),
            PaperSetting(
                "search sampling",
                f"{PAPER_SAMPLING['search']} (Table 3)",
                sampling_text(records["search"]),
            ),
            PaperSetting("search rounds", "2 (R¹, R²)", str(min(2, max(1, context.max_rounds)))),
        ]
    rows += [
        PaperSetting("rewrite model", PAPER_MODELS["rewrite"], records["rewrite"]["model"]),
        PaperSetting(
            "rewrite sampling",
            f"{PAPER_SAMPLING['rewrite']} (Table 3)",
            sampling_text(records["rewrite"]),
        ),
        PaperSetting(
            "citation and prose checks",
            "off (Table 8 output unedited)",
            _on(context.check_citations),
        ),
        PaperSetting("canon rule in prompts", "off (Tables 7-8)", _on(context.canon_rule)),
    ]
    return rows


def _on(value: bool | None) -> str:
    return "on (ours)" if value else "off"


def evaluation_rows(
    settings: Mapping[str, Mapping[str, Any]],
    *,
    extraction: str,
    judge_batch: str,
    profile_models: Iterable[Mapping[str, Any]] = (),
) -> list[PaperSetting]:
    """The rows of a ``personae characterhub eval`` run (judge, extractor, and the profiles' models)."""
    rows = [
        PaperSetting("judge (Table 10)", PAPER_JUDGE, str(settings["judge"]["model"])),
        PaperSetting("judge sampling", PAPER_JUDGE_SAMPLING, sampling_text(settings["judge"])),
        PaperSetting("extractor (Table 9)", PAPER_JUDGE, str(settings["extractor"]["model"])),
        PaperSetting(
            "extractor sampling", PAPER_JUDGE_SAMPLING, sampling_text(settings["extractor"])
        ),
        PaperSetting("extraction", "whole page (§4.2)", extraction),
        PaperSetting("judge batch", "whole knowledge list (Table 10)", judge_batch),
    ]
    searched = sorted({str(m["search"]["model"]) for m in profile_models if "search" in m})
    rewritten = sorted({str(m["rewrite"]["model"]) for m in profile_models if "rewrite" in m})
    if searched:
        rows.append(
            PaperSetting("profiles' search model", PAPER_MODELS["search"], "; ".join(searched))
        )
    if rewritten:
        rows.append(
            PaperSetting("profiles' rewrite model", PAPER_MODELS["rewrite"], "; ".join(rewritten))
        )
    return rows
