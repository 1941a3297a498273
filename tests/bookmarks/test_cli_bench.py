from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bookmarks_bench_world as world
import pytest
from bookmarks_bench_world import scripted_model, write_storyline
from langchain_core.messages import BaseMessage

from personae.cli import main
from personae.evals.bookmarks.bench import METHODS, MethodSpec
from personae.llm import NO_MODEL_HINT
from personae.testing import override_models

MODELS = [
    "--model",
    "openai:t",
    "--fast-model",
    "openai:t",
    "--judge-model",
    "openai:t",
]


@pytest.fixture(autouse=True)
def _world(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The stub stands in for the bookmarks agent so these tests exercise the CLI, not the agent.
    monkeypatch.setitem(METHODS, "bookmarks", MethodSpec("bookmarks_bench_world", "StubContext"))
    override_models(specs={"openai:t": scripted_model()})
    world.CALLS.clear()
    yield


def _bench(story: Path, out: Path, *extra: str) -> int:
    return main(["bookmarks", "bench", str(story), "--out", str(out), *MODELS, *extra])


def _one_line_error(err: str) -> str:
    """The error line: stderr's last, after the cost estimate and the progress lines (stderr
    is not a terminal here: a log, which gets a line per instance)."""
    lines = err.splitlines(keepends=True)
    before = [line for line in lines[:-1] if not line.startswith("personae: bench")]
    assert all(line.startswith("personae: estimated: ") for line in before), err
    assert lines[-1].startswith("personae: error: ") and "Traceback" not in err, err
    return lines[-1]


def test_two_methods_end_to_end_then_a_resumed_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story, out = write_storyline(tmp_path / "tiny.jsonl"), tmp_path / "bench"
    assert _bench(story, out, "--method", "vanilla,bookmarks", "--limit", "2") == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "personae: bench: 8 instances to run\n" in captured.err  # the log's progress
    assert "personae: bench 8/8: " in captured.err
    assert "| Fandom | tiny | Avg. |" in printed
    assert "| vanilla | 50.00 | 50.00 |" in printed and "| bookmarks | 50.00 | 50.00 |" in printed
    assert "Pooled (instances)" in printed
    assert "8 instances run, 0 already done" in printed
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted({r["method"] for r in records}) == ["bookmarks", "vanilla"] and len(records) == 8
    assert records[0]["model"] == "openai:t"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["artifacts"]["tiny"]["bookmarks"]["hit_rate"] == pytest.approx(4 / 8)
    assert "<svg" in (out / "report.md").read_text() and "<svg" in (out / "report.html").read_text()
    assert (out / "memory/bookmarks/stub-Alice.json").is_file()  # default memory: OUT/memory
    assert list((tmp_path / "cache/judge").rglob("*.json"))  # verdicts in PERSONAE_CACHE_DIR

    assert _bench(story, out, "--method", "vanilla", "--method", "bookmarks", "--limit", "2") == 0
    assert "0 instances run, 8 already done" in capsys.readouterr().out
    assert len((out / "results.jsonl").read_text().splitlines()) == 8

    # another folder: the methods run again, the verdicts come from the shared cache
    model = scripted_model()
    override_models(specs={"openai:t": model})
    assert _bench(story, tmp_path / "again", "--method", "vanilla", "--limit", "2") == 0
    assert len(model.calls_for("NextAction")) == 4 and model.calls_for("KeyMoveVerdict") == []


def test_memory_folder_and_character_filter(tmp_path: Path) -> None:
    story, out, memory = write_storyline(tmp_path / "tiny.jsonl"), tmp_path / "b", tmp_path / "m"
    code = _bench(
        story,
        out,
        "--method",
        "bookmarks",
        "--characters",
        "Bob",
        "--limit",
        "1",
        "--memory",
        str(memory),
        "--judge-method",
        "nli",
    )
    assert code == 0
    assert (memory / "bookmarks/stub-Bob.json").is_file() and not (out / "memory").exists()
    [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert (record["character"], record["position"], record["judge"]) == ("Bob", 19, "nli")
    assert record["label"] == "neutral" and record["score"] == 50


def test_a_crash_exits_3_in_one_line_and_a_rerun_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story, out = write_storyline(tmp_path / "tiny.jsonl"), tmp_path / "bench"
    override_models(specs={"openai:t": scripted_model(fail_after=3)})
    assert _bench(story, out, "--method", "vanilla", "--concurrency", "1") == 3
    assert "the LLM server went away" in _one_line_error(capsys.readouterr().err)
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
    override_models(specs={"openai:t": scripted_model()})
    assert _bench(story, out, "--method", "vanilla") == 0
    # The step that crashed resumes from its checkpoint (personae.graphs.bookmarks.step_checkpoints).
    assert (
        "11 instances run (1 interrupted step resumed), 3 already done" in capsys.readouterr().out
    )


def _blank_action_at(position: int) -> Any:
    """A model whose actor answers a blank action (invalid even retried) at ``position``."""
    model = scripted_model()
    actor = model.responders["NextAction"]

    def blank_there(messages: list[BaseMessage]) -> Any:
        return {"action": "  "} if world._target(messages) == position else actor(messages)

    model.responders["NextAction"] = blank_there
    return model


def test_an_instance_still_invalid_is_recorded_as_failed_and_the_bench_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story, out = write_storyline(tmp_path / "tiny.jsonl"), tmp_path / "bench"
    override_models(specs={"openai:t": _blank_action_at(24)})
    code = _bench(story, out, "--method", "vanilla")  # 1 of 14: within the default 10 %
    captured = capsys.readouterr()
    assert code == 0
    assert "13 instances run, 0 already done" in captured.out
    assert "degraded: 1 (vanilla failed_instances 1)\n" in captured.err  # per method
    assert "vanilla tiny Alice at 24 failed (recorded, the bench goes on)" in captured.err
    failures = [json.loads(x) for x in (out / "failures.jsonl").read_text().splitlines()]
    assert [(f["character"], f["position"]) for f in failures] == [("Alice", 24)]
    assert "no valid action for Alice" in failures[0]["reason"]
    assert "\n" not in failures[0]["reason"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["instances"] == 13 and summary["failed"]["instances"] == 1
    assert "**Degraded:** 1 instance(s) failed" in (out / "report.md").read_text()
    override_models(specs={"openai:t": scripted_model()})  # a rerun retries the failed one
    assert _bench(story, out, "--method", "vanilla") == 0
    rerun = capsys.readouterr().out
    assert "1 instances run" in rerun and "13 already done" in rerun, rerun[-300:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["instances"] == 14 and summary["failed"]["instances"] == 0


def test_more_failures_than_max_failures_stop_the_bench_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story, out = write_storyline(tmp_path / "tiny.jsonl"), tmp_path / "bench"
    model = scripted_model()
    model.responders["KeyMoveVerdict"] = lambda messages: "I cannot judge."
    override_models(specs={"openai:t": model})
    code = _bench(story, out, "--method", "vanilla", "--concurrency", "1")
    err = _one_line_error(capsys.readouterr().err.splitlines()[-1] + "\n")
    assert code == 3
    assert "stopped: 2 of 14 bench instances degraded, more than --max-failures 10% (1)" in err
    assert len((out / "failures.jsonl").read_text().splitlines()) == 2
    assert not (out / "results.jsonl").exists()
    assert len(model.calls_for("KeyMoveVerdict")) == 2 * 3  # no instance started after it


def test_every_instance_failing_is_the_one_line_nothing_usable_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story, out = write_storyline(tmp_path / "tiny.jsonl"), tmp_path / "bench"
    model = scripted_model()
    model.responders["NextAction"] = lambda messages: {"action": ""}
    override_models(specs={"openai:t": model})
    code = _bench(story, out, "--method", "vanilla", "--max-failures", "100%")
    err = _one_line_error(capsys.readouterr().err.splitlines()[-1] + "\n")
    assert code == 3
    assert err.startswith("personae: error: nothing usable left: every one of the 14 bench ")
    assert not (out / "summary.json").exists()


def test_no_llm_configured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    story = write_storyline(tmp_path / "tiny.jsonl")
    code = main(["bookmarks", "bench", str(story), "--out", str(tmp_path / "b")])
    assert code == 2
    assert NO_MODEL_HINT in _one_line_error(capsys.readouterr().err)
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("setup", "extra", "message"),
    [
        ("missing", [], "does not exist; check the path"),
        ("malformed", [], "is not valid JSON"),
        (
            "tiny",
            ["--characters", "Zed"],
            "unknown character 'Zed' in tiny; pick one of: Alice, Bob",
        ),
        ("tiny", ["--method", "magic"], "unknown method 'magic'; use one of:"),
        ("tiny", ["--method", "bookmarks+magic"], "unknown ablation 'magic' in 'bookmarks+magic'"),
        ("tiny", ["--method", "vanilla+no-derive"], "method 'vanilla' has no ablations"),
        ("unlisted", [], "'unlisted' has no major-character list"),
        ("tiny", ["--limit", "0"], "--limit must be at least 1"),
        ("tiny", ["--judge-method", "bleu"], "unknown judge 'bleu'"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, extra: list[str], message: str
) -> None:
    story = tmp_path / "story.json"
    if setup == "tiny":
        story = write_storyline(tmp_path / "tiny.jsonl")
    elif setup == "unlisted":
        story = write_storyline(tmp_path / "unlisted.jsonl", majors=[])
    elif setup == "malformed":
        story.write_text('{"chapter 1": [{"action": "A runs", "character": "A"},')
    out = tmp_path / "bench"
    assert _bench(story, out, *extra) == 2
    assert message in _one_line_error(capsys.readouterr().err)
    assert not out.exists() and world.CALLS == []


def test_shared_storyline_with_vanilla(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = shared_dir / "data/bookmarks/title2action_series.haruhi.json"
    assert _bench(story, tmp_path / "b", "--method", "vanilla", "--limit", "2") == 0
    records = [json.loads(x) for x in (tmp_path / "b/results.jsonl").read_text().splitlines()]
    assert sorted({r["character"] for r in records}) == sorted(
        ["Haruhi", "Kyon", "Nagato", "Koizumi", "Asahina"]
    )
    assert len(records) == 10 and all(r["artifact"] == "haruhi" for r in records)
    assert "| Fandom | haruhi | Avg. |" in capsys.readouterr().out


def test_a_second_judge_says_it_rejudged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story, out = write_storyline(tmp_path / "tiny.jsonl"), tmp_path / "bench"
    assert _bench(story, out, "--method", "vanilla", "--limit", "1") == 0
    capsys.readouterr()
    assert _bench(story, out, "--method", "vanilla", "--limit", "1", "--judge-method", "nli") == 0
    printed = capsys.readouterr().out
    assert "2 instances run (2 re-judged from earlier predictions), 0 already done" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge"] == "nli" and summary["instances"] == 2


def test_the_cli_lists_every_ablation() -> None:
    from personae.commands.bookmarks.bench import ABLATION_NAMES
    from personae.evals.bookmarks.bench import ABLATIONS

    assert ABLATION_NAMES == tuple(ABLATIONS)


def test_a_failed_instance_leaves_every_method_s_table_row_and_each_method_s_own_figures_stay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Vanilla fails at 24, the stub does not: both rows cover the 13 shared (issue 26 §10)."""
    model = scripted_model()
    actor = model.responders["NextAction"]

    def vanilla_blank_at_24(messages: list[BaseMessage]) -> Any:
        vanilla = "read " not in str(messages[-1].content) + str(messages[0].content)
        return {"action": " "} if vanilla and world._target(messages) == 24 else actor(messages)

    model.responders["NextAction"] = vanilla_blank_at_24
    override_models(specs={"openai:t": model})
    story, out = write_storyline(tmp_path / "tiny.jsonl"), tmp_path / "bench"
    argv = ["--method", "vanilla,bookmarks", "--max-failures", "100%"]
    assert _bench(story, out, *argv) == 0
    captured = capsys.readouterr()
    assert "the 13 of 14 instances every method finished" in captured.out
    assert "degraded: 1 (vanilla failed_instances 1)\n" in captured.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["shared_instances"] == 13
    methods = summary["methods"]
    assert methods["vanilla"]["n"] == methods["bookmarks"]["n"] == 13
    assert (methods["vanilla"]["own"]["n"], methods["bookmarks"]["own"]["n"]) == (13, 14)
    own = captured.out.split("### Per method, over every instance it finished")[1]
    assert "| vanilla |" in own and "| 13 | 1 | 0 |" in own and "| 14 | 0 | 0 |" in own
