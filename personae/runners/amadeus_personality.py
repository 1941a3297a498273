"""AMADEUS's interview-based personality evaluation (Tables 4-5) as one library call.

``personae amadeus eval-personality`` and apps call :func:`evaluate_personality`: it finds each
character's persona (indexing the sources it is given), estimates the run, interviews, assesses
and scores (:mod:`personae.evals.amadeus.personality_eval`, InCharacter's protocol) and writes
``results.jsonl``, ``summary.json`` and ``report.md``. Nothing here prints: the estimate, the
paper's settings and each step go to ``progress``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.errors import InputError
from personae.progress import Progress, quiet

if TYPE_CHECKING:
    from personae.degraded import FailureBudget
    from personae.evals.amadeus.personality_data import Questionnaire
    from personae.evals.amadeus.personality_eval import Assess, Interviewee
    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.tools.amadeus.indexing import IndexSettings

DEFAULT_OUT = Path("runs/personality")
PERSONA_FIX = (
    "build a persona: personae profile 'NAME' and pass --persona NAME=profiles/<name>/profile.json "
    "(or a wiki page URL/.html, a Markdown file, a CoSER book), or index one with "
    "personae amadeus index"
)


@dataclass(frozen=True)
class PersonalityReport:
    """A personality evaluation: what ``summary.json`` holds, the report, and the folder."""

    summary: dict[str, Any]
    """``summary.json``: per character the scores, the predicted and labelled types; the
    paper's Accuracy and Avg F1-Score (``metrics``), usage, the paper's settings."""
    report: str
    """``report.md``'s text (Tables 4-5)."""
    out: Path
    """The results folder (``results.jsonl``, ``summary.json``, ``report.md``)."""
    degraded: int
    """Assessments left out after retries (a rerun asks them again)."""


async def evaluate_personality(
    characters: Sequence[str],
    questionnaire: str,
    *,
    context: AmadeusContext,
    index: IndexSettings | None = None,
    personas: Mapping[str, str] | None = None,
    labels: str | None = None,
    assess: Assess = "er",
    judge_model: str = "",
    hs: bool = False,
    out: Path = DEFAULT_OUT,
    data: Path | None = None,
    language: str = "en",
    limit: int | None = None,
    concurrency: int = 4,
    max_failures: FailureBudget | None = None,
    progress: Progress = quiet,
) -> PersonalityReport:
    """Interview ``characters`` with every item of ``questionnaire`` and score their type.

    ``questionnaire`` is ``mbti``, ``bfi`` or a questionnaire JSON; ``context.method`` is the
    role-play method evaluated, and the rater is the judge (``judge_model``, else the
    settings'). Each character's persona comes from ``personas`` (name → profile.json, wiki
    page, Markdown or CoSER book; indexed first) or from an index under ``index`` (default:
    ``context``'s memory folder and splitter). ``labels``: ``pdb`` (default), ``annotation`` or a
    label JSON. ``hs`` also judges each answer's Hallucination Score (Table 6). A rerun resumes.

    Raises:
        InputError: a bad count, questionnaire, label file or a character without a persona,
            before any model call.
        RemoteError: a model failed, or more assessments degraded than ``max_failures`` allows.
    """
    from personae.degraded import FailureBudget
    from personae.evals.amadeus.paper_settings import personality_settings
    from personae.evals.amadeus.personality_data import load_questionnaire
    from personae.evals.amadeus.personality_eval import (
        PersonalityRun,
        render_report,
        run_personality_eval,
    )
    from personae.evals.paper_settings import settings_text
    from personae.runners.amadeus import persona_index_settings

    if concurrency < 1 or (limit is not None and limit < 1):
        raise InputError("--concurrency and --limit must be at least 1", "pass 1 or more")
    asked = load_questionnaire(questionnaire, data=data, language=language)
    context.llm("strong")  # no LLM or a bad spec fails here, before any work
    judge = context.judge_spec(judge_model)
    rater = context.chat_model(judge, "judge")  # a bad judge spec fails before any work
    index = index or persona_index_settings(
        context.memory_dir, splitter=context.splitter, context=context
    )
    interviewees = await _interviewees(characters, asked, index, context, personas, labels, data)
    _announce_cost(asked, len(interviewees), context, judge, assess, limit, hs, progress)
    items = sum(len(asked.by_dimension(d)[:limit]) for d in asked.dimensions)
    settings = personality_settings(
        context,
        questionnaire=asked.name,
        items=items,
        characters=len(interviewees),
        assess=assess,
        rater=context.cache_name(judge),
    )
    progress(settings_text("AMADEUS Tables 4-5", settings).rstrip("\n"))
    summary = await run_personality_eval(
        PersonalityRun(
            questionnaire=asked,
            interviewees=interviewees,
            agent=context,
            rater=rater,
            assess=assess,
            out_dir=out,
            concurrency=concurrency,
            limit=limit,
            progress=lambda line: progress(f"• {line}"),
            hs_judge=rater if hs else None,
            judge_name=context.cache_name(judge),
            cache_dir=context.settings.cache_dir / "judge",
            max_failures=max_failures or FailureBudget(),
            settings=settings,
            language=language,
        )
    )
    degraded = int(summary["degraded"]["assessments"])
    return PersonalityReport(summary, render_report(summary), out, degraded)


