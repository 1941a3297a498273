"""`bench bookmarks` estimates what it will pay within 0.85-1.15 of the calls it then makes.

The paper's method and ours on the scripted bookmarks world (the real BOOKMARKS graph, a
scripted model): the estimate noted before the first instance, against the calls the results
record (each method step's and each judge call).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import bookmarks_world as world
import pytest

from personae.evals.bookmarks.bench import BenchConfig, run_bench_config
from personae.graphs.bookmarks.resources import forget_resources
from personae.testing import override_models


@pytest.mark.parametrize("method", ["bookmarks", "bookmarks-personae", "vanilla"])
def test_the_estimate_is_within_15_percent_of_the_calls_made(method: str, tmp_path: Path) -> None:
    story = world.write_storyline(tmp_path / "club.jsonl", size=200)
    model = world.scripted_model(KeyMoveVerdict=lambda m: {"reasoning": "k", "score": "C"})
    notes: list[str] = []  # the progress lines: the estimate is the first
    config = BenchConfig(
        storylines=(str(story),),
        methods=(method,),
        out_dir=tmp_path / "out",
        characters=("Haruhi", "Kyon"),
        model="openai:scripted",
        fast_model="openai:scripted",
        judge_model="openai:scripted",
        limit=3,
    )
    forget_resources()
    with override_models(model):
        asyncio.run(run_bench_config(config, progress=notes.append))
    forget_resources()
    rows = [json.loads(x) for x in (tmp_path / "out/results.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    made = sum(r["stats"].get("llm_calls", 0) + r["judge_usage"]["llm_calls"] for r in rows)
    found = re.search(r"estimated: ([\d,]+) LLM calls", notes[0])
    assert found, notes
    estimated = int(found.group(1).replace(",", ""))
    assert 0.85 <= estimated / made <= 1.15, (estimated, made)


def test_a_step_costs_what_its_operators_read(tmp_path: Path) -> None:
    """Behavioral checks per own unseen action (or per chunk under IBU), state per chunk."""
    from personae.evals.bookmarks.costs import estimate_step
    from personae.memory.bookmarks.storyline import open_storyline

    story = open_storyline(world.write_storyline(tmp_path / "club.jsonl", size=200))
    own = sum(1 for p in story.positions_of("Haruhi") if p < 150)
    fresh = estimate_step(story, "Haruhi", 150, None, released=False)
    assert fresh.calls == 2 + 3 + own + 1 + 1  # proposal+actor, 3 state chunks, checks+summary
    ibu = estimate_step(story, "Haruhi", 150, None, released=False, incremental_behavior=True)
    assert ibu.calls == 2 + 3 + 3 + 1
    paper = estimate_step(story, "Haruhi", 150, 149, released=True)
    assert paper.calls == 2 + 2 + 1 + 3  # one chunk checked and updated, concept, 3 matchers
    assert paper.tokens > 0 and "150" in paper.detail
