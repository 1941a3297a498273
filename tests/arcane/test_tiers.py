"""ARCANE App. M: Arc-over-Vanilla lift for central vs supporting characters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from arcane_world import result_record

from personae.cli import main
from personae.evals.arcane.metrics import tier_lifts

RECORDS = [
    result_record("Ada", "arc", 70, "a1"),
    result_record("Ada", "vanilla", 60, "a1"),
    result_record("Bram", "arc", 50, "b1"),
    result_record("Bram", "vanilla", 35, "b1"),
    result_record("Cleo", "arc", 40, "c1"),
    result_record("Cleo", "vanilla", 35, "c1"),
]


def test_lift_per_tier_over_the_cells_both_modes_have() -> None:
    [entry] = tier_lifts(RECORDS, ["ada"])
    assert entry["central"] == {"arc": 70, "vanilla": 60, "lift": 10, "cells": 4, "probes": 1}
    assert entry["supporting"]["lift"] == 10.0 and entry["supporting"]["probes"] == 2
    assert entry["supporting"]["arc"] == 45.0 and entry["supporting"]["vanilla"] == 35.0


def test_report_adds_the_tier_lines_and_rejects_unknown_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    assert main(["arcane", "eval-report", str(tmp_path), "--central", "Zed"]) == 2
    err = capsys.readouterr().err
    assert "--central 'Zed' is not a character of the results" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "summary.json").exists()
    assert main(["arcane", "eval-report", str(tmp_path), "--central", "Ada"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["tiers"][0]["central"]["lift"] == 10.0
    report = (tmp_path / "report.md").read_text()
    assert "Arc-over-Vanilla lift by tier (App. M): central +10.0" in report
