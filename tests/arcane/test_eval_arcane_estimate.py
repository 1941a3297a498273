"""`personae arcane eval` estimates its calls and tokens before its first call, within 15 %.

The real evaluation graph (role-play graph, judges, results.jsonl) over the scripted eval world:
four three-phase probes in the paper's six modes, answers of typical length. The estimate
counts what is left in ``results.jsonl``, so a rerun's counts only the units not done.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from arcane_world import eval_responders, eval_world, probe_record

from personae.cli import main
from personae.evals.arcane.costs import estimate_evaluation
from personae.evals.arcane.eval_graph import ArcaneEvalContext
from personae.memory.arcane.records import write_jsonl_atomic
from personae.runners.arcane_eval import EVAL_MODES, evaluate_arcane
from personae.testing import ScriptedChatModel, override_models


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responders=eval_responders())
    with override_models(scripted):
        yield scripted


def _eval(data: Path, *extra: str) -> int:
    argv = ["arcane", "eval", "the_river", "--data", str(data), "--out", str(data / "run")]
    argv += ["--model", "openai:actor", "--judge-model", "openai:judge", *extra]
    return main(argv)


def _estimated(err: str) -> tuple[int, int]:
    found = re.findall(r"^estimated: ([\d,]+) LLM calls, ~([\d,]+) tokens", err, re.M)
    assert len(found) == 1, err
    return int(found[0][0].replace(",", "")), int(found[0][1].replace(",", ""))


def _used(out: Path, skip: int = 0) -> tuple[int, int]:
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()][skip:]
    usage = [r["usage"] for r in rows]
    return (
        sum(u["llm_calls"] for u in usage),
        sum(u["input_tokens"] + u["output_tokens"] for u in usage),
    )


def test_the_estimate_is_within_15_percent_of_the_calls_and_tokens(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_world(tmp_path)
    code = _eval(tmp_path, "--also-model", "openai:other")
    err = capsys.readouterr().err
    assert code == 0, err
    calls, tokens = _estimated(err)
    made, used = _used(tmp_path / "run")
    # TimeChara: 2 experts a phase. Their prompts do not name the role-play model, so the second
    # model's expert call is served from the answer cache when the first one's answer has landed
    # (timing: up to 4 probes x 3 phases x 2 experts); the estimate counts every call.
    assert made == len(model.calls)
    assert 2 * 4 * (5 * 7 + 13) - 4 * 3 * 2 <= made <= 2 * 4 * (5 * 7 + 13)
    assert 0.85 <= calls / made <= 1.15, (calls, made)
    assert 0.85 <= tokens / used <= 1.15, (tokens, used)
    assert "(48 (probe, mode, model) units)" in err
    assert "role-play openai:actor, openai:other, judge openai:judge" in err
    assert err.index("estimated:") < err.index("• openai:actor")  # before the run


def test_a_rerun_estimates_only_the_units_left(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_world(tmp_path)
    assert _eval(tmp_path, "--modes", "vanilla,arc", "--limit", "1") == 0
    first = _estimated(capsys.readouterr().err)
    assert first[0] == 2 * 7
    model.calls.clear()
    assert _eval(tmp_path, "--modes", "vanilla,arc") == 0
    err = capsys.readouterr().err
    calls, tokens = _estimated(err)
    assert "(6 (probe, mode, model) units, 2 already done)" in err
    made, used = _used(tmp_path / "run", skip=2)
    assert calls == made == len(model.calls) == 6 * 7
    assert 0.85 <= tokens / used <= 1.15, (tokens, used)
    assert _eval(tmp_path, "--modes", "vanilla,arc") == 0
    assert _estimated(capsys.readouterr().err) == (0, 0)


def test_the_runner_reports_the_estimate_before_the_first_model_call(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    eval_world(tmp_path, probes=1)
    seen: list[tuple[str, int]] = []
    context = ArcaneEvalContext(
        data_dir=str(tmp_path), model="openai:actor", judge_model="openai:judge"
    )
    asyncio.run(
        evaluate_arcane(
            ["the_river"],
            context=context,
            modes=["vanilla"],
            out=tmp_path / "run",
            progress=lambda line: seen.append((line, len(model.calls))),
        )
    )
    assert seen[0][0].startswith("estimated: 7 LLM calls, ~") and seen[0][1] == 0
    assert seen[1][1] == 7


def test_calls_follow_the_phases_modes_and_judges(tmp_path: Path) -> None:
    """Per phase a role-play answer and a judgment (TimeChara: two experts more), per unit with
    two phases or more a trajectory judgment; unavailable phases cost nothing, and a block the
    run cannot build (no arcs: the run stops there) counts empty rather than failing."""
    novel = eval_world(tmp_path, probes=1)
    context = ArcaneEvalContext(
        data_dir=str(tmp_path), model="openai:actor", judge_model="openai:judge"
    )

    def calls(modes: list[str]) -> tuple[int, int]:
        found = estimate_evaluation(["the_river"], context=context, modes=modes, models=["m"])
        return found.calls, found.tokens

    assert calls(["vanilla"])[0] == 3 * 2 + 1
    assert calls(["timechara"])[0] == 3 * 4 + 1
    assert calls(list(EVAL_MODES))[0] == 5 * 7 + 13
    vanilla, arc, pov = calls(["vanilla"])[1], calls(["arc"])[1], calls(["pov"])[1]
    assert vanilla < arc < pov  # the arc block, then the POV paragraph besides
    assert calls(["rag"])[1] > vanilla and calls(["lifechoice"])[1] > calls(["summary"])[1]
    (novel.folder / "arcs.jsonl").unlink()
    assert calls(["arc"]) == calls(["vanilla"])
    probe = probe_record()
    probe.phase_responses[1].unavailable = True
    probe.phase_responses[2].unavailable = True
    write_jsonl_atomic(novel.folder / "probes.jsonl", [probe])
    assert calls(["vanilla"])[0] == 2  # one phase: no trajectory judgment
    assert not (tmp_path / "dropped_probes.jsonl").exists()
