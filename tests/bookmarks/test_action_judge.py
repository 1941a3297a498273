from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.agents.bookmarks.action_judge import (
    Verdict,
    check_judge,
    judge_action,
)
from personae.errors import InputError
from personae.memory.bookmarks.storyline import StoryAction
from personae.testing import ScriptedChatModel, prompt_text

SCENE = (
    StoryAction(0, "ch1", "Haruhi: Let's start a club!", ("Haruhi",)),
    StoryAction(1, "ch1", "Kyon: Why me?", ("Kyon",)),
)


def _model(**responders: Any) -> ScriptedChatModel:
    return ScriptedChatModel(responders=responders)


@pytest.mark.parametrize(("grade", "score", "label"), [("A", 100, "match"), ("B", 0, "partial")])
async def test_key_move_grades_as_the_released_judge(grade: str, score: int, label: str) -> None:
    model = _model(KeyMoveVerdict=lambda _m: {"reasoning": "joins the club", "score": grade})
    verdict, usage = await judge_action(
        model,
        "exact",
        character="Kyon",
        prediction="Kyon joins.",
        truth="Kyon joins the club.",
        scene=SCENE,
    )
    assert verdict == Verdict(score, label, "joins the club")
    assert usage.calls == 1 and usage.input_tokens > 0
    prompt = prompt_text(model.calls_for("KeyMoveVerdict")[0])
    # The judge sees the scene (as plain lines), then the response and the ground truth.
    assert "# Scene\nHaruhi: Let's start a club!\nKyon: Why me?" in prompt
    assert "Your Response: Kyon joins.\nGround Truth: Kyon joins the club." in prompt
    assert "main action taken by Kyon" in prompt and "Partial/adjacent match" in prompt
    assert "utterance" not in prompt


async def test_the_utterance_format_is_named_to_the_judge() -> None:
    model = _model(KeyMoveVerdict=lambda _m: {"reasoning": "r", "score": "C"})
    verdict, _ = await judge_action(
        model,
        "exact",
        character="Kasumi",
        prediction="Kasumi: Let's go!",
        truth="Kasumi: I've got it!",
        acting_format="utterance",
    )
    assert verdict.label == "no_match" and verdict.score == 0
    assert '"Name: line"' in prompt_text(model.calls[0][1])


@pytest.mark.parametrize(
    ("grade", "label", "score"),
    [("A", "entail", 100), ("B", "neutral", 50), ("C", "contradict", 0)],
)
async def test_nli_scores(grade: str, label: str, score: int) -> None:
    model = _model(NLIVerdict=lambda _m: {"reasoning": "because", "score": grade})
    verdict, _ = await judge_action(
        model, "nli", character="Haruhi", prediction="Haruhi shouts.", truth="Haruhi yells."
    )
    assert verdict == Verdict(score, label, "because")
    prompt = prompt_text(model.calls_for("NLIVerdict")[0])
    assert "(Following the same\ncharacter logic.)" in prompt
    assert "(Reflecting a\ndifferent facet.)" in prompt


async def test_an_invalid_grade_is_retried_with_the_error() -> None:
    answers = iter([{"reasoning": "r", "score": "maybe"}, {"reasoning": "r", "score": "C"}])

    def respond(messages: list[BaseMessage]) -> Any:
        return next(answers)

    model = _model(NLIVerdict=respond)
    verdict, usage = await judge_action(
        model, "nli", character="A", prediction="A runs.", truth="A stays."
    )
    assert verdict.score == 0 and usage.calls == 2
    assert "invalid" in prompt_text(model.calls_for("NLIVerdict")[1])


async def test_empty_prediction_scores_zero_without_a_call() -> None:
    model = _model()
    verdict, usage = await judge_action(model, "exact", character="A", prediction="  ", truth="t")
    assert verdict.score == 0 and usage.calls == 0 and model.calls == []


def test_unknown_judge_is_a_clear_error() -> None:
    with pytest.raises(InputError, match=r"unknown judge 'bleu'; use one of: exact, nli"):
        check_judge("bleu")
