"""`personae amadeus index` and `personae chat`: index, ask, converse, resume, one-line errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAIChat
from langchain_core.messages import BaseMessage

from personae.cli import main
from personae.loopback import LoopbackWebServer
from personae.testing import ScriptedChatModel, override_models, prompt_text

PERSONA = """# Iago

## Profile

I am Othello's ensign. I hate the Moor.

## Deeds

### Act I

I set Roderigo on Brabantio.
"""
MODELS = ["--model", "openai:scripted"]


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    def gs(messages: list[BaseMessage]) -> dict[str, Any]:
        return {"reason": "r", "relevant": "ensign" in prompt_text(messages)}

    chat = ScriptedChatModel(
        responders={
            "RelevanceVerdict": gs,
            "CharacterAttributes": lambda m: {
                "belief_and_value": "Self first.",
                "psychological_traits": "Cold.",
            },
            "text": lambda m: "I am not what I am.",
        }
    )
    with override_models(chat):
        yield chat


@pytest.fixture
def persona(tmp_path: Path) -> Path:
    path = tmp_path / "iago.md"
    path.write_text(PERSONA)
    return path


def _memory(tmp_path: Path) -> list[str]:
    return ["--memory", str(tmp_path / "mem")]


def test_index_is_incremental(
    persona: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["amadeus", "index", str(persona), "--character", "Iago", *_memory(tmp_path)]
    assert main([*args, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["chunks"], first["added"], first["l_max"]) == (2, 2, 39)
    assert first["collection"] == "amadeus.Iago.acts.hashing-384"
    assert main(args) == 0
    assert "0 added, 0 deleted, 2 unchanged" in capsys.readouterr().out


def test_ask_prints_the_answer_and_json_adds_the_grounding(
    persona: Path, tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "chat",
                str(persona),
                "--character",
                "Iago",
                "--ask",
                "Who are you?",
                *_memory(tmp_path),
                *MODELS,
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert captured.out == "I am not what I am.\n"
    assert (
        main(
            [
                "chat",
                "--character",
                "iago",
                "--ask",
                "Who are you?",
                "--json",
                *_memory(tmp_path),
                *MODELS,
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["character"] == "Iago" and payload["gs_failed"] is False
    assert "ensign" in payload["selected"][0]["text"]
    assert payload["attributes"] == {
        "belief_and_value": "Self first.",
        "psychological_traits": "Cold.",
    }
    assert payload["usage"]["rp_calls"] == 1 and len(payload["knowledge"]) == 2


def test_chat_with_a_profile_json_indexes_it_on_the_fly(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = {
        "character": "Kenshiro",
        "profile": "I am Kenshiro, the ensign of no one.\n\nI protect the weak.",
        "canon": "",
        "dimensions": {"identity": [{"text": "I am the 64th successor of Hokuto Shinken."}]},
    }
    path = tmp_path / "profiles/kenshiro/profile.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(profile))
    argv = ["chat", str(path), "--ask", "Who are you?", "--json", *_memory(tmp_path), *MODELS]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "indexed Kenshiro: 3 chunks added" in captured.err
    payload = json.loads(captured.out)
    assert payload["character"] == "Kenshiro"
    assert {c["path"] for c in payload["knowledge"]} == {"Profile", "Identity"}
    assert main(argv) == 0
    assert "indexed" not in capsys.readouterr().err  # unchanged: nothing re-indexed


def test_terminal_chat_resumes_after_a_restart(
    persona: Path,
    tmp_path: Path,
    model: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert main(["amadeus", "index", str(persona), "--character", "Iago", *_memory(tmp_path)]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("My name is Roderigo.\n/exit\n"))
    assert (
        main(["chat", "--character", "Iago", "--method", "naive", *_memory(tmp_path), *MODELS]) == 0
    )
    monkeypatch.setattr("sys.stdin", io.StringIO("What is my name?\n"))
    assert (
        main(["chat", "--character", "Iago", "--method", "naive", *_memory(tmp_path), *MODELS]) == 0
    )
    out = capsys.readouterr().out
    assert out.count("Iago: I am not what I am.") == 2
    last = model.calls_for("text")[-1]
    assert "My name is Roderigo." in prompt_text(last[1:-1])


@pytest.mark.slow  # a second CLI process
def test_terminal_chat_resumes_in_a_new_process(persona: Path, tmp_path: Path) -> None:
    """Two real `personae chat` processes on one memory folder, the LLM on a loopback server."""
    assert main(["amadeus", "index", str(persona), "--character", "Iago", *_memory(tmp_path)]) == 0
    fake = FakeOpenAIChat({"text": lambda messages: f"Turn {len(messages)}."})
    script = "import sys; from personae.cli import run; sys.argv[0] = 'personae'; run()"
    argv = ["chat", "--character", "Iago", "--method", "naive", *_memory(tmp_path)]
    with LoopbackWebServer(fake) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "OPENAI_API_KEY": "test-key",
            "PERSONAE_MODEL": "openai:fake",
        }
        runs = [
            subprocess.run(
                [sys.executable, "-c", script, *argv],
                input=f"{line}\n",
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            for line in ("My name is Roderigo.", "What is my name?")
        ]
    for done in runs:
        assert done.returncode == 0, done.stderr
    assert runs[-1].stdout.strip() == "Iago: Turn 4."  # system, earlier turn (2), the question
    second = [m["content"] for m in fake.requests[1]["messages"]]
    assert second[1:] == ["My name is Roderigo.", "Turn 2.", "What is my name?"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["chat", "--character", "Nobody", "--ask", "hi"], "unknown character 'Nobody'"),
        (
            ["chat", "--character", "Iago", "--ask", "hi", "--splitter", "ats"],
            "splitter mismatch: Iago is indexed with the acts splitter, not ats",
        ),
        (
            ["chat", "--character", "Iago", "--ask", "hi", "--embedding", "local"],
            "embedding mismatch: Iago is indexed with hashing, not local:all-MiniLM-L6-v2",
        ),
        (
            ["chat", "--character", "Iago", "--ask", "hi", "--embedding", "bge"],
            "unknown embeddings 'bge'",
        ),
        (["amadeus", "index", "EMPTY", "--character", "X"], "is empty"),
        (["amadeus", "index", "HEADINGS", "--character", "X"], "has no paragraphs"),
        (["amadeus", "index", "missing.md", "--character", "X"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str],
    message: str,
    persona: Path,
    tmp_path: Path,
    model: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "empty.md").write_text("\n")
    (tmp_path / "headings.md").write_text("# X\n\n## A\n\n## B\n")
    assert main(["amadeus", "index", str(persona), "--character", "Iago", *_memory(tmp_path)]) == 0
    capsys.readouterr()
    argv = [str(tmp_path / "empty.md") if a == "EMPTY" else a for a in argv]
    argv = [str(tmp_path / "headings.md") if a == "HEADINGS" else a for a in argv]
    models = MODELS if argv[0] == "chat" else []
    assert main([*argv, *_memory(tmp_path), *models]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and err.startswith("personae: error:")


def test_the_embedding_setting_keys_the_index_and_a_mismatch_is_refused(
    persona: Path,
    tmp_path: Path,
    model: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PERSONAE_EMBEDDINGS picks the index: local and hashing indexes live side by side."""
    index = ["amadeus", "index", str(persona), "--character", "Iago", *_memory(tmp_path)]
    ask = ["chat", "--character", "Iago", "--ask", "Who do you serve?", "--json"]
    monkeypatch.setenv("PERSONAE_EMBEDDINGS", "local")
    assert main([*index, "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert local["collection"].endswith(".acts.local-all-minilm-l6-v2")

    monkeypatch.setenv("PERSONAE_EMBEDDINGS", "hashing")  # nothing indexed with it yet
    assert main([*ask, *_memory(tmp_path), *MODELS]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "embedding mismatch: Iago is indexed with local:all-MiniLM-L6-v2, not hashing" in err
    assert "set PERSONAE_EMBEDDINGS (or --embedding) to local:all-MiniLM-L6-v2" in err

    assert main([*index, "--json"]) == 0  # a second index, the first one untouched
    hashing = json.loads(capsys.readouterr().out)
    assert hashing["collection"].endswith(".acts.hashing-384") and hashing["added"] > 0
    assert main([*ask, *_memory(tmp_path), *MODELS, "--embedding", "local"]) == 0
    turn = json.loads(capsys.readouterr().out)
    # MiniLM vectors: "serve" finds the ensign paragraph without sharing a word with it;
    # hashing (word overlap) ranks the other one first: each run used its own index.
    assert turn["knowledge"][0]["text"].startswith("I am Othello's ensign")
    assert main([*ask, *_memory(tmp_path), *MODELS]) == 0
    assert json.loads(capsys.readouterr().out)["knowledge"][0]["text"].startswith("I set")
    assert main([*index, "--embedding", "local", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 0  # unchanged: nothing re-embedded
