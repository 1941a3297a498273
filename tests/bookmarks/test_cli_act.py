"""`personae bookmarks act` in process: action and grounding, JSON, memory reuse, one-line input errors."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bookmarks_world import (
    future_reads,
    scripted_model,
    scripted_model_as,
    write_storyline,
)
from cli_errors import assert_one_line_error
from fake_openai import FakeOpenAIChat
from langchain_core.messages import convert_to_messages

from personae.cli import main
from personae.graphs.bookmarks.resources import forget_resources
from personae.llm import NO_MODEL_HINT
from personae.loopback import LoopbackWebServer
from personae.testing import ScriptedChatModel

MODELS = ["--model", "openai:t", "--fast-model", "openai:t"]


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    with scripted_model_as("t") as scripted:
        yield scripted


@pytest.fixture
def story(tmp_path: Path) -> Path:
    return write_storyline(tmp_path / "club.jsonl")


def act(*argv: str) -> list[str]:
    """`act` with our prompts: these tests count the calls of our method (the paper's, the
    released prompts', are counted in test_released_prompts.py and the recipe test)."""
    return ["bookmarks", "act", "--method", "bookmarks-personae", *argv]


def test_prints_the_action_and_the_grounding_bookmarks(
    story: Path, tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = ["--memory", str(tmp_path / "mem")]
    code = main(act(str(story), "--character", "Haruhi", "--at", "40", *memory, *MODELS))
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Haruhi smiles at the brigade."
    assert lines[2] == "Grounded by:"
    assert lines[4] == (
        "  bm-1 (state, synced to 40): Q: Where is Haruhi now and who is with them? "
        "A: as of [39] in the club room"
    )
    assert lines[6].startswith("Step: 0 reused, 0 derived, 3 new; sync read ")
    assert lines[6].endswith(" from scratch); 13 LLM calls") and len(lines) == 7
    assert future_reads(model.calls, 40) == []


def test_json_output_and_memory_reused_by_the_next_call(
    story: Path, tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = ["--memory", str(tmp_path / "mem")]
    assert (
        main(act(str(story), "--character", "Kyon", "--at", "41", "--json", *memory, *MODELS)) == 0
    )
    first = json.loads(capsys.readouterr().out)
    assert (first["storyline"], first["character"], first["position"]) == ("club", "Kyon", 41)
    assert first["action"] == "Kyon smiles at the brigade."
    assert [b["id"] for b in first["bookmarks"]] == ["bm-0", "bm-1", "bm-2"]
    assert first["stats"]["new"] == 3 and first["stats"]["llm_calls"] == len(model.calls)
    assert len(first["grounding"]) == 3
    forget_resources()  # a new command invocation reopens the bank from disk
    assert (
        main(act(str(story), "--character", "Kyon", "--at", "49", "--json", *memory, *MODELS)) == 0
    )
    second = json.loads(capsys.readouterr().out)
    assert (second["stats"]["reuse"], second["stats"]["new"]) == (3, 0)
    assert second["stats"]["actions_read"] < second["stats"]["actions_from_scratch"]
    assert {b["position"] for b in second["bookmarks"]} == {49}


@pytest.mark.parametrize(
    ("content", "argv", "message"),
    [
        (None, ["--character", "Kyon", "--at", "3"], "does not exist; check the path"),
        ("{not json", ["--character", "Kyon", "--at", "3"], "is not valid JSON"),
        ("ok", ["--character", "Koizumi", "--at", "3"], "unknown character 'Koizumi'"),
        ("ok", ["--character", "Kyon", "--at", "160"], "position 160 is out of range"),
        ("ok", ["--character", "Kyon", "--at", "-1"], "use a position from 0 to 159"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    argv: list[str],
    message: str,
) -> None:
    path = tmp_path / "story.json"
    if content == "ok":
        path = write_storyline(tmp_path / "club.jsonl")
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    code = main(act(str(path), *argv, "--memory", str(tmp_path / "mem"), *MODELS))
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert_one_line_error(captured.err, re.escape(message))
    assert not (tmp_path / "mem").exists()


def test_no_model_configured_prints_the_hint(
    story: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(act(str(story), "--character", "Kyon", "--at", "3"))
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err == f"personae: error: no LLM is configured; {NO_MODEL_HINT}\n"


def test_runs_through_an_openai_compatible_server_from_the_environment(
    story: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted = scripted_model()

    def adapt(name: str) -> Callable[[list[dict[str, Any]]], Any]:
        return lambda messages: scripted.responders[name](convert_to_messages(messages))

    fake = FakeOpenAIChat({name: adapt(name) for name in scripted.responders})
    with LoopbackWebServer(fake) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("PERSONAE_MODEL", "openai:fake")
        memory = ["--memory", str(tmp_path / "mem")]
        code = main(act(str(story), "--character", "Nagato", "--at", "42", "--json", *memory))
    forget_resources()
    assert code == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["action"] == "Nagato smiles at the brigade."
    assert result["stats"]["llm_calls"] == len(fake.requests) == 13  # 8 evidence checks
    tools = [r["tools"][0]["function"]["name"] for r in fake.requests]
    assert tools[0] == "ProposedQuestions" and tools[-1] == "NextAction"
    assert {"StateUpdate", "EvidenceVerdicts", "BehaviorSummary", "ConceptAnswer"} <= set(tools)
    assert "[42]" not in json.dumps([r["messages"] for r in fake.requests])


def test_degraded_answers_are_named_and_a_rerun_asks_again(
    story: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: `act` printed a bare ``degraded: 1``, not what degraded nor what to do."""
    from bookmarks_world import scripted_model

    from personae.testing import override_models

    scripted = scripted_model(StateUpdate=lambda _: {"not": "a state update"})
    override_models(specs={"openai:t": scripted})
    memory = ["--memory", str(tmp_path / "mem")]
    try:
        assert main(act(str(story), "--character", "Haruhi", "--at", "40", *memory, *MODELS)) == 0
    finally:
        forget_resources()
    err = capsys.readouterr().err
    estimate, rest = err.split("\n", 1)  # the estimate printed before the step, then the step's
    assert estimate.startswith("personae: estimated: ")
    assert rest == (
        "degraded: 1 (answers 1): model answers still invalid after retries, each kept as its "
        "role's safe default (no question, no match, the bookmark unsynced, no evidence); a "
        "rerun asks the model again\n"
    )
