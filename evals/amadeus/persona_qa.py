"""AMADEUS's QA evaluation (Table 6): ACC, ACC_L and HS of a role-play method on persona QA.

Each QA item ``{character, question, answer, attribute}`` is asked in a fresh conversation with
the method under test; three judges then score the response (prompts in
:mod:`personae.agents.amadeus.qa_judge`): ACC (binary, reported as %), ACC_L (1-10, mean) and
HS (1-10, mean, lower is better; "-" for ``none``, which has no chunks, as in the paper).
Results are reported overall, per character and per attribute. Every answered item is
appended to ``results.jsonl`` (a rerun skips it), judge answers are cached on disk, and
``summary.json`` / ``report.md`` are written atomically at the end.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from personae.agents.amadeus.qa_judge import (
    AnswerContained,
    AnswerReflection,
    HallucinationScore,
    acc_l_messages,
    acc_messages,
    hs_messages,
)
from personae.answer_store import AnswerStore
from personae.degraded import FailureBudget
from personae.errors import InputError, NothingUsableError
from personae.evals.paper_settings import PaperSetting, rows_json, settings_markdown
from personae.fanout import gather_all
from personae.files import (
    append_jsonl,
    parse_jsonl,
    read_jsonl,
    read_text,
    write_json_atomic,
    write_text_atomic,
)
from personae.graphs.amadeus.graph import AmadeusContext, build_graph
from personae.llm import InvalidAnswerError, call_structured
from personae.progress import Progress, quiet

logger = logging.getLogger(__name__)

RESULTS = "results.jsonl"
SHIPPED_SETS = {"iago-othello": "iago_othello.jsonl"}
"""QA sets that ship with Personae, by name (written by us; see data/persona_qa/README.md)."""


@dataclass(frozen=True)
class QAItem:
    """One question with its ground-truth answer."""

    character: str
    question: str
    answer: str
    attribute: str = ""
    """One of CharacterRAG's six attributes (reported per attribute)."""

    @property
    def id(self) -> str:
        """Stable id of the item (character and question), for resuming."""
        key = f"{self.character}\x1f{self.question}"
        return hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]


def qa_path(source: str) -> Path:
    """The QA file: a path, or the name of a shipped set."""
    if source in SHIPPED_SETS and not Path(source).exists():
        from importlib import resources

        root = resources.files("personae.evals.amadeus") / "data" / "persona_qa"
        return Path(str(root / SHIPPED_SETS[source]))
    return Path(source)


def load_qa(source: str) -> list[QAItem]:
    """Items of a QA JSONL file (one ``{character, question, answer[, attribute]}`` per line).

    Raises:
        InputError: Missing file, bad JSON, or a line without character/question/answer.
    """
    path = qa_path(source)
    fix = "write one JSON object per line with character, question and answer"
    if not path.is_file():
        raise InputError(f"QA file {path} not found", f"{fix}, or use a shipped set: iago-othello")
    items = []
    for number, row in parse_jsonl(read_text(path), str(path), fix):
        if not isinstance(row, dict) or not all(
            str(row.get(key) or "").strip() for key in ("character", "question", "answer")
        ):
            raise InputError(f"{path} line {number} lacks character, question or answer", fix)
        items.append(
            QAItem(
                str(row["character"]).strip(),
                str(row["question"]).strip(),
                str(row["answer"]).strip(),
                str(row.get("attribute") or ""),
            )
        )
    if not items:
        raise InputError(f"QA file {path} is empty", fix)
    return items


@dataclass(frozen=True, kw_only=True)
class QARun:
    """Everything one QA evaluation needs."""

    items: Sequence[QAItem]
    agent: AmadeusContext
    judge: BaseChatModel
    judge_name: str
    """Name judge answers are cached under (model spec and server)."""
    cache_dir: Path | None
    out_dir: Path
    concurrency: int = 4
    progress: Progress = quiet
    max_failures: FailureBudget = field(default_factory=FailureBudget)
    """Items whose judgment is still invalid after retries tolerated before the run stops."""
    settings: Sequence[PaperSetting] = ()
    """The paper's settings beside this run's, kept in ``summary.json`` and the report."""


@dataclass
class _Failures:
    """Items this run could not judge (left out, asked again by the next run)."""

    budget: FailureBudget
    items: int
    failed: int = 0

    def add(self, error: InvalidAnswerError, item: QAItem) -> None:
        logger.warning("persona QA item %s degraded: %s", item.id, error)
        self.failed += 1
        self.budget.check(self.failed, self.items, "QA items")


def _done(path: Path) -> dict[str, dict[str, Any]]:
    return {str(record["id"]): record for record in read_jsonl(path) if "id" in record}


