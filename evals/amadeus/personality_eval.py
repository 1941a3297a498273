"""The interview-based personality evaluation of AMADEUS (Tables 4-5), InCharacter's protocol.

For each character: every questionnaire item is asked as its rewritten question in a fresh
conversation with the role-play method (``amadeus``, ``naive`` or ``none``); the answers are
assessed (by default InCharacter's expert rating of anonymised batches per dimension, its
prompts; ours beside it: ``er-personae``, and option conversion with reverse keying by category); dimension scores become a type code (MBTI or Big Five SLOAN)
compared with the character's personality-database label: the paper's Accuracy and Avg
F1-Score, with InCharacter's full-type accuracy as an extra.

Every interview answer and every rating is appended to ``results.jsonl`` as soon as it exists,
so an interrupted run resumes where it stopped; ``summary.json`` and ``report.md`` are written
atomically at the end. An assessment whose answer is still invalid after retries degrades: a
rating batch is left out (the dimension is scored from its other batches, and a rerun asks it
again), an OC item is left out of its batch's choices, an HS judgment is left empty; each is
counted (``summary.degraded``) and ``max_failures`` stops a run that degrades too much.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from personae.agents.amadeus import incharacter_expert
from personae.agents.amadeus.incharacter_rater import anonymise, convert_choices, rate_batch
from personae.agents.amadeus.qa_judge import HallucinationScore, hs_messages
from personae.answer_store import AnswerStore
from personae.degraded import FailureBudget
from personae.evals.amadeus.persona_qa import final_context
from personae.evals.amadeus.personality_data import Item, Questionnaire, code_of
from personae.evals.amadeus.personality_scoring import (
    dimension_scores,
    letters_of,
    option_score,
    split_batches,
    type_metrics,
)
from personae.evals.paper_settings import PaperSetting, rows_json, settings_markdown
from personae.fanout import gather_all
from personae.files import append_jsonl, read_jsonl, write_json_atomic, write_text_atomic
from personae.graphs.amadeus.graph import AmadeusContext, build_graph
from personae.llm import InvalidAnswerError, call_structured
from personae.llm_endpoint import chosen_methods
from personae.progress import Progress, quiet

logger = logging.getLogger(__name__)

Assess = Literal["er", "er-personae", "oc"]
"""``er``: InCharacter's expert rating, its prompts verbatim (the paper's protocol, default);
``er-personae``: expert rating with our prompts; ``oc``: option conversion with our prompts."""
RATING_KINDS = {"er": "rating:incharacter", "er-personae": "rating:personae"}
"""The ``kind`` of a rating record per assessor, so one results folder never mixes them."""
INTERVIEW_QUERY = "{experimenter}:「{question}」"
"""How InCharacter asks each item: said by the character's interviewer (``experimenter`` in its
character list, a character of the same work: Harry for Hermione), in the ``role:「text」`` form
of ChatHaruhi's ``chat(role=experimenter, text=question)``, which its interviews go through."""
RESULTS = "results.jsonl"
OC_BATCH = 20
"""Items per option-conversion call."""


@dataclass(frozen=True)
class Interviewee:
    """One character to interview and what is known about it."""

    name: str
    """Name in the report (the InCharacter id for labelled characters)."""
    indexed_as: str
    """The character's name in the persona index."""
    aliases: tuple[str, ...]
    """Names anonymised before rating."""
    experimenter: str
    """The interviewer's name (anonymised too)."""
    label: Mapping[str, str] | None
    """Ground-truth letters per dimension (``X`` neutral), None when unlabelled."""
    persona_source: str = ""
    """Where the persona came from (profile.json, wiki page, CoSER book, Markdown)."""
    persona_kind: str = ""
    """The importer that built the persona."""


