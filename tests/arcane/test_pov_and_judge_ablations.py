"""ARCANE App. G (POV control, proposition coder), App. K's sample and App. F (no-thought judge)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import prepared_novel, probe_record

from personae.agents.arcane.judges import trajectory_judge_messages
from personae.agents.arcane.roleplayer import POV_PARAGRAPH
from personae.cli import main
from personae.evals.arcane.ablation import category_sample, pov_sample, table_5
from personae.graphs.arcane.roleplay import RoleplayContext, graph
from personae.memory.arcane.records import ProbeRecord
from personae.testing import ScriptedChatModel, override_models, prompt_text


class Script:
    """Role-play, both judges and the proposition coder."""

    def text(self, messages: Any) -> str:
        prompt = prompt_text(messages)
        voice = "I step forward" if "first person" in prompt else "Ada steps forward"
        return f"{voice} at chapter " + prompt.split("chapter ")[1][:1]

    def phase(self, messages: Any) -> dict[str, Any]:
        score = 40 if "I step forward" in prompt_text(messages) else 60
        return {"scores": {"apf": score, "rpf": score, "rae": score}}

    def trajectory(self, messages: Any) -> dict[str, Any]:
        return {"scores": {"ptf_alignment": 50, "ptf_direction": 50, "ptf_shape": 50}}

    def coder(self, messages: Any) -> dict[str, Any]:
        first_person = "I step forward" in prompt_text(messages)
        yes = {"answer": "yes", "reason": "r"}
        no = {"answer": "no", "reason": "r"}
        return {
            "p1": yes,
            "p2": no,
            "p3": {"answer": "na", "reason": "no silence in canon"},
            "p4": yes if first_person else no,
        }


@pytest.fixture
def scripted() -> Iterator[ScriptedChatModel]:
    script = Script()
    responders: dict[str, Any] = {
        "text": script.text,
        "PhaseJudgement": script.phase,
        "TrajectoryJudgement": script.trajectory,
        "PropositionCoding": script.coder,
    }
    model = ScriptedChatModel(responders=responders)
    with override_models(model):
        yield model


async def test_pov_prompt_is_the_arc_prompt_plus_the_paragraph(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    prepared_novel(tmp_path)
    context = RoleplayContext(data_dir=str(tmp_path), model="openai:scripted")
    request: Any = {"novel": "the_river", "probe_id": probe_record().probe_id, "phase_idx": 1}
    arc_request: Any = {**request, "mode": "arc"}
    pov_request: Any = {**request, "mode": "pov"}
    arc = await graph.ainvoke(arc_request, context=context)
    pov = await graph.ainvoke(pov_request, context=context)
    assert pov["system"] == arc["system"] + "\n\n" + POV_PARAGRAPH
    assert pov["user"] == arc["user"]
    assert POV_PARAGRAPH.startswith("Respond IN CHARACTER, in the first person, in the present")
    assert POV_PARAGRAPH.endswith("or any meta-analytic framing.")


def _record(probe: str, kind: str, model: str, score: float) -> dict[str, Any]:
    return {
        "probe_id": probe,
        "novel": "n",
        "probe_type": kind,
        "model": model,
        "mode": "arc",
        "phases": [{"phase_idx": 0, "scores": {"apf": score, "rpf": score, "rae": score}}],
        "ptf": {"ptf": score},
    }


def test_pov_sample_stratifies_by_category_and_sign_and_drops_ties() -> None:
    rows = []
    for i in range(8):
        for kind in ("in_world", "out_of_world"):
            rows.append(_record(f"{kind}{i}", kind, "base", 50))
            delta = (5, -5, 0.5, -1.0)[i % 4]  # positive, negative, tie, tie (|d| <= 1)
            rows.append(_record(f"{kind}{i}", kind, "other", 50 + delta))
    chosen = pov_sample(rows, "base", "other", per_cell=1)
    cells = [(c["probe_type"], c["sign"]) for c in chosen]
    assert cells == [
        ("in_world", "positive"),
        ("in_world", "negative"),
        ("out_of_world", "positive"),
        ("out_of_world", "negative"),
    ]
    everything = pov_sample(rows, "base", "other", per_cell=25)
    assert len(everything) == 8 and all(abs(c["delta"]) == 5 for c in everything)


def test_category_sample_round_robins_over_categories() -> None:
    def probe(i: int, kind: str) -> ProbeRecord:
        return probe_record().model_copy(update={"probe_id": f"p{kind}{i}", "probe_type": kind})

    probes = [probe(i, "in_world") for i in range(5)] + [probe(0, "out_of_world")]
    kinds = [p.probe_type for p in category_sample(probes, 4)]
    assert kinds == ["in_world", "out_of_world", "in_world", "in_world"]


def test_table_5_yes_rates_exclude_na() -> None:
    def coded(kind: str, label: str, p3: str) -> dict[str, Any]:
        answer = {"answer": "yes", "reason": ""}
        return {
            "probe_type": kind,
            "condition": label,
            "coding": {"p1": answer, "p2": answer, "p3": {"answer": p3}, "p4": answer},
        }

    rows = [
        coded("in_world", "A", "na"),
        coded("in_world", "A", "no"),
        coded("in_world", "A", "yes"),
    ]
    rates = table_5(rows)["yes_rates"]
    assert rates["p3"]["in_world"]["A"] == 50.0 and rates["p1"]["overall"]["A"] == 100.0
    assert rates["p1"]["out_of_world"]["A"] is None


def _eval(data: Path, out: Path, *extra: str) -> int:
    argv = ["arcane", "eval", "the_river", "--data", str(data), "--out", str(out)]
    return main([*argv, "--judge-model", "openai:judge", *extra])


def test_pov_control_regenerates_the_sample_and_codes_propositions(
    tmp_path: Path, scripted: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_novel(tmp_path)
    out = tmp_path / "run"
    assert _eval(tmp_path, out, "--modes", "arc", "--model", "openai:qwen") == 0
    results = out / "results.jsonl"
    [qwen] = [json.loads(x) for x in results.read_text().splitlines()]
    tuned = {**qwen, "model": "openai:tuned"}
    tuned["phases"] = [{**p, "scores": {"apf": 80, "rpf": 80, "rae": 80}} for p in tuned["phases"]]
    with results.open("a") as handle:
        handle.write(json.dumps(tuned) + "\n")
    scripted.calls.clear()
    pov = ["--ablation", "pov", "--model", "openai:qwen", "--compare-model", "openai:tuned"]
    capsys.readouterr()
    assert _eval(tmp_path, out, *pov) == 0
    estimated = re.search(r"estimated: (\d+) LLM calls, ~([\d,]+) tokens", capsys.readouterr().err)
    assert estimated, "the POV control prints its estimate before the first call"
    # 3 answers, 3 phase judgments, 1 trajectory, 3 codings: as many as the run then made
    assert int(estimated.group(1)) == len(scripted.calls)
    sent = [prompt_text(m) for m in scripted.calls_for("text")]
    assert len(sent) == 3 and all(POV_PARAGRAPH in s for s in sent)
    rows = [json.loads(x) for x in results.read_text().splitlines()]
    assert [r["mode"] for r in rows] == ["arc", "arc", "pov"]
    report = json.loads((out / "pov.json").read_text())
    assert report["sample"][0]["sign"] == "positive" and report["sample"][0]["delta"] == 15.0
    figures = {f["condition"]: f["overall"]["per_phase"] for f in report["figures"]}
    assert figures == {"openai:qwen": 60.0, "POV-openai:qwen": 40.0, "openai:tuned": 80.0}
    rates = report["propositions"]["yes_rates"]
    assert rates["p4"]["overall"] == {
        "openai:qwen": 0.0,
        "POV-openai:qwen": 100.0,
        "openai:tuned": 0.0,
    }
    assert rates["p3"]["overall"]["openai:qwen"] is None  # na only
    assert len(scripted.calls_for("PropositionCoding")) == 3
    # App. G's coder is the paper's pro-tier model, not the (flash) judge (issue 26 §12)
    assert report["propositions"]["coder"].startswith("openai:deepseek/deepseek-v4-pro")
    assert "P4 Phase register switch" in (out / "pov.md").read_text()
    scripted.calls.clear()
    assert _eval(tmp_path, out, *pov) == 0
    assert scripted.calls == []  # the sample was done and the coder is cached


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ablation", "pov", "--model", "openai:qwen"], "--ablation pov needs --compare-model"),
        (["--ablation", "sideways"], "unknown ablation 'sideways'"),
        (["--ablation", "archint", "--sample", "0"], "--sample must be at least 1"),
        (
            ["--ablation", "pov", "--model", "openai:qwen", "--compare-model", "openai:tuned"],
            "no results.jsonl in",
        ),
    ],
)
def test_ablation_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    scripted: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    prepared_novel(tmp_path)
    out = tmp_path / "run"
    assert _eval(tmp_path, out, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and scripted.calls == []


def test_archint_ablation_runs_vanilla_arc_and_the_ablation_on_the_sample(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    prepared_novel(tmp_path)
    out = tmp_path / "run"
    assert _eval(tmp_path, out, "--ablation", "archint", "--model", "openai:qwen") == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["mode"] for r in rows) == ["arc", "archint", "vanilla"]
    modes = {r["mode"] for r in json.loads((out / "summary.json").read_text())["rows"]}
    assert modes == {"arc", "archint", "vanilla"}


def test_no_thought_judge_drops_the_mention_and_is_reported_apart(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    blocks = [(0, "acts", None, "thinks", "r0"), (1, "acts", None, "thinks", "r1")]
    [system, user] = trajectory_judge_messages(
        scenario="s", question="q", phases=blocks, include_thought=False
    )
    assert "(ref_action / ref_speech)" in str(system.content)
    assert "ref_action / ref_speech / ref_thought" not in str(system.content)
    assert "infer the reference reasoning from ref_action and ref_speech alone" in str(
        system.content
    )
    assert "ptf_alignment -- Per-phase anchoring" in str(system.content)  # sub-checks unchanged
    assert "ref_thought:" not in str(user.content)
    prepared_novel(tmp_path)
    out = tmp_path / "run"
    assert _eval(tmp_path, out, "--modes", "arc", "--model", "openai:qwen") == 0
    assert _eval(tmp_path, out, "--modes", "arc", "--model", "openai:qwen", "--no-thought") == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["judge_include_thought"] for r in rows] == [True, False]  # not skipped as done
    summary = json.loads((out / "summary.json").read_text())
    assert {r["mode"] for r in summary["rows"]} == {"arc", "arc [no-thought]"}
