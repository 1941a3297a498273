"""AMADEUS's persona QA evaluation (Table 6: ACC, ACC_L and HS) as one library call.

``personae amadeus eval-qa`` and apps call :func:`evaluate_persona_qa`: it checks every item's
character is indexed, answers each question with the role-play method in a fresh conversation,
judges the answers (:mod:`personae.evals.amadeus.persona_qa`) and writes ``results.jsonl``,
``summary.json`` and ``report.md``. Nothing here prints: the settings and each step go to
``progress``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.errors import InputError
from personae.progress import Progress, quiet

if TYPE_CHECKING:
    from personae.degraded import FailureBudget
    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.tools.amadeus.indexing import IndexSettings

DEFAULT_OUT = Path("runs/persona-qa")


@dataclass(frozen=True)
class PersonaQAReport:
    """A persona QA evaluation: what ``summary.json`` holds, the report, and the folder."""

    summary: dict[str, Any]
    """``summary.json``: overall, per-character and per-attribute ACC (%), ACC_L and HS, the
    paper's settings."""
    report: str
    """``report.md``'s text (Table 6's layout)."""
    out: Path
    """The results folder (``results.jsonl``, ``summary.json``, ``report.md``)."""
    degraded: int
    """Items whose judgment was left out after retries (a rerun judges them again)."""


async def evaluate_persona_qa(
    qa: str,
    *,
    context: AmadeusContext,
    index: IndexSettings | None = None,
    judge_model: str = "",
    out: Path = DEFAULT_OUT,
    limit: int | None = None,
    concurrency: int = 4,
    max_failures: FailureBudget | None = None,
    progress: Progress = quiet,
) -> PersonaQAReport:
    """Answer and judge every item of ``qa`` with ``context.method`` (AMADEUS Table 6).

    ``qa`` is a QA JSONL file (``{character, question, answer[, attribute]}`` per line) or a
    shipped set (``iago-othello``); ``limit`` keeps its first items. The characters must be
    indexed under ``index`` (default: ``context``'s memory folder and splitter); the judge is
    ``judge_model``, else the settings'. A rerun resumes; judge answers are cached under
    ``PERSONAE_CACHE_DIR/judge``.

    Raises:
        InputError: a bad count or QA file, or a character not indexed, before any model call.
        RemoteError: a model failed, or more items degraded than ``max_failures`` allows.
    """
    from personae.degraded import FailureBudget
    from personae.evals.amadeus.paper_settings import persona_qa_settings
    from personae.evals.amadeus.persona_qa import QARun, load_qa, render_report, run_persona_qa
    from personae.evals.paper_settings import settings_text
    from personae.runners.amadeus import open_indexed_persona, persona_index_settings

    if concurrency < 1 or (limit is not None and limit < 1):
        raise InputError("--concurrency and --limit must be at least 1", "pass 1 or more")
    items = load_qa(qa)[:limit]
    context.llm("strong")  # no LLM or a bad spec fails here, before any work
    judge = context.judge_spec(judge_model)
    judge_chat = context.chat_model(judge, "judge")  # a bad judge spec fails before any work
    index = index or persona_index_settings(
        context.memory_dir, splitter=context.splitter, context=context
    )
    characters = sorted({item.character for item in items})
    for character in characters:
        open_indexed_persona(character, index)
    settings = persona_qa_settings(
        context, items=len(items), characters=len(characters), judge=context.cache_name(judge)
    )
    progress(settings_text("AMADEUS Table 6", settings).rstrip("\n"))
    summary = await run_persona_qa(
        QARun(
            items=items,
            agent=context,
            judge=judge_chat,
            judge_name=context.cache_name(judge),
            cache_dir=context.settings.cache_dir / "judge",
            out_dir=out,
            concurrency=concurrency,
            progress=lambda line: progress(f"• {line}"),
            max_failures=max_failures or FailureBudget(),
            settings=settings,
        )
    )
    degraded = int(summary["degraded"]["items"])
    return PersonaQAReport(summary, render_report(summary), out, degraded)