@dataclass(frozen=True, kw_only=True)
class PersonalityRun:
    """Everything one evaluation run needs."""

    questionnaire: Questionnaire
    interviewees: Sequence[Interviewee]
    agent: AmadeusContext
    """Run settings of the role-play agent (its ``method`` is the method evaluated)."""
    rater: BaseChatModel
    assess: Assess = "er"
    out_dir: Path
    concurrency: int = 4
    limit: int | None = None
    """Items per dimension to ask (None: all), for quick runs."""
    progress: Progress = quiet
    hs_judge: BaseChatModel | None = None
    """Judge of the Hallucination Score of each answer (Table 6, MBTI/BFI rows); None: skip."""
    judge_name: str = ""
    """Name the HS judge's answers are cached under."""
    cache_dir: Path | None = None
    """Judge cache folder."""
    max_failures: FailureBudget = field(default_factory=FailureBudget)
    """Degraded assessments (rating batches, OC items, HS judgments) tolerated."""
    settings: Sequence[PaperSetting] = ()
    """The paper's settings beside this run's, kept in ``summary.json`` and the report."""
    language: str = "en"
    """The interview language, named in InCharacter's rater prompt."""


def _key(record: Mapping[str, Any]) -> tuple[str, ...]:
    return (str(record["kind"]), str(record["character"]), str(record.get("id", "")))


def load_done(path: Path) -> dict[tuple[str, ...], dict[str, Any]]:
    """Records already in ``results.jsonl`` (a torn last line is ignored)."""
    return {_key(record): record for record in read_jsonl(path) if "kind" in record}


class _Recorder:
    """Appends records under a lock, in a thread (file I/O off the event loop)."""

    def __init__(self, path: Path, done: dict[tuple[str, ...], dict[str, Any]]) -> None:
        self.path = path
        self.done = done
        self.lock = asyncio.Lock()
        self.units = 0
        """Assessments (rating batches or OC items) and HS judgments this run asks."""
        self.degraded = 0
        """Of ``units``, those still invalid after retries."""

    def count_degraded(self, count: int, budget: FailureBudget) -> None:
        """Add degraded assessments; stop the run when there are too many."""
        self.degraded += count
        budget.check(self.degraded, self.units, "assessments")

    async def add(self, record: dict[str, Any]) -> None:
        async with self.lock:
            await asyncio.to_thread(append_jsonl, self.path, record)
            self.done[_key(record)] = record


def _items(run: PersonalityRun) -> list[Item]:
    items = []
    for dimension in run.questionnaire.dimensions:
        chosen = run.questionnaire.by_dimension(dimension)
        items += chosen[: run.limit] if run.limit else chosen
    return items


def interview_query(who: Interviewee, item: Item) -> str:
    """The message the character gets for ``item``: the question, said by its interviewer."""
    return INTERVIEW_QUERY.format(experimenter=who.experimenter, question=item.question)


async def _interview(
    run: PersonalityRun,
    who: Interviewee,
    item: Item,
    graph: Any,
    recorder: _Recorder,
    gate: asyncio.Semaphore,
) -> None:
    query = interview_query(who, item)
    async with gate:
        result = await graph.ainvoke(
            {"character": who.indexed_as, "query": query}, context=run.agent
        )
        hs, degraded = await _hallucination(run, item.question, result)
    recorder.count_degraded(degraded, run.max_failures)
    await recorder.add(
        {
            "hs": hs,
            "kind": "interview",
            "character": who.name,
            "indexed_as": who.indexed_as,
            "id": item.id,
            "dimension": item.dimension,
            "question": item.question,
            "interviewer": who.experimenter,
            "query": query,
            "response": result["response"],
            "knowledge": [c["id"] for c in result["knowledge"]],
            "selected": [c["id"] for c in result["selected"]],
            "selected_text": [c["text"] for c in result["selected"]],
            "attributes": result.get("attributes"),
            "gs_failed": result["gs_failed"],
            "usage": dict(result["usage"]),
        }
    )