def _announce_cost(
    questionnaire: Questionnaire,
    characters: int,
    context: AmadeusContext,
    judge: str,
    assess: str,
    limit: int | None,
    hs: bool,
    progress: Progress,
) -> None:
    """Report the estimated calls and tokens, and the models that will be paid, before a call."""
    from personae.agents.costs import estimate_line
    from personae.evals.amadeus.costs import estimate_personality

    estimate = estimate_personality(
        questionnaire, characters, method=context.method, assess=assess, limit=limit, hs=hs
    )
    gs = context.gs_model or context.model
    named = {
        "model": context.cache_name(context.model),
        "guided selection": context.cache_name(gs),
        "attribute extractor": context.cache_name(context.ae_model or gs),
        "rater and judge": context.cache_name(judge),
    }
    progress(estimate_line(estimate, named).rstrip("\n"))


async def _interviewees(
    characters: Sequence[str],
    questionnaire: Questionnaire,
    index: IndexSettings,
    store: AmadeusContext,
    personas: Mapping[str, str] | None,
    labels: str | None,
    data: Path | None,
) -> list[Interviewee]:
    """Each character with its label, persona index (built from ``personas``) and source."""
    from personae.evals.amadeus.personality_data import find_character, load_characters, load_labels
    from personae.evals.amadeus.personality_eval import Interviewee
    from personae.runners.amadeus import index_persona

    known_characters = load_characters(data)
    known_labels = load_labels(labels, questionnaire, data=data)
    sources = {name.strip().casefold(): source for name, source in (personas or {}).items()}
    found = []
    for name in characters:
        known = find_character(name, known_characters)
        key = known.id if known else name
        label = known_labels.get(key) or known_labels.get(name)
        if label is None and labels not in (None, "pdb", "annotation"):
            raise InputError(
                f"the label file {labels} has no {questionnaire.kind} label for {name}",
                "add it or drop the character",
            )
        aliases = [name, *(known.aliases if known else ())]
        source = next((sources[a.casefold()] for a in aliases if a.casefold() in sources), None)
        if source is not None:
            done = await index_persona(source, character=name, index=index, context=store)
            indexed, source_text, kind = done.character, done.source, done.source_kind
        else:
            indexed, source_text, kind = _existing_persona(aliases, index)
        found.append(
            Interviewee(
                name=key,
                indexed_as=indexed,
                aliases=tuple(aliases),
                experimenter=known.experimenter if known else "Interviewer",
                label=label,
                persona_source=source_text,
                persona_kind=kind,
            )
        )
    return found


def _existing_persona(names: Sequence[str], index: IndexSettings) -> tuple[str, str, str]:
    """The indexed name, source and source kind of the first of ``names`` with an index."""
    from personae.runners.amadeus import open_indexed_persona

    for candidate in names:
        try:
            found = open_indexed_persona(candidate, index)
        except InputError as error:
            if "mismatch" in str(error):
                raise
            continue
        manifest = found.manifest
        return (
            found.character,
            str(manifest.get("source", "")),
            str(manifest.get("source_kind", "")),
        )
    raise InputError(f"no persona for {names[0]} under {index.memory_dir}", PERSONA_FIX)
