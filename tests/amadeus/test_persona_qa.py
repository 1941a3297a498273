"""`personae amadeus eval-qa`: judges' arithmetic, HS only with chunks, resume, shipped set."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.cli import main
from personae.evals.amadeus.persona_qa import load_qa
from personae.testing import ScriptedChatModel, override_models, prompt_text

PERSONA = "# Iago\n\n## Profile\n\nI am Othello's ensign.\n\nCassio got my promotion.\n"
QA = [
    {
        "character": "Iago",
        "question": "What is your rank?",
        "answer": "Ensign.",
        "attribute": "Demographic Information",
    },
    {
        "character": "Iago",
        "question": "Who got your promotion?",
        "answer": "Cassio.",
        "attribute": "Social Relationships",
    },
]


def _acc(messages: list[BaseMessage]) -> dict[str, Any]:
    return {"reason": "r", "correct": "Ensign." in prompt_text(messages)}


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    chat = ScriptedChatModel(
        responders={
            "RelevanceVerdict": lambda m: {"reason": "r", "relevant": "ensign" in prompt_text(m)},
            "CharacterAttributes": lambda m: {"belief_and_value": "b", "psychological_traits": "p"},
            "text": lambda m: "I serve the Moor.",
            "AnswerContained": _acc,
            "AnswerReflection": lambda m: {
                "reason": "r",
                "score": 8 if "Ensign." in prompt_text(m) else 2,
            },
            "HallucinationScore": lambda m: {"reason": "r", "score": 3},
        }
    )
    with override_models(chat):
        yield chat


def _setup(tmp_path: Path) -> list[str]:
    (tmp_path / "iago.md").write_text(PERSONA)
    (tmp_path / "qa.jsonl").write_text("\n".join(json.dumps(row) for row in QA))
    memory = ["--memory", str(tmp_path / "mem")]
    assert (
        main(["amadeus", "index", str(tmp_path / "iago.md"), "--character", "Iago", *memory]) == 0
    )
    return memory


def test_scores_resume_and_hs_needs_chunks(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = _setup(tmp_path)
    argv = ["amadeus", "eval-qa", str(tmp_path / "qa.jsonl"), "--model", "openai:scripted", *memory]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "| AMADEUS | 2 | 50.00% | 5.00 | 3.00 |" in out
    summary = json.loads((tmp_path / "a/summary.json").read_text())
    assert summary["per_attribute"]["Social Relationships"]["acc"] == 0.0
    hs_prompt = prompt_text(model.calls_for("HallucinationScore")[0])
    assert "I am Othello's ensign." in hs_prompt and "I serve the Moor." in hs_prompt
    calls = len(model.calls)
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0  # resumed: nothing asked again
    assert len(model.calls) == calls
    assert main([*argv, "--out", str(tmp_path / "b"), "--method", "none"]) == 0
    assert "| w/o RAG | 2 | 50.00% | 5.00 | - |" in capsys.readouterr().out
    assert len(model.calls_for("HallucinationScore")) == 2  # none has no chunks: no HS
    chunks = ["amadeus", "eval-chunks", "--results", str(tmp_path / "a/results.jsonl")]
    assert main([*chunks, *memory, "--out", str(tmp_path / "c")]) == 0
    usage = json.loads((tmp_path / "c/summary.json").read_text())["usage"]
    assert usage["queries"] == 2 and usage["per_character"] == {"Iago": 1.0}  # both chunks used


def test_shipped_set_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped = load_qa("iago-othello")
    assert len(shipped) == 12 and {item.character for item in shipped} == {"Iago"}
    assert len({item.attribute for item in shipped}) == 6  # every CharacterRAG attribute
    (tmp_path / "bad.jsonl").write_text('{"character": "Iago", "question": "Q"}\n')
    assert main(["amadeus", "eval-qa", str(tmp_path / "bad.jsonl"), "--model", "openai:x"]) == 2
    assert "line 1 lacks character, question or answer" in capsys.readouterr().err


def test_an_item_whose_judgment_stays_invalid_is_left_out_and_judged_by_the_rerun(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = _setup(tmp_path)
    good = model.responders["AnswerContained"]
    model.responders["AnswerContained"] = lambda m: (
        "no idea" if "Who got your promotion?" in prompt_text(m) else good(m)
    )
    argv = ["amadeus", "eval-qa", str(tmp_path / "qa.jsonl"), "--model", "openai:scripted"]
    argv += [*memory, "--out", str(tmp_path / "a"), "--max-failures", "1"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads((tmp_path / "a/summary.json").read_text())
    assert summary["overall"]["items"] == 1 and summary["degraded"] == {"items": 1}
    assert "degraded: 1 (items 1)\n" in captured.err and "Degraded: 1 item(s)" in captured.out
    model.responders["AnswerContained"] = good
    assert main(argv) == 0
    summary = json.loads((tmp_path / "a/summary.json").read_text())
    assert summary["overall"]["items"] == 2 and summary["degraded"] == {"items": 0}


async def test_a_guided_selection_or_attribute_answer_still_invalid_degrades() -> None:
    from personae.agents.amadeus.attributes import extract_attributes
    from personae.agents.amadeus.selector import judge_chunk_relevance

    broken = ScriptedChatModel(
        responders={"RelevanceVerdict": lambda m: "?", "CharacterAttributes": lambda m: "?"}
    )
    verdict, usage = await judge_chunk_relevance(broken, "Iago", "Rank?", "I am an ensign.")
    assert not verdict.relevant and verdict.reason.startswith("degraded: ")
    assert usage.degraded == 1 and usage.calls == 3
    found, usage = await extract_attributes(broken, "Iago", "Rank?", ["I am an ensign."])
    assert (found.belief_and_value, found.psychological_traits) == ("", "")
    assert usage.degraded == 1