async def _hallucination(
    run: PersonalityRun, question: str, result: Mapping[str, Any]
) -> tuple[int | None, int]:
    """HS of one answer against the chunks in its final context, and how many degraded.

    No ground truth; a judge's answer still invalid after retries leaves the HS empty (1).
    """
    if run.hs_judge is None or run.agent.method == "none":
        return None, 0
    chunks = [chunk["text"] for chunk in final_context(result)]
    messages = hs_messages(question, chunks, None, str(result["response"]))
    try:
        verdict, _ = await call_structured(
            run.hs_judge,
            HallucinationScore,
            messages,
            store=AnswerStore(run.cache_dir),
            model_name=run.judge_name,
        )
    except InvalidAnswerError:
        return None, 1
    return verdict.score, 0


def _pairs(
    run: PersonalityRun,
    who: Interviewee,
    items: Sequence[Item],
    done: Mapping[tuple[str, ...], dict[str, Any]],
) -> list[tuple[str, str]]:
    aliases = (*who.aliases, who.indexed_as, who.name)
    return [
        (
            item.question,
            anonymise(
                str(done[("interview", who.name, item.id)]["response"]), aliases, who.experimenter
            ),
        )
        for item in items
    ]


async def _rate(
    run: PersonalityRun,
    who: Interviewee,
    dimension: str,
    index: int,
    items: Sequence[Item],
    recorder: _Recorder,
    gate: asyncio.Semaphore,
) -> None:
    async with gate:
        try:
            score, analysis, used = await _ask_rater(run, who, dimension, items, recorder.done)
        except InvalidAnswerError as failed:  # not recorded: the next run asks it again
            logger.warning("%s %s batch %d degraded: %s", who.name, dimension, index, failed)
            recorder.count_degraded(1, run.max_failures)
            return
    await recorder.add(
        {
            "kind": RATING_KINDS[run.assess],
            "character": who.name,
            "id": f"{dimension}#{index}",
            "dimension": dimension,
            "items": [item.id for item in items],
            "score": score,
            "analysis": analysis,
            "usage": used.as_dict(),
        }
    )


async def _ask_rater(
    run: PersonalityRun,
    who: Interviewee,
    dimension: str,
    items: Sequence[Item],
    done: Mapping[tuple[str, ...], dict[str, Any]],
) -> tuple[float, str, Any]:
    """One ER batch: InCharacter's prompts (``er``) or ours (``er-personae``)."""
    if run.assess == "er":  # InCharacter anonymises inside its prompt builder
        answers = [str(done[("interview", who.name, item.id)]["response"]) for item in items]
        return await incharacter_expert.rate_batch(
            run.rater,
            kind=run.questionnaire.kind,
            questionnaire=run.questionnaire.name,
            dimension=dimension,
            description=run.questionnaire.descriptions[dimension],
            scale=run.questionnaire.scale,
            language=run.language,
            experimenter=who.experimenter,
            aliases=tuple(dict.fromkeys((*who.aliases, who.indexed_as, who.name))),
            pairs=[(item.question, answer) for item, answer in zip(items, answers, strict=True)],
        )
    return await rate_batch(
        run.rater,
        kind=run.questionnaire.kind,
        dimension=dimension,
        description=run.questionnaire.descriptions[dimension],
        pairs=_pairs(run, who, items, done),
    )


async def _convert(
    run: PersonalityRun,
    who: Interviewee,
    index: int,
    items: Sequence[Item],
    recorder: _Recorder,
    gate: asyncio.Semaphore,
) -> None:
    pairs = _pairs(run, who, items, recorder.done)
    statements = [
        (item.id, item.statement, q, a) for item, (q, a) in zip(items, pairs, strict=True)
    ]
    async with gate:
        choices, used = await convert_choices(
            run.rater, kind=run.questionnaire.kind, statements=statements
        )
    recorder.count_degraded(used.degraded, run.max_failures)
    await recorder.add(
        {
            "kind": "choices",
            "character": who.name,
            "id": f"oc#{index}",
            "choices": choices,
            "usage": used.as_dict(),
        }
    )


def _assessment_tasks(
    run: PersonalityRun, who: Interviewee, items: Sequence[Item]
) -> list[tuple[str, int, list[Item]]]:
    if run.assess == "oc":
        return [
            ("oc", i, list(items[s : s + OC_BATCH]))
            for i, s in enumerate(range(0, len(items), OC_BATCH))
        ]
    tasks = []
    for dimension in run.questionnaire.dimensions:
        mine = [item for item in items if item.dimension == dimension]
        tasks += [(dimension, i, batch) for i, batch in enumerate(split_batches(mine))]
    return tasks


