"""Chunk analyses: Σμ/Σσ² per splitter, usage rate, GS failure and the use histogram."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from personae.cli import main
from personae.evals.amadeus.persona_chunks import chunk_usage, mean_variance


def test_usage_rate_failure_rate_and_histogram_on_a_synthetic_log() -> None:
    records = [
        {
            "character": "A",
            "knowledge": [{"id": "a1"}, {"id": "a2"}],
            "selected": ["a2"],
            "gs_failed": False,
        },
        {"character": "A", "knowledge": ["a1"], "selected": ["a3"], "gs_failed": True},
        {
            "character": "Hermione-en",
            "indexed_as": "B",
            "knowledge": ["b1"],
            "selected": [],
            "gs_failed": False,
        },
        {
            "character": "Hermione-en",
            "indexed_as": "B",
            "knowledge": ["b1"],
            "selected": ["b1"],
            "gs_failed": True,
        },
    ]
    usage = chunk_usage(records, {"A": 6, "B": 4})
    assert usage["per_character"] == {"A": 0.5, "B": 0.25}
    assert usage["usage_rate"] == 0.375 and usage["gs_failure_rate"] == 0.5
    # a1 used twice, a2 once (knowledge and slot of one query count once), a3 once, b1 twice;
    # 3 + 3 chunks never used.
    assert usage["use_histogram"] == {"0": 6, "1": 2, "2": 2}
    mean, variance = mean_variance([1.0, 2.0, 3.0])
    assert mean == 2.0 and variance == pytest.approx(2 / 3)


def test_similarity_table_per_splitter_on_a_real_persona(
    tmp_path: Path, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    othello = shared_dir / "data/coser/final/Othello.json"
    argv = [
        "amadeus",
        "eval-chunks",
        "--questions",
        "iago-othello",
        "--persona",
        f"Iago={othello}",
        "--memory",
        str(tmp_path / "mem"),
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    rows = {row["splitter"]: row for row in summary["similarity"]}
    assert set(rows) == {"fixed", "ats", "acts"}
    for row in rows.values():
        mean, variance = row["per_character"]["Iago"]
        assert row["sum_mean"] == mean and 0 < mean < 1 and variance >= 0  # one character
        assert f"| {row['splitter']} | {row['sum_mean']:.4f} |" in out
