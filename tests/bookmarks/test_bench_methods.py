"""The harness through the real method graphs (BOOKMARKS agent, Vanilla, RICL, ETA)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bookmarks_world as world
import chromadb
import numpy as np
import pytest
from langchain_core.messages import BaseMessage

from personae.evals.bookmarks.bench import (
    CURRENT_INSTANCE,
    BenchConfig,
    result_key,
    run_bench_config,
)
from personae.graphs.bookmarks.resources import forget_resources
from personae.memory.embeddings import TextEmbedding, embed_text, override_embeddings
from personae.testing import ScriptedChatModel, override_models, prompt_text

pytestmark = pytest.mark.endtoend


JUDGED: list[tuple[int, int]] = []
"""(index in model.calls when the judge was called, target position of the judged instance)."""


def _model() -> ScriptedChatModel:
    model: ScriptedChatModel

    def judge(messages: list[BaseMessage]) -> dict[str, Any]:
        text = str(messages[-1].content)
        target = re.search(r"Ground Truth: .* in scene (\d+)\.", text)
        assert target is not None
        JUDGED.append((len(model.calls) - 1, int(target.group(1))))
        response = text.split("Your Response:")[1].split("\n")[0]
        return {"reasoning": "smiles", "score": "A" if "smiles" in response else "C"}

    model = world.scripted_model(
        KeyMoveVerdict=judge,
    )
    return model


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    JUDGED.clear()
    yield


def _config(tmp_path: Path, model: ScriptedChatModel, **changes: Any) -> BenchConfig:
    override_models(specs={"openai:bench-real": model})
    options: dict[str, Any] = {
        "storylines": (str(world.write_storyline(tmp_path / "club.jsonl")),),
        "methods": ("bookmarks",),
        "out_dir": tmp_path / "out",
        "model": "openai:bench-real",
        "fast_model": "openai:bench-real",
        "judge_model": "openai:bench-real",
    }
    return BenchConfig(**{**options, **changes})


async def test_no_method_prompt_shows_the_target_or_later(tmp_path: Path) -> None:
    model = _model()
    await run_bench_config(_config(tmp_path, model, limit=3, concurrency=1))
    assert len(JUDGED) == 12
    start = 0
    for judge_index, target in JUDGED:
        instance_calls = model.calls[start:judge_index]
        assert instance_calls, "the method made no model call"
        assert world.future_reads(instance_calls, target) == [], target
        start = judge_index + 1


async def test_memory_methods_and_baselines_side_by_side(tmp_path: Path) -> None:
    methods = ("vanilla", "ricl", "eta", "bookmarks")
    outcome = await run_bench_config(
        _config(tmp_path, _model(), methods=methods, limit=2, concurrency=2)
    )
    assert outcome.ran == 4 * 4 * 2
    figures = outcome.summary["artifacts"]["club"]
    assert set(figures) == set(methods)
    bookmarks = figures["bookmarks"]
    assert bookmarks["n"] == 8 and bookmarks["questions"] > 0
    assert 0 < bookmarks["hit_rate"] <= 1 and bookmarks["saved"] > 0
    assert bookmarks["actions_read"] < bookmarks["actions_from_scratch"]
    for baseline in ("vanilla", "ricl", "eta"):
        assert figures[baseline]["hit_rate"] is None and figures[baseline]["questions"] is None
    assert figures["vanilla"]["saved"] is None
    assert figures["vanilla"]["llm_calls"] == figures["ricl"]["llm_calls"] == 8
    assert figures["eta"]["llm_calls"] > 8  # extraction and aggregation calls counted
    assert "| vanilla | 100.00 | 100.00 |" in (tmp_path / "out/report.md").read_text()
    report = (tmp_path / "out/report.md").read_text()
    assert "| Fandom | club | Avg. |" in report and "<polyline" in report


async def test_a_later_run_continues_from_the_stored_memory(tmp_path: Path) -> None:
    await run_bench_config(_config(tmp_path, _model(), limit=2))
    outcome = await run_bench_config(_config(tmp_path, _model(), limit=3))
    assert (outcome.ran, outcome.skipped) == (4, 8)
    lines = (tmp_path / "out/results.jsonl").read_text().splitlines()
    third = [json.loads(line) for line in lines[8:]]
    for record in third:  # the bank already covers most of the story: only a suffix is read
        stats = record["stats"]
        assert stats["reuse"] + stats["derive"] > 0
        assert stats["actions_read"] < stats["actions_from_scratch"] / 2, stats


async def test_all_methods_on_a_shared_storyline(shared_dir: Path, tmp_path: Path) -> None:
    story = shared_dir / "data/bookmarks/title2action_series.haruhi.json"
    model = world.scripted_model(
        KeyMoveVerdict=lambda _m: {"reasoning": "k", "score": "C"},
    )
    methods = ("vanilla", "ricl", "eta", "bookmarks")
    config = _config(tmp_path, model, storylines=(str(story),), methods=methods, limit=1)
    outcome = await run_bench_config(config)
    assert outcome.ran == 4 * 5
    figures = outcome.summary["artifacts"]["haruhi"]
    assert sorted(figures["bookmarks"]["characters"]) == [
        "Asahina",
        "Haruhi",
        "Koizumi",
        "Kyon",
        "Nagato",
    ]
    for line in (tmp_path / "out/results.jsonl").read_text().splitlines():
        record = json.loads(line)
        stats = record["stats"]
        assert stats.get("actions_read", 0) <= stats.get("actions_from_scratch", 10**9)
        assert record["truth"] and record["score"] == 0
    assert figures["bookmarks"]["questions"] > 0 and figures["bookmarks"]["llm_calls"] > 5


async def test_no_future_read_while_characters_run_concurrently(tmp_path: Path) -> None:
    """Characters share one bank and run interleaved: still no prompt at or after a target."""
    leaks: list[tuple[str, int, int]] = []
    audited: set[tuple[str, int]] = set()
    base = _model()

    def audited_responder(name: str) -> Any:
        inner = base.responders[name]

        def respond(messages: list[BaseMessage]) -> Any:
            instance = CURRENT_INSTANCE.get()
            assert instance is not None, f"{name} called outside an instance"
            audited.add((instance.character, instance.position))
            latest = world.latest_marker(prompt_text(messages))
            if latest >= instance.position:
                leaks.append((name, latest, instance.position))
            return inner(messages)

        return respond

    for name in list(base.responders):
        if name != "KeyMoveVerdict":
            base.responders[name] = audited_responder(name)
    base.latency = 0.001  # let the four characters interleave
    methods = ("bookmarks", "eta", "ricl")
    await run_bench_config(_config(tmp_path, base, methods=methods, limit=3, concurrency=4))
    assert leaks == []
    assert len(audited) == 12  # every instance of every character was audited


async def test_results_do_not_depend_on_concurrency(tmp_path: Path) -> None:
    """One artifact = one shared bank in one story order: concurrency 1 and 4 agree exactly."""
    results = []
    for concurrency in (1, 4):
        folder = tmp_path / f"c{concurrency}"
        folder.mkdir()
        stories = (
            str(world.write_storyline(folder / "club.jsonl")),
            str(world.write_storyline(folder / "dojo.jsonl", size=120)),
        )
        model = _model()
        model.latency = 0.001  # let the runs interleave
        config = _config(
            folder,
            model,
            storylines=stories,
            methods=("bookmarks", "eta"),
            limit=1,
            concurrency=concurrency,
        )
        await run_bench_config(config)
        lines = (folder / "out/results.jsonl").read_text().splitlines()
        records = sorted((json.loads(line) for line in lines), key=result_key)
        for record in records:
            # The judge's cost only: bookmarks and eta may predict the same text for a target,
            # and whichever is judged first pays the call the other then finds cached.
            assert record.pop("judge_usage")["llm_calls"] in (0, 1)
        results.append(records)
        forget_resources()
    assert len(results[0]) == 2 * 2 * 4
    for a, b in zip(results[0], results[1], strict=True):
        assert a == b, str({k: (a[k], b[k]) for k in a if a[k] != b.get(k)})


async def test_ablations_run_beside_the_full_method_and_are_named(tmp_path: Path) -> None:
    methods = ("bookmarks", "bookmarks+no-reuse+no-derive", "bookmarks+no-near")
    outcome = await run_bench_config(_config(tmp_path, _model(), methods=methods, limit=1))
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["ablations"] == {
        "bookmarks": [],
        "bookmarks+no-reuse+no-derive": ["no-reuse", "no-derive"],
        "bookmarks+no-near": ["no-near"],
    }
    figures = outcome.summary["artifacts"]["club"]
    assert figures["bookmarks+no-reuse+no-derive"]["hit_rate"] == 0  # every question is new
    assert figures["bookmarks"]["hit_rate"] > 0
    report = (tmp_path / "out/report.md").read_text()
    assert "- bookmarks+no-reuse+no-derive: no-reuse, no-derive" in report
    assert "| bookmarks+no-near |" in report
    folders = [p.name for p in (tmp_path / "out/memory").iterdir() if p.is_dir()]
    assert sorted(folders) == sorted(methods)  # beside them: .checkpoints.sqlite, steps' file


async def test_ricl_and_bookmarks_use_the_configured_embedding(tmp_path: Path) -> None:
    embedded: list[str] = []

    class Counting(TextEmbedding):
        spec = "openai:bench-counting"

        def embed(self, texts: Any) -> np.ndarray:
            embedded.extend(texts)
            return np.stack([embed_text(t) for t in texts])

    override_embeddings({"openai:bench-counting": Counting()})
    config = _config(
        tmp_path,
        _model(),
        methods=("ricl", "bookmarks"),
        limit=1,
        concurrency=1,
        embedding="openai:bench-counting",
    )
    await run_bench_config(config)
    # RICL embedded scenes ("(Who) text" lines), BOOKMARKS its questions: both through it.
    assert any(text.startswith("(") for text in embedded)
    assert any(text.startswith(("Where is", "How does", "Who is")) for text in embedded)
    # Every Chroma collection either method made is keyed by the embedding.
    for label in ("ricl", "bookmarks"):
        databases = [
            p.parent for p in (tmp_path / "out").rglob("chroma.sqlite3") if label in str(p)
        ]
        assert databases, label
        for folder in databases:
            client = chromadb.PersistentClient(path=str(folder))
            collections = [c.name for c in client.list_collections()]
            assert collections and all("bench-counting" in c for c in collections), collections