def final_context(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chunks in the method's final context: knowledge, then the slot (each once)."""
    seen: set[str] = set()
    chunks = []
    for chunk in [*result.get("knowledge", []), *result.get("selected", [])]:
        if chunk["id"] not in seen:
            seen.add(chunk["id"])
            chunks.append(chunk)
    return chunks


async def _judge(
    run: QARun, cache: AnswerStore, item: QAItem, response: str, chunks: Sequence[str]
) -> dict[str, Any]:
    acc, _ = await call_structured(
        run.judge,
        AnswerContained,
        acc_messages(item.question, item.answer, response),
        store=cache,
        model_name=run.judge_name,
    )
    acc_l, _ = await call_structured(
        run.judge,
        AnswerReflection,
        acc_l_messages(item.question, item.answer, response),
        store=cache,
        model_name=run.judge_name,
    )
    scores: dict[str, Any] = {"acc": acc.correct, "acc_l": acc_l.score, "acc_reason": acc.reason}
    if run.agent.method != "none":
        hs, _ = await call_structured(
            run.judge,
            HallucinationScore,
            hs_messages(item.question, chunks, item.answer, response),
            store=cache,
            model_name=run.judge_name,
        )
        scores.update(hs=hs.score, hs_reason=hs.reason)
    return scores


async def _answer(
    run: QARun,
    item: QAItem,
    graph: Any,
    cache: AnswerStore,
    gate: asyncio.Semaphore,
    lock: asyncio.Lock,
    path: Path,
    failures: _Failures,
) -> dict[str, Any] | None:
    async with gate:
        result = await graph.ainvoke(
            {"character": item.character, "query": item.question}, context=run.agent
        )
        chunks = final_context(result)
        try:
            scores = await _judge(
                run, cache, item, str(result["response"]), [c["text"] for c in chunks]
            )
        except InvalidAnswerError as failed:  # not recorded: the next run asks it again
            failures.add(failed, item)
            return None
    record = {
        "id": item.id,
        "character": item.character,
        "attribute": item.attribute,
        "question": item.question,
        "answer": item.answer,
        "response": result["response"],
        "knowledge": [{"id": c["id"], "similarity": c["similarity"]} for c in result["knowledge"]],
        "selected": [c["id"] for c in result["selected"]],
        "gs_failed": result["gs_failed"],
        "usage": dict(result["usage"]),
        **scores,
    }
    async with lock:
        await asyncio.to_thread(append_jsonl, path, record)
    return record


async def run_persona_qa(run: QARun) -> dict[str, Any]:
    """Answer and judge every item not yet in ``results.jsonl``; summarise all of them.

    An item whose judgment is still invalid after retries is left out of the summary
    (``degraded.items``) and judged again by the next run; with none judged at all, nothing
    usable is left (:class:`~personae.errors.NothingUsableError`).
    """
    await asyncio.to_thread(run.out_dir.mkdir, parents=True, exist_ok=True)
    path = run.out_dir / RESULTS
    done = await asyncio.to_thread(_done, path)
    todo = [item for item in run.items if item.id not in done]
    run.progress(f"{len(run.items) - len(todo)}/{len(run.items)} items done, answering {len(todo)}")
    cache = AnswerStore(run.cache_dir)
    gate, lock, graph = asyncio.Semaphore(run.concurrency), asyncio.Lock(), build_graph()
    failures = _Failures(run.max_failures, len(todo))
    for record in await gather_all(
        _answer(run, item, graph, cache, gate, lock, path, failures) for item in todo
    ):
        if record is not None:
            done[str(record["id"])] = record
    records = [done[item.id] for item in run.items if item.id in done]
    if not records:
        raise NothingUsableError(f"no QA item could be judged ({failures.failed} failed)")
    summary = summarise(records, run.agent.method)
    summary["degraded"] = {"items": len(run.items) - len(records)}
    summary["paper_settings"] = rows_json(run.settings)
    await asyncio.to_thread(write_json_atomic, run.out_dir / "summary.json", summary)
    await asyncio.to_thread(write_text_atomic, run.out_dir / "report.md", render_report(summary))
    return summary


def _scores(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    count = len(records)
    hs = [float(r["hs"]) for r in records if r.get("hs") is not None]
    return {
        "items": count,
        "acc": sum(bool(r["acc"]) for r in records) / count * 100 if count else 0.0,
        "acc_l": sum(float(r["acc_l"]) for r in records) / count if count else 0.0,
        "hs": sum(hs) / len(hs) if hs else None,
        "gs_failure_rate": sum(bool(r["gs_failed"]) for r in records) / count if count else 0.0,
    }


def summarise(records: Sequence[Mapping[str, Any]], method: str) -> dict[str, Any]:
    """Overall, per-character and per-attribute ACC (%), ACC_L and HS."""
    groups: dict[str, dict[str, list[Mapping[str, Any]]]] = {"character": {}, "attribute": {}}
    for record in records:
        for key in groups:
            groups[key].setdefault(str(record.get(key) or "-"), []).append(record)
    return {
        "method": method,
        "overall": _scores(records),
        "per_character": {
            name: _scores(rows) for name, rows in sorted(groups["character"].items())
        },
        "per_attribute": {
            name: _scores(rows) for name, rows in sorted(groups["attribute"].items())
        },
    }


def _row(label: str, scores: Mapping[str, Any]) -> str:
    hs = "-" if scores["hs"] is None else f"{scores['hs']:.2f}"
    return f"| {label} | {scores['items']} | {scores['acc']:.2f}% | {scores['acc_l']:.2f} | {hs} |"


def render_report(summary: Mapping[str, Any]) -> str:
    """Markdown in the layout of the paper's Table 6 (ACC %, ACC_L 1-10, HS 1-10 lower better)."""
    key: str = summary["method"]
    method = {"amadeus": "AMADEUS", "naive": "Naive RAG", "none": "w/o RAG"}.get(key, key)
    header = ["| {} | Items | ACC ↑ | ACC_L ↑ | HS ↓ |", "|---|---|---|---|---|"]
    lines = [f"# Persona QA: {method}", "", header[0].format("Method"), header[1]]
    lines.append(_row(method, summary["overall"]))
    for title, key in (("Character", "per_character"), ("Attribute", "per_attribute")):
        lines += ["", header[0].format(title), header[1]]
        lines += [_row(name, scores) for name, scores in summary[key].items()]
    degraded = (summary.get("degraded") or {}).get("items", 0)
    if degraded:
        lines += ["", f"Degraded: {degraded} item(s) not judged (a rerun judges them again)."]
    if summary.get("paper_settings"):
        lines += ["", "## Settings: the paper's and this run's", ""]
        lines += settings_markdown(summary["paper_settings"])
    return "\n".join(lines) + "\n"
