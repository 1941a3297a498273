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


# The released runner's src/bookmarks/evaluate.py, score_action_em and score_action_nli, with
# their placeholders filled by the runner's own f-strings (scene = the plain texts joined).
RUNNER_EM = (
    "# Scene\n{scene}\n\nYour Response: {prediction}\nGround Truth: {action}\n\n"
    'Decide whether the main action taken by {character} in "Your Response" matches the main '
    'action in "Ground Truth".\nFocus on the primary verb-level action (what {character} does), '
    "and ignore minor differences in wording, intensity, tone, or small extra details (e.g., "
    "sub-actions) that do not change the core action.\nIf multiple actions appear, judge using "
    "the most central action in each text.\n\nA: Exact match \u2014 the main action in the "
    "response is the same as the main action in the ground truth (allowing paraphrase).\nB: "
    "Partial/adjacent match \u2014 the response is close but not the same main action, and the "
    "differences are not minor.\nC: Mismatch \u2014 the main action is different or "
    'incompatible.\n\nOutput in json:\n```json\n{{\n  "reasoning": "...",\n  "score": '
    '"A/B/C"\n}}\n```'
)
RUNNER_NLI = (
    "# Scene\n{scene}\n\nYour Response: {prediction}\nGround Truth: {action}\n\n"
    "Score the action of {character} in the response based on the ground truth.\nA: The ground "
    "truth entails the action of {character} in the response. (Following the same character "
    "logic.)\nB: The ground truth is neutral to the action of {character} in the response. "
    "(Reflecting a different facet.)\nC: The ground truth contradicts the action of {character} "
    "in the response. (Following a contradicted character logic.)\n\nOutput in json: \n"
    '```json\n{{\n"reasoning": "...",\n"score": "A/B/C"\n}}\n```'
)


@pytest.mark.parametrize(("judge", "runner"), [("exact", RUNNER_EM), ("nli", RUNNER_NLI)])
async def test_an_utterance_storyline_is_judged_with_the_runners_prompt_exactly(
    judge: str, runner: str
) -> None:
    """Bandori (utterance) storylines too: the runner adds no note about the format."""
    model = _model(
        KeyMoveVerdict=lambda _m: {"reasoning": "r", "score": "C"},
        NLIVerdict=lambda _m: {"reasoning": "r", "score": "C"},
    )
    scene = (
        StoryAction(0, "ch1", "Arisa: Kasumi, wait!", ("Arisa",)),
        StoryAction(1, "ch1", "Saaya: Here we go.", ("Saaya",)),
    )
    verdict, _ = await judge_action(
        model,
        judge,
        character="Kasumi",
        prediction="Kasumi: Let's go!",
        truth="Kasumi: I've got it!",
        scene=scene,
        acting_format="utterance",
    )
    assert verdict.score == 0
    expected = runner.format(
        scene="Arisa: Kasumi, wait!\nSaaya: Here we go.",
        prediction="Kasumi: Let's go!",
        action="Kasumi: I've got it!",
        character="Kasumi",
    )
    assert prompt_text(model.calls[0][1]) == expected


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
    assert "(Following the same character logic.)" in prompt
    assert "(Reflecting a different facet.)" in prompt


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