def character_scores(
    run: PersonalityRun, who: Interviewee, done: Mapping[tuple[str, ...], dict[str, Any]]
) -> dict[str, float]:
    """Dimension scores of ``who`` from the recorded ratings or choices."""
    mine = [r for k, r in done.items() if k[1] == who.name]
    if run.assess in RATING_KINDS:
        scores: dict[str, float] = {}
        for dimension in run.questionnaire.dimensions:
            values = [
                float(r["score"])
                for r in mine
                if r["kind"] == RATING_KINDS[run.assess] and r["dimension"] == dimension
            ]
            if values:
                scores[dimension] = sum(values) / len(values)
        return scores
    by_id = {item.id: item for item in run.questionnaire.items}
    per_item = {}
    for record in mine:
        if record["kind"] == "choices":
            for item_id, choice in record["choices"].items():
                if item_id in by_id:
                    per_item[item_id] = option_score(by_id[item_id], choice, run.questionnaire)
    return dimension_scores(run.questionnaire, per_item)


async def run_personality_eval(run: PersonalityRun) -> dict[str, Any]:
    """Interview, assess, score and compare; returns the summary (also written to disk)."""
    await asyncio.to_thread(run.out_dir.mkdir, parents=True, exist_ok=True)
    path = run.out_dir / RESULTS
    recorder = _Recorder(path, await asyncio.to_thread(load_done, path))
    gate = asyncio.Semaphore(run.concurrency)
    graph = build_graph()
    items = _items(run)
    for who in run.interviewees:
        todo = [item for item in items if ("interview", who.name, item.id) not in recorder.done]
        run.progress(
            f"{who.name}: {len(items) - len(todo)}/{len(items)} interviews done, asking {len(todo)}"
        )
        recorder.units += len(todo) if run.hs_judge is not None else 0
        await gather_all(_interview(run, who, item, graph, recorder, gate) for item in todo)
        tasks = [
            t
            for t in _assessment_tasks(run, who, items)
            if (RATING_KINDS.get(run.assess, "choices"), who.name, f"{t[0]}#{t[1]}")
            not in recorder.done
        ]
        run.progress(f"{who.name}: {len(tasks)} assessment calls")
        recorder.units += sum(len(t[2]) for t in tasks) if run.assess == "oc" else len(tasks)
        await gather_all(
            _convert(run, who, index, batch, recorder, gate)
            if run.assess == "oc"
            else _rate(run, who, dimension, index, batch, recorder, gate)
            for dimension, index, batch in tasks
        )
    summary = summarise(run, recorder.done)
    summary["degraded"] = {"assessments": recorder.degraded}
    summary["paper_settings"] = rows_json(run.settings)
    if methods := chosen_methods():  # how structured answers were asked for, per endpoint
        summary["structured_output"] = methods
    await asyncio.to_thread(write_json_atomic, run.out_dir / "summary.json", summary)
    await asyncio.to_thread(write_text_atomic, run.out_dir / "report.md", render_report(summary))
    return summary


