"""ARCANE App. N: PTF perturbation builders, the sample, and the re-judge command."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import prepared_novel

from personae.cli import main
from personae.evals.arcane.perturb import (
    _ranks,
    parse_conditions,
    permutation,
    perturb,
    ptf_correlations,
    sample,
    summarize_perturb,
)
from personae.testing import ScriptedChatModel, override_models, prompt_text

BLOCKS = [(i, f"acts {i}", None, f"thinks {i}", f"answer {i}") for i in range(4)]


def test_orig_is_unchanged_and_reverse_reverses_responses_only() -> None:
    assert perturb(BLOCKS, "orig", "p") == BLOCKS
    reversed_ = perturb(BLOCKS, "reverse_response", "p")
    assert [b[:4] for b in reversed_] == [b[:4] for b in BLOCKS]  # references fixed
    assert [b[4] for b in reversed_] == ["answer 3", "answer 2", "answer 1", "answer 0"]


def test_shuffle_permutes_responses_across_fixed_references() -> None:
    for seed in ("p1", "p2", "p3", "p4"):
        shuffled = perturb(BLOCKS, "shuffle_response", seed)
        assert [b[:4] for b in shuffled] == [b[:4] for b in BLOCKS]
        responses = [b[4] for b in shuffled]
        assert sorted(responses) == [b[4] for b in BLOCKS]
        assert responses != [b[4] for b in BLOCKS]  # never the identity
        assert perturb(BLOCKS, "shuffle_response", seed) == shuffled  # seeded


def test_block_shuffle_keeps_pairs_and_changes_the_listing_order() -> None:
    for seed in ("p1", "p2", "p3"):
        moved = perturb(BLOCKS, "block_shuffle", seed)
        assert sorted(moved) == BLOCKS  # every (reference, response) pair intact
        assert [b[0] for b in moved] != [0, 1, 2, 3]
    assert permutation(1, "x") == [0] and sorted(permutation(2, "x")) == [0, 1]
    assert permutation(2, "x") == [1, 0]


def test_conditions_parse_with_orig_first() -> None:
    assert parse_conditions([]) == [
        "orig",
        "shuffle_response",
        "reverse_response",
        "block_shuffle",
    ]
    assert parse_conditions(["reverse,block"]) == ["orig", "reverse_response", "block_shuffle"]


def _row(probe: str, novel: str, phases: int = 3, mode: str = "arc") -> dict[str, Any]:
    return {
        "probe_id": probe,
        "probe_type": "in_world",
        "novel": novel,
        "model": "m",
        "mode": mode,
        "ptf": {"ptf": 50.0},
        "phases": [{"phase_idx": i, "response": "r"} for i in range(phases)],
    }


def test_sample_is_stratified_across_novels_and_needs_three_phases() -> None:
    rows = [_row(f"a{i}", "alpha") for i in range(6)] + [_row(f"b{i}", "beta") for i in range(2)]
    rows += [_row("short", "beta", phases=2), _row("vanilla", "beta", mode="vanilla")]
    rows.append({**_row("unjudged", "beta"), "ptf": None})
    chosen = sample(rows, "arc", 4)
    assert [r["novel"] for r in chosen] == ["alpha", "beta", "alpha", "beta"]
    assert len(sample(rows, "arc", 75)) == 8  # all eligible, never the short or unjudged ones
    assert sample(rows, "arc", 3) == sample(rows, "arc", 3)
    blind = {**_row("a0", "alpha"), "judge_include_thought": False}
    assert blind not in sample([*rows, blind], "arc", 75)  # each trajectory once per variant
    assert sample([*rows, blind], "arc", 75, include_thought=False) == [blind]


class PairJudge:
    """Role-play answers name their chapter; the trajectory judge reads pairs and order.

    Alignment is high when every response sits beside its own reference (phase k answers at
    chapter 2(k+1)); direction is high when the blocks are listed in phase order.
    """

    def text(self, messages: Any) -> str:
        prompt = prompt_text(messages)
        return "Ada answers " + prompt.split("chapter ")[1][:1]

    def phase(self, messages: Any) -> dict[str, Any]:
        return {"scores": {"apf": 70, "rpf": 60, "rae": 50}}

    def trajectory(self, messages: Any) -> dict[str, Any]:
        prompt = str(messages[-1].content)
        idx = [int(i) for i in re.findall(r"\[PHASE (\d+)\]", prompt)]
        answers = [int(a) for a in re.findall(r"model_response: Ada answers (\d)", prompt)]
        paired = all(a == 2 * (i + 1) for i, a in zip(idx, answers, strict=True))
        ordered = idx == sorted(idx)
        return {
            "scores": {
                "ptf_alignment": 90 if paired else 30,
                "ptf_direction": 80 if ordered else 40,
                "ptf_shape": 70,
            }
        }


@pytest.fixture
def pair_judge() -> Iterator[ScriptedChatModel]:
    script = PairJudge()
    responders: dict[str, Any] = {
        "text": script.text,
        "PhaseJudgement": script.phase,
        "TrajectoryJudgement": script.trajectory,
    }
    model = ScriptedChatModel(responders=responders)
    with override_models(model):
        yield model


def _perturb(data: Path, out: Path, *extra: str) -> int:
    return main(["arcane", "eval-perturb", str(out), "--data", str(data), *extra])


def test_rejudge_writes_table_8_deltas_and_resumes(
    tmp_path: Path, pair_judge: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_novel(tmp_path)
    out = tmp_path / "run"
    argv = ["arcane", "eval", "the_river", "--data", str(tmp_path), "--out", str(out)]
    assert main([*argv, "--modes", "arc", "--model", "openai:actor"]) == 0
    pair_judge.calls.clear()
    assert _perturb(tmp_path, out, "--model", "openai:actor") == 0
    rows = [json.loads(x) for x in (out / "perturb.jsonl").read_text().splitlines()]
    assert {r["condition"] for r in rows} == {
        "orig",
        "shuffle_response",
        "reverse_response",
        "block_shuffle",
    }
    # orig is a fresh call (test-retest), not the main run's cached answer: 4 calls, not 3
    assert len(pair_judge.calls_for("TrajectoryJudgement")) == 4
    by = {r["condition"]: r for r in rows}
    assert by["reverse_response"]["responses_from"] == [2, 1, 0]
    assert by["reverse_response"]["listing"] == [0, 1, 2]
    assert sorted(by["block_shuffle"]["listing"]) == [0, 1, 2]
    assert by["block_shuffle"]["listing"] == by["block_shuffle"]["responses_from"]
    table = {
        t["condition"]: t for t in json.loads((out / "perturb.json").read_text())["conditions"]
    }
    assert table["orig"]["ptf"] == 80.0 and table["orig"]["retest_delta"] == 0.0
    assert table["shuffle_response"]["delta"]["ptf_alignment"] == -60.0
    assert table["shuffle_response"]["delta"]["ptf_direction"] == 0.0
    assert table["block_shuffle"]["delta"] == {
        "ptf_alignment": 0.0,
        "ptf_direction": -40.0,
        "ptf_shape": 0.0,
        "ptf": -13.33,
    }
    [cell] = json.loads((out / "perturb.json").read_text())["ptf_vs_per_phase"]
    assert cell["mode"] == "arc" and cell["probes"] == 1 and cell["pearson"] is None
    report = (out / "perturb.md").read_text()
    assert "PTF vs per-phase average" in report
    assert "| Δ reverse_response | 1 | -60.0 | +0.0 | +0.0 | -20.0 |" in report
    pair_judge.calls.clear()
    assert _perturb(tmp_path, out, "--model", "openai:actor") == 0
    assert pair_judge.calls == []  # everything judged: a rerun costs nothing


def test_summary_pairs_deltas_only_over_probes_judged_in_both() -> None:
    def row(probe: str, condition: str, align: int) -> dict[str, Any]:
        scores = {"ptf_alignment": align, "ptf_direction": 50, "ptf_shape": 50}
        return {
            "probe_id": probe,
            "model": "m",
            "mode": "arc",
            "judge": "j",
            "condition": condition,
            "scores": scores,
            "ptf": round((align + 100) / 3, 2),
        }

    rows = [row("a", "orig", 80), row("b", "orig", 60), row("a", "reverse_response", 20)]
    rows.append(row("c", "reverse_response", 10))
    blind = {**row("a", "orig", 10), "include_thought": False}
    assert [t["judge"] for t in summarize_perturb([*rows, blind])][-1] == "j [no-thought]"
    reverse = next(t for t in summarize_perturb(rows) if t["condition"] == "reverse_response")
    assert reverse["paired"] == 1 and reverse["delta"]["ptf_alignment"] == -60.0
    assert reverse["probes"] == 2 and reverse["ptf_alignment"] == 15.0


@pytest.mark.parametrize(
    ("setup", "extra", "message"),
    [
        ("none", [], "no results.jsonl in"),
        ("results", ["--condition", "sideways"], "unknown condition 'sideways'"),
        ("results", ["--sample", "0"], "at least 1"),
        ("results", ["--mode", "vanilla"], "no vanilla-mode trajectory with 3+ judged phases"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    pair_judge: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
    setup: str,
    extra: list[str],
    message: str,
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    if setup == "results":
        (out / "results.jsonl").write_text(json.dumps(_row("p", "the_river")) + "\n")
    assert _perturb(tmp_path, out, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (out / "perturb.jsonl").exists() and not (out / "perturb.json").exists()


def test_ptf_vs_per_phase_correlations_pearson_and_spearman() -> None:
    assert _ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]

    def rec(probe: str, phase: float, ptf: float, mode: str = "arc") -> dict[str, Any]:
        scores = {"apf": phase, "rpf": phase, "rae": phase}
        return {
            "probe_id": probe,
            "model": "m",
            "mode": mode,
            "phases": [{"phase_idx": 0, "scores": scores}],
            "ptf": {"ptf": ptf},
        }

    rows = [rec("a", 10, 1), rec("b", 20, 4), rec("c", 30, 9), rec("d", 40, 16)]
    rows += [rec("x", 10, 5, "rag"), rec("y", 20, 6, "rag")]
    [arc, rag] = ptf_correlations(rows)
    assert arc["probes"] == 4 and arc["spearman"] == 1.0  # monotone
    assert 0.95 < arc["pearson"] < 1.0  # but not linear
    assert rag["pearson"] is None and rag["spearman"] is None  # two probes: undefined
