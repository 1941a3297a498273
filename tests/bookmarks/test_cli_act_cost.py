"""`personae bookmarks act` says what a step will cost before it pays, and stops cleanly at --max-calls.

On the scripted bookmarks world (tests/bookmarks_world.py) the estimate printed before a step
must be within 0.85-1.15 of the calls the step then makes, fresh and on a bank already synced,
for the paper's prompts and ours; a step stopped by ``--max-calls`` resumes on the rerun, which
asks again only the calls that were in flight at the stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookmarks_world import scripted_model_as, write_storyline
from cli_errors import assert_one_line_error

from personae.cli import main
from personae.testing import ScriptedChatModel

MODELS = ["--model", "openai:t", "--fast-model", "openai:t"]
ESTIMATE = re.compile(r"^personae: estimated: ([\d,]+) LLM calls", re.M)


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    with scripted_model_as("t") as scripted:
        yield scripted


def act(story: Path, memory: Path, at: int, *extra: str) -> list[str]:
    argv = ["bookmarks", "act", str(story), "--character", "Haruhi", "--at", str(at), "--json"]
    return [*argv, "--memory", str(memory), *MODELS, *extra]


@pytest.mark.parametrize("method", ["bookmarks", "bookmarks-personae"])
def test_the_estimate_printed_first_is_within_15_percent_of_the_calls(
    method: str, tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl", size=240)
    for at in (40, 200):  # a fresh bank, then one synced to 40
        assert main(act(story, tmp_path / "mem", at, "--method", method)) == 0
        captured = capsys.readouterr()
        found = ESTIMATE.search(captured.err)
        assert found, captured.err
        estimated = int(found.group(1).replace(",", ""))
        made = json.loads(captured.out)["stats"]["llm_calls"]
        assert 0.85 <= estimated / made <= 1.15, (at, estimated, made)
        assert made > 10  # a real step: proposal, syncs, the actor


def test_max_calls_stops_cleanly_and_the_rerun_reuses_what_was_paid(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl", size=120)
    whole = tmp_path / "whole"
    assert main(act(story, whole, 100)) == 0
    uncapped = len(model.calls)
    capsys.readouterr()
    model.calls.clear()
    argv = act(story, tmp_path / "mem", 100)
    assert main([*argv, "--max-calls", "5"]) == 3
    assert len(model.calls) == 5
    err = capsys.readouterr().err
    assert ESTIMATE.search(err)
    line = err.splitlines()[-1]
    assert line.startswith("personae: error: stopped at --max-calls 5: the step is kept in ")
    assert "rerun to continue" in line and "Traceback" not in err
    assert main(argv) == 0  # resumed: finished answers come from the step's journal
    result = json.loads(capsys.readouterr().out)
    # answered calls come from the journal; only those in flight at the stop (cancelled
    # before their answer was kept) are asked again, and the step counts each answer once
    assert uncapped <= len(model.calls) <= uncapped + 5
    assert result["action"] and result["stats"]["llm_calls"] == uncapped


def test_max_calls_needs_memory_and_a_positive_count(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl", size=40)
    argv = ["bookmarks", "act", str(story), "--character", "Haruhi", "--at", "20", *MODELS]
    assert main([*argv, "--max-calls", "5"]) == 2
    assert_one_line_error(capsys.readouterr().err, "--max-calls needs --memory")
    assert main([*argv, "--max-calls", "0", "--memory", str(tmp_path / "m")]) == 2
    assert_one_line_error(capsys.readouterr().err, "--max-calls 0 allows no call")
    assert model.calls == []