def _usage(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for record in records:
        for key, value in dict(record.get("usage") or {}).items():
            total[key] = total.get(key, 0) + int(value)
    return total


def summarise(
    run: PersonalityRun, done: Mapping[tuple[str, ...], dict[str, Any]]
) -> dict[str, Any]:
    """Per-character scores, codes and mismatches; overall metrics; usage; GS failure rate."""
    questionnaire = run.questionnaire
    predicted: dict[str, dict[str, str]] = {}
    rows = []
    for who in run.interviewees:
        scores = character_scores(run, who, done)
        letters = letters_of(questionnaire, scores)
        predicted[who.name] = letters
        interviews = [r for k, r in done.items() if k[0] == "interview" and k[1] == who.name]
        label = dict(who.label) if who.label is not None else None
        rows.append(
            {
                "character": who.name,
                "indexed_as": who.indexed_as,
                "persona_source": who.persona_source,
                "persona_kind": who.persona_kind,
                "scores": scores,
                "predicted": code_of(letters, questionnaire),
                "label": code_of(label, questionnaire) if label else None,
                "mismatches": sum(label[d] != letters.get(d) for d in label if label[d] != "X")
                if label
                else None,
                "interviews": len(interviews),
                "hs": _mean([float(r["hs"]) for r in interviews if r.get("hs") is not None])
                if any(r.get("hs") is not None for r in interviews)
                else None,
                "gs_failure_rate": sum(bool(r["gs_failed"]) for r in interviews) / len(interviews)
                if interviews
                else 0.0,
            }
        )
    labels = {who.name: dict(who.label) for who in run.interviewees if who.label is not None}
    metrics = type_metrics(questionnaire.dimensions, predicted, labels)
    return {
        "questionnaire": questionnaire.name,
        "method": run.agent.method,
        "assess": run.assess,
        "items_per_character": len(_items(run)),
        "characters": rows,
        "metrics": {
            "accuracy": metrics.accuracy,
            "avg_f1": metrics.avg_f1,
            "full_type_accuracy": metrics.full_accuracy,
            "per_dimension_accuracy": metrics.per_dimension,
            "labelled_characters": metrics.characters,
        },
        "gs_failure_rate": _mean([float(str(r["gs_failure_rate"])) for r in rows]),
        "hs": _mean([float(str(r["hs"])) for r in rows if r["hs"] is not None])
        if any(r["hs"] is not None for r in rows)
        else None,
        "usage": _usage(list(done.values())),
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def render_report(summary: Mapping[str, Any]) -> str:
    """Markdown in the layout of the paper's Tables 4 (MBTI) and 5 (Big Five SLOAN)."""
    kind = "MBTI Types" if summary["questionnaire"] == "16Personalities" else "Big 5 SLOAN Types"
    method = {"amadeus": "AMADEUS", "naive": "Naive RAG", "none": "w/o RAG"}.get(
        summary["method"], summary["method"]
    )
    lines = [
        f"# Predicted {kind} per Character ({summary['questionnaire']}, {summary['assess'].upper()} assessment)",
        "",
        "The number in parentheses is the number of letters that differ from the ground truth (GT).",
        "",
        f"| Character | {method} | GT |",
        "|---|---|---|",
    ]
    for row in summary["characters"]:
        missed = (
            f" (-{row['mismatches']})" if row["mismatches"] else (" (0)" if row["label"] else "")
        )
        lines.append(
            f"| {row['character']} | {row['predicted']}{missed} | {row['label'] or 'no label'} |"
        )
    metrics = summary["metrics"]
    if metrics["labelled_characters"]:
        lines.append(f"| Accuracy | {metrics['accuracy'] * 100:.2f}% | - |")
        lines.append(f"| Avg F1-Score | {metrics['avg_f1']:.4f} | - |")
        lines.append(
            f"| Full-type accuracy (InCharacter) | {metrics['full_type_accuracy'] * 100:.2f}% | - |"
        )
    lines += ["", f"Guided Selection failure rate: {summary['gs_failure_rate'] * 100:.2f}%."]
    degraded = (summary.get("degraded") or {}).get("assessments", 0)
    if degraded:
        lines.append(
            f"Degraded: {degraded} assessment(s) still invalid after retries, left out "
            "(a rerun asks the rating batches again)."
        )
    if summary.get("hs") is not None:
        lines.append(
            f"Hallucination Score (HS, 1-10, lower is better; Table 6): {summary['hs']:.2f}."
        )
    lines += ["", "Persona sources:"]
    lines += [
        f"- {row['character']}: {row['persona_kind']} {row['persona_source']}".rstrip()
        for row in summary["characters"]
    ]
    if summary.get("paper_settings"):
        lines += ["", "## Settings: the paper's and this run's", ""]
        lines += settings_markdown(summary["paper_settings"])
    return "\n".join(lines) + "\n"
