"""ARCANE evaluation: Table 2 arithmetic, judge prompts, resumable results, reports, bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import imported_novel, prepared_novel, probe_record

from personae.agents.arcane.judges import TrajectoryJudgement, phase_judgement_schema
from personae.cli import main
from personae.evals.arcane.metrics import CATEGORIES, METRICS, overall, probe_scores, summarize
from personae.evals.arcane.report import render
from personae.memory.arcane.records import write_jsonl_atomic
from personae.testing import ScriptedChatModel, override_models, prompt_text

# The paper's Table 2 (validated slice): 12 cells (IS, IW, OW x APF, RPF, RAE, PTF) and Overall.
TABLE_2 = """
59.8 59.3 52.1 53.8 56.7 56.9 48.8 45.4 54.8 55.4 46.8 44.5 52.9
64.1 63.0 56.4 59.6 57.8 58.1 49.4 49.4 57.2 57.6 49.0 47.7 55.8
66.3 64.7 59.1 60.9 56.6 57.1 48.0 47.8 54.0 54.8 45.2 44.2 54.9
66.3 64.7 59.1 61.7 57.4 57.8 48.6 49.5 56.8 57.0 48.2 46.5 56.1
60.8 60.2 53.2 55.6 56.2 56.6 48.4 46.8 54.5 55.2 46.3 43.5 53.1
66.8 65.8 59.2 62.1 61.8 61.9 53.8 55.3 62.2 62.0 54.5 51.4 59.7
61.3 60.2 53.4 56.1 54.2 54.9 46.1 45.5 53.4 54.1 45.2 44.0 52.4
67.1 65.6 60.2 61.4 59.7 59.5 51.8 51.2 57.1 57.4 48.8 46.5 57.2
68.1 66.1 61.8 63.0 57.6 57.6 49.2 50.5 55.7 56.1 47.6 47.0 56.7
69.1 66.9 63.0 64.0 59.1 58.9 51.1 50.9 56.7 56.8 48.7 47.6 57.7
60.4 59.5 53.1 54.8 54.9 55.4 46.9 46.7 53.0 53.7 44.8 42.5 52.1
69.5 67.7 62.8 65.1 64.2 63.6 57.0 58.2 64.1 63.7 57.0 55.8 62.4
43.0 42.8 32.7 38.2 40.5 41.0 30.8 30.6 41.4 42.4 32.1 30.6 37.2
47.2 45.4 36.5 41.7 42.1 41.9 32.1 31.6 41.7 41.9 31.7 30.3 38.7
53.0 51.0 43.2 44.6 43.0 43.1 33.1 31.6 42.2 42.7 32.8 30.3 40.9
50.9 48.9 40.8 42.4 42.6 42.3 32.1 31.4 42.3 42.2 32.1 30.0 39.8
43.1 43.1 33.3 36.5 41.6 42.2 32.0 30.6 41.8 42.8 32.7 29.4 37.4
50.1 48.5 39.2 42.1 47.5 47.3 37.3 36.6 47.4 47.5 37.4 36.0 43.1
49.7 48.6 39.4 43.4 48.6 48.6 38.8 35.8 48.6 48.6 39.2 35.0 43.7
54.8 53.6 45.2 46.7 49.5 49.3 39.2 36.0 48.5 48.7 38.9 36.6 45.6
59.4 57.3 50.8 49.2 49.6 49.9 40.0 38.6 48.3 48.7 39.0 36.1 47.2
58.3 56.6 49.1 50.5 50.6 50.5 40.9 40.3 48.4 48.6 38.8 36.3 47.4
51.3 50.4 41.3 45.4 48.9 49.1 39.5 36.4 48.4 48.9 39.3 34.4 44.4
57.4 55.6 47.4 51.6 54.1 53.7 44.3 41.0 54.8 54.3 45.4 41.7 50.1
47.8 46.9 38.3 41.9 48.2 47.5 39.0 37.4 47.4 46.8 38.5 36.3 43.0
56.5 55.0 47.7 49.7 49.4 48.8 40.0 40.3 50.3 49.6 41.2 38.3 47.2
61.4 59.5 54.4 53.0 48.8 48.8 40.0 39.6 49.6 49.4 41.2 36.3 48.5
58.2 56.2 50.1 50.5 49.1 48.6 40.1 39.3 50.3 49.9 41.7 37.9 47.6
49.3 48.2 40.2 43.0 47.8 47.3 38.8 38.9 47.7 47.4 39.3 36.5 43.7
59.5 57.7 50.6 56.0 60.9 59.3 52.3 54.6 62.5 60.5 54.5 54.6 56.9
53.6 53.2 44.9 45.0 55.1 55.1 46.7 41.7 56.5 56.2 48.6 41.5 49.9
57.0 55.8 48.4 49.5 53.2 52.6 44.0 44.3 51.9 51.6 42.6 40.6 49.3
65.8 63.5 59.2 55.8 52.9 52.9 43.8 41.9 51.6 51.8 42.9 41.6 52.0
62.1 60.2 54.6 53.6 54.9 54.2 45.8 44.3 54.4 53.9 45.3 41.1 52.0
53.7 53.2 44.8 46.9 55.6 55.0 47.5 41.8 56.4 56.1 48.7 39.6 49.9
59.4 58.0 50.9 53.4 66.2 64.2 58.8 58.5 68.0 65.7 61.6 59.8 60.4
"""


def test_overall_reproduces_all_36_rows_of_table_2() -> None:
    rows = [list(map(float, line.split())) for line in TABLE_2.strip().splitlines()]
    assert len(rows) == 36
    keys = [(c, m) for c in CATEGORIES for m in METRICS]
    for row in rows:
        value = overall(dict(zip(keys, row[:12], strict=True)))
        assert value is not None and abs(value - row[12]) <= 0.06, row


def _record(
    kind: str,
    mode: str,
    phases: list[tuple[int, int, int] | None],
    ptf: float | None,
    probe: str = "p1",
) -> dict[str, Any]:
    return {
        "probe_id": probe,
        "probe_type": kind,
        "mode": mode,
        "model": "m",
        "phases": [
            {
                "phase_idx": i,
                "scores": None
                if scores is None
                else dict(zip(("apf", "rpf", "rae"), scores, strict=True)),
            }
            for i, scores in enumerate(phases)
        ],
        "ptf": None if ptf is None else {"ptf": ptf},
    }


def test_probe_level_means_and_missing_counts() -> None:
    one = _record("in_world", "arc", [(60, 40, 20), (80, 60, 40)], 50.0)
    assert probe_scores(one) == {"apf": 70, "rpf": 50, "rae": 30, "ptf": 50.0}
    two = _record("in_world", "arc", [(10, 10, 10)], None, probe="p2")
    three = _record("in_world", "arc", [(30, 30, 30), None], None, probe="p3")
    summary = summarize([one, two, three])
    row = summary["rows"][0]
    assert row["cells"]["in_world.apf"] == 36.67  # mean of probe means 70, 10 and 30
    assert row["cells"]["in_world.ptf"] == 50.0
    # apart: p3's PTF and one phase missing after 3 attempts; p2's PTF undefined (one phase)
    assert (row["missing_phase_judgements"], row["missing_ptf"], row["undefined_ptf"]) == (1, 1, 1)
    assert row["overall"] is None  # two categories have no probes
    judged = TrajectoryJudgement.model_validate(
        {"scores": {"ptf_alignment": 50, "ptf_direction": 61, "ptf_shape": 70}, "average": 99}
    )
    assert judged.ptf() == 60.33


def test_table_2_rows_compare_the_judgements_every_mode_scored() -> None:
    """Arc's p2 judgements went missing: every mode's cells leave p2 out, own figures beside."""
    records = [
        _record("in_world", "arc", [(80, 80, 80), (60, 60, 60)], 70.0),
        _record("in_world", "arc", [None, None], None, probe="p2"),
        _record("in_world", "vanilla", [(40, 40, 40), (20, 20, 20)], 30.0),
        _record("in_world", "vanilla", [(90, 90, 90), (90, 90, 90)], 90.0, probe="p2"),
        {**_record("in_world", "vanilla", [(1, 1, 1)], None), "judge_include_thought": False},
    ]
    rows = {r["mode"]: r for r in summarize(records)["rows"]}
    arc, vanilla = rows["arc"], rows["vanilla"]
    assert (
        arc["cells"]
        == arc["own_cells"]
        == {
            "in_world.apf": 70.0,
            "in_world.ptf": 70.0,
            "in_world.rae": 70.0,
            "in_world.rpf": 70.0,
        }
    )
    assert vanilla["cells"]["in_world.apf"] == 30.0 and vanilla["cells"]["in_world.ptf"] == 30.0
    assert vanilla["own_cells"]["in_world.apf"] == 60.0  # p1 30 and p2 90, beside the table
    assert (vanilla["judgements_shared"], vanilla["judgements_scored"]) == (3, 6)
    assert (arc["missing_phase_judgements"], arc["missing_ptf"], arc["undefined_ptf"]) == (2, 1, 0)
    # a judge setting of its own is compared with its own kind only: nothing left out there
    assert rows["vanilla [no-thought]"]["cells"]["in_world.apf"] == 1.0


def test_the_report_counts_missing_and_undefined_apart_and_shows_own_figures() -> None:
    records = [
        _record("in_world", "arc", [(80, 80, 80), None], None),  # 1 phase and PTF missing
        _record("in_world", "arc", [(50, 50, 50)], None, probe="p2"),  # PTF undefined
        _record("in_world", "vanilla", [(40, 40, 40), (20, 20, 20)], 30.0),
        _record("in_world", "vanilla", [(100, 100, 100)], None, probe="p2"),
    ]
    markdown, page = render(summarize(records), "ARCANE evaluation")
    assert (
        "Judgements missing after 3 attempts: 1 phase judgement(s) (T35), 1 trajectory "
        "judgement(s) (T36). PTF undefined (fewer than 2 available phases, not a failure): "
        "2 probe run(s)."
    ) in markdown
    # the table compares p1's first phase and p2: vanilla (40 + 100) / 2, arc (80 + 50) / 2
    table = markdown.split("## Fidelity along the phases")[0]
    assert "| m | vanilla | – | – | – | – | **70.0** | **70.0** | **70.0** |" in table
    assert "| m | arc | – | – | – | – | 65.0 | 65.0 | 65.0 | – |" in table
    # beside it, each mode's own: vanilla's p1 is (40 + 20) / 2, so (30 + 100) / 2
    own = markdown.split("## Each mode over every judgement it scored")[1]
    assert "| m | vanilla | – | – | – | – | 65.0 | 65.0 | 65.0 | 30.0 |" in own
    assert "| – | 2 | 1 | 1 | 1 |" in own  # arc: scored, missing phase, missing PTF, undefined
    assert "| – | 4 | 0 | 0 | 1 |" in own  # vanilla
    assert "Each mode over every judgement it scored" in page
    summary = summarize(records)
    for row in summary["rows"]:  # a summary.json written before these counts
        del row["undefined_ptf"], row["judgements_scored"]
    older, _ = render(summary, "ARCANE evaluation")
    assert "| – | – | 1 | 1 | – |" in older.split("## Each mode over every judgement")[1]


class Judge:
    """Scripted answers for role-play, experts and both judges."""

    def __init__(self) -> None:
        self.interrupt_after: int | None = None
        self.phase_calls = 0
        self.bad_scores = False

    def responders(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "PhaseJudgement": self.phase,
            "TrajectoryJudgement": self.trajectory,
        }

    def text(self, messages: Any) -> str:
        prompt = prompt_text(messages)
        if "Chapter: N" in prompt:
            return "Chapter: unknown"
        if "Presence: present" in prompt:
            return "Presence: present"
        grounded = " with her arc" if "<context>" in prompt else ""
        return "Ada answers " + prompt.split("chapter ")[1][:1] + grounded

    def phase(self, messages: Any) -> dict[str, Any]:
        self.phase_calls += 1
        if self.interrupt_after is not None and self.phase_calls > self.interrupt_after:
            raise KeyboardInterrupt
        score = 500 if self.bad_scores else 70
        return {"scores": {"apf": score, "rpf": 60, "rae": 50}}

    def trajectory(self, messages: Any) -> dict[str, Any]:
        return {
            "scores": {"ptf_alignment": 40, "ptf_direction": 50, "ptf_shape": 60},
            "average": 12.0,
        }


@pytest.fixture
def judge() -> Iterator[tuple[Judge, ScriptedChatModel]]:
    script = Judge()
    model = ScriptedChatModel(responders=script.responders())
    with override_models(model):
        yield script, model


def _eval(data: Path, out: Path, *extra: str) -> int:
    argv = ["arcane", "eval", "the_river", "--data", str(data), "--out", str(out)]
    return main([*argv, "--model", "openai:actor", "--judge-model", "openai:judge", *extra])


def test_eval_writes_results_summary_and_report_and_resumes(
    tmp_path: Path, judge: tuple[Judge, ScriptedChatModel], capsys: pytest.CaptureFixture[str]
) -> None:
    script, model = judge
    prepared_novel(tmp_path)
    out = tmp_path / "run"
    script.interrupt_after = 3  # killed while judging the second unit
    assert _eval(tmp_path, out, "--modes", "vanilla,arc", "--concurrency", "1") == 130
    first = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(first) == 1
    script.interrupt_after = None
    model.calls.clear()
    assert _eval(tmp_path, out, "--modes", "vanilla,arc", "--concurrency", "1") == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["mode"] for r in rows} == {"vanilla", "arc"}
    assert len(model.calls_for("TrajectoryJudgement")) == 1  # the finished unit was not redone
    unit = rows[1]
    assert [p["query_chapter"] for p in unit["phases"]] == [2, 4, 6]
    assert unit["ptf"]["ptf"] == 50.0 and unit["ptf"]["average_disagrees"] is True
    summary = json.loads((out / "summary.json").read_text())
    arc = next(r for r in summary["rows"] if r["mode"] == "arc")
    assert arc["cells"]["in_world.apf"] == 70.0 and arc["cells"]["in_world.ptf"] == 50.0
    report = (out / "report.md").read_text()
    assert "IW-APF" in report and "<svg" in report and (out / "report.html").is_file()
    model.calls.clear()
    assert _eval(tmp_path, out, "--modes", "vanilla,arc") == 0
    assert model.calls == []  # everything done: a rerun costs nothing


def test_unavailable_phase_is_omitted_with_its_index_kept(
    tmp_path: Path, judge: tuple[Judge, ScriptedChatModel]
) -> None:
    _, model = judge
    novel = prepared_novel(tmp_path)
    probe = probe_record()
    probe.phase_responses[1].unavailable = True
    write_jsonl_atomic(novel.folder / "probes.jsonl", [probe])
    assert _eval(tmp_path, tmp_path / "run", "--modes", "timechara") == 0
    [prompt] = [prompt_text(m) for m in model.calls_for("TrajectoryJudgement")]
    assert "[PHASE 0]" in prompt and "[PHASE 2]" in prompt and "[PHASE 1]" not in prompt
    assert "ref_thought: thinks 2" in prompt
    assert len(model.calls_for("PhaseJudgement")) == 2


def test_out_of_range_scores_are_reasked_then_missing(
    tmp_path: Path, judge: tuple[Judge, ScriptedChatModel], capsys: pytest.CaptureFixture[str]
) -> None:
    script, model = judge
    script.bad_scores = True
    prepared_novel(tmp_path)
    argv = ["--modes", "vanilla", "--no-thought", "--max-failures", "100%"]
    assert _eval(tmp_path, tmp_path / "run", *argv) == 0
    assert "degraded: 3 (judgments_missing 3)\n" in capsys.readouterr().err
    assert len(model.calls_for("PhaseJudgement")) == 3 * 3  # 3 phases x 3 attempts
    bounds = phase_judgement_schema(100).model_json_schema()["$defs"]["PhaseScores"]
    assert bounds["properties"]["apf"]["maximum"] == 100  # the scale, in the schema
    [row] = [json.loads(x) for x in (tmp_path / "run/results.jsonl").read_text().splitlines()]
    assert all(p["scores"] is None for p in row["phases"])
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert summary["rows"][0]["missing_phase_judgements"] == 3
    assert "ref_thought:" not in str(model.calls_for("PhaseJudgement")[0][-1].content)


def test_more_missing_judgments_than_allowed_stop_the_run(
    tmp_path: Path, judge: tuple[Judge, ScriptedChatModel], capsys: pytest.CaptureFixture[str]
) -> None:
    script, _ = judge
    script.bad_scores = True
    prepared_novel(tmp_path)
    assert _eval(tmp_path, tmp_path / "run", "--modes", "vanilla", "--no-thought") == 3
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("personae: error: stopped: 3 of 4 judgments degraded")
    assert len((tmp_path / "run/results.jsonl").read_text().splitlines()) == 1  # kept


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--modes", "vanilla,oracle"], "unknown mode 'oracle'"),
        (["--limit", "0"], "at least 1"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    judge: tuple[Judge, ScriptedChatModel],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    prepared_novel(tmp_path)
    assert _eval(tmp_path, tmp_path / "run", *extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_probes_missing_says_which_command_to_run(
    tmp_path: Path, judge: tuple[Judge, ScriptedChatModel], capsys: pytest.CaptureFixture[str]
) -> None:
    imported_novel(tmp_path)
    assert _eval(tmp_path, tmp_path / "run") == 2
    assert "personae arcane build-probes the_river" in capsys.readouterr().err
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_arc_gap_per_category_against_the_best_other_mode() -> None:
    records = []
    for mode, score in (("arc", 70), ("rag", 60), ("vanilla", 40)):
        for kind in CATEGORIES:
            records.append(_record(kind, mode, [(score, score, score)], score - 10.0))
    gaps = summarize(records)["arc_gaps"]
    assert gaps[0]["best_other_mode"] == "rag" and gaps[0]["gap"] == 10.0
    assert gaps[0]["per_category"]["in_world"] == {"overall": 10.0, "ptf": 10.0, "per_phase": 10.0}


def _results(out: Path) -> None:
    """Saved results of two novels: Arc leads by 10 on the first and trails by 5 on the second."""
    records = []
    for novel, arc in (("the_river", 70), ("the_hill", 55)):
        for mode, score in (("arc", arc), ("rag", 60)):
            for kind in CATEGORIES:
                record = _record(kind, mode, [(score, score, score)], float(score))
                records.append({**record, "novel": novel})
    out.mkdir(parents=True)
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_arcane_report_rebuilds_the_report_with_a_per_novel_breakdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    _results(out)
    assert main(["arcane", "eval-report", str(out), "--per-novel"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [r["overall"] for r in summary["rows"] if r["mode"] == "arc"] == [62.5]
    river, hill = summary["per_novel"]["the_river"], summary["per_novel"]["the_hill"]
    assert river["arc_gaps"][0]["gap"] == 10.0 and hill["arc_gaps"][0]["gap"] == -5.0
    report = (out / "report.md").read_text()
    assert "## Per novel" in report and "### the_hill" in report and "### the_river" in report
    assert "Arc -5.0 vs best other mode (rag)" in report
    assert "<h3>the_river</h3>" in (out / "report.html").read_text()
    assert "IS-APF" in capsys.readouterr().out


def test_arcane_report_without_results_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for target in (tmp_path / "absent", tmp_path):
        assert main(["arcane", "eval-report", str(target)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "personae arcane eval" in err
    assert list(tmp_path.iterdir()) == []


def test_a_probe_with_every_phase_unavailable_is_dropped_and_counted(
    tmp_path: Path, judge: tuple[Judge, ScriptedChatModel]
) -> None:
    _, model = judge
    novel = prepared_novel(tmp_path)
    empty = probe_record().model_copy(update={"probe_id": "the_river_ada_final_intra_01_iw_a2"})
    for phase in empty.phase_responses:
        phase.unavailable = True
    write_jsonl_atomic(novel.folder / "probes.jsonl", [probe_record(), empty])
    out = tmp_path / "run"
    assert _eval(tmp_path, out, "--modes", "vanilla") == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["probe_id"] for r in rows] == ["the_river_ada_final_intra_01_iw_a1"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dropped_probes"] == ["the_river_ada_final_intra_01_iw_a2"]
    assert (
        "Probes dropped, every phase unavailable (no judge score): 1."
        in (out / "report.md").read_text()
    )
    assert _eval(tmp_path, out, "--modes", "vanilla") == 0  # counted once, not per run
    assert (
        json.loads((out / "summary.json").read_text())["dropped_probes"]
        == summary["dropped_probes"]
    )


def test_vanilla_and_timechara_without_a_hint_never_share_an_answer_or_a_verdict(
    tmp_path: Path, judge: tuple[Judge, ScriptedChatModel]
) -> None:
    """The two modes send the same role-play prompt: each is its own sample and verdict."""
    _, model = judge
    prepared_novel(tmp_path)
    assert _eval(tmp_path, tmp_path / "run", "--modes", "vanilla,timechara") == 0
    plays = [
        m
        for m in model.calls_for("text")
        if "Chapter: N" not in prompt_text(m) and "Presence: present" not in prompt_text(m)
    ]
    assert len(plays) == 6  # 3 phases x 2 modes, none answered from the other mode's entry
    assert len(model.calls_for("PhaseJudgement")) == 6
    assert len(model.calls_for("TrajectoryJudgement")) == 2


def test_the_judge_defaults_to_the_papers_not_the_model_under_test() -> None:
    from personae.evals.arcane.eval_graph import DEFAULT_JUDGE, ArcaneEvalContext

    context = ArcaneEvalContext(model="openai:qwen3-8b")
    assert context.judge_model == DEFAULT_JUDGE == "openai:deepseek/deepseek-v4-flash"
    assert context.sampling("judge") == {"temperature": 0.0}
    assert context.sampling("strong") == {}  # role-play at the server's default
    assert ArcaneEvalContext(model="openai:x", temperature="0.7").sampling("judge") == {
        "temperature": 0.7
    }
