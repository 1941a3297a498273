from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.agents.action_judge import (
    KEY_MOVE_SYSTEM,
    NLI_SYSTEM,
    Verdict,
    check_judge,
    judge_action,
)
from personae.errors import InputError
from personae.testing import ScriptedChatModel, prompt_text


def _model(**responders: Any) -> ScriptedChatModel:
    return ScriptedChatModel(responders=responders)


async def test_key_move_match_scores_100_and_no_match_0() -> None:
    answers = iter(
        [{"key_move": "joins the club", "match": True}, {"key_move": "x", "match": False}]
    )
    model = _model(KeyMoveVerdict=lambda _m: next(answers))
    hit, usage = await judge_action(
        model, "exact", character="Kyon", prediction="Kyon joins.", truth="Kyon joins the club."
    )
    miss, _ = await judge_action(
        model, "exact", character="Kyon", prediction="Kyon sleeps.", truth="Kyon joins the club."
    )
    assert hit == Verdict(100, "match", "joins the club")
    assert miss.score == 0 and miss.label == "no_match"
    assert usage.calls == 1 and usage.input_tokens > 0
    prompt = prompt_text(model.calls_for("KeyMoveVerdict")[0])
    assert "KEY MOVE" in prompt and KEY_MOVE_SYSTEM.splitlines()[0] in prompt
    assert "True action:\nKyon joins the club." in prompt
    assert "Predicted action:\nKyon joins." in prompt


@pytest.mark.parametrize(("label", "score"), [("entail", 100), ("neutral", 50), ("contradict", 0)])
async def test_nli_scores(label: str, score: int) -> None:
    model = _model(NLIVerdict=lambda _m: {"reason": "because", "label": label})
    verdict, _ = await judge_action(
        model, "nli", character="Haruhi", prediction="Haruhi shouts.", truth="Haruhi yells."
    )
    assert verdict == Verdict(score, label, "because")
    assert NLI_SYSTEM.splitlines()[0] in prompt_text(model.calls_for("NLIVerdict")[0])


async def test_an_invalid_label_is_retried_with_the_error() -> None:
    answers = iter([{"reason": "r", "label": "maybe"}, {"reason": "r", "label": "contradict"}])

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
