"""results.jsonl: one declared line shape, one reader every ARCANE reader goes through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from personae.errors import InputError
from personae.evals.arcane.eval_graph import done_keys, unit_key
from personae.evals.arcane.results import (
    RESULTS,
    TEXT_FIELDS,
    UnitRecord,
    read_results,
    result_problem,
)


def _record(probe: str = "p1") -> UnitRecord:
    return {
        "probe_id": probe,
        "novel": "the_river",
        "character": "Ada",
        "axis_id": "final_intra_01",
        "probe_type": "in_world",
        "mode": "arc",
        "model": "openai:m",
        "judge": "openai:j",
        "judge_include_thought": True,
        "settings": {},
        "phases": [
            {
                "phase_idx": 0,
                "query_chapter": 2,
                "response": "r",
                "context_chapters": [1, 2],
                "hint": None,
                "scores": None,
            }
        ],
        "unavailable_phases": [],
        "ptf": None,
        "usage": {"llm_calls": 2},
    }


def _write(out: Path, *lines: Any) -> Path:
    out.mkdir(exist_ok=True)
    path = out / RESULTS
    path.write_text("".join(x if isinstance(x, str) else json.dumps(x) + "\n" for x in lines))
    return path


def test_the_check_is_derived_from_the_declared_shape() -> None:
    assert set(UnitRecord.__required_keys__) == {"probe_id", "probe_type", "mode", "model"}
    assert set(TEXT_FIELDS) == {
        *UnitRecord.__required_keys__,
        "novel",
        "character",
        "axis_id",
        "judge",
    }
    assert result_problem(dict(_record())) is None
    older = {k: v for k, v in _record().items() if k in UnitRecord.__required_keys__}
    assert result_problem(older) is None  # an older version wrote fewer fields
    assert result_problem({**older, "judge": 3}) == "lacks the text field 'judge'"
    assert result_problem({**older, "phases": [{"response": "r"}]}) == (
        "has a 'phases' list whose phases lack a phase_idx"
    )
    assert result_problem({**older, "ptf": {"alignment": 1}}) == "has a 'ptf' without its number"


def test_the_reader_skips_a_torn_line_and_names_a_bad_record(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _write(out, _record("p1"), _record("p2"), '{"probe_id": "p3", "mo')
    assert [r["probe_id"] for r in read_results(out)] == ["p1", "p2"]
    path = _write(out, _record("p1"), {**_record("p2"), "mode": None})
    with pytest.raises(InputError, match=rf"{path}: result 2 \(p2\) lacks the text field 'mode'"):
        read_results(out)


def test_a_missing_or_empty_file_is_an_error_unless_a_run_has_not_started(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(InputError, match="no results.jsonl in"):
        read_results(out)
    assert read_results(out, missing_ok=True) == []
    _write(out)
    with pytest.raises(InputError, match="holds no results"):
        read_results(out)
    assert read_results(out, missing_ok=True) == []


def test_a_rerun_reads_results_as_the_report_does(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _write(out, _record("p1"))
    assert done_keys(out) == {unit_key("p1", "arc", "openai:m", "openai:j")}
    _write(out, _record("p1"), {**_record("p2"), "probe_type": 7})
    with pytest.raises(InputError, match=r"result 2 \(p2\) lacks the text field 'probe_type'"):
        done_keys(out)  # before any unit is run again, not at the report after the run
