from __future__ import annotations

from pathlib import Path
from typing import Any

from personae.agents.bookmarks.action_judge import Verdict, judge_action
from personae.answer_store import AnswerStore
from personae.testing import ScriptedChatModel


def _model() -> ScriptedChatModel:
    def respond(messages: Any) -> dict[str, Any]:
        response = str(messages[-1].content).split("Your Response:")[1].split("\n")[0]
        return {"reasoning": "km", "score": "A" if "same" in response else "C"}

    return ScriptedChatModel(
        responders={
            "KeyMoveVerdict": respond,
            "NLIVerdict": lambda _m: {"reasoning": "r", "score": "B"},
        }
    )


def _entries(folder: Path) -> int:
    return len(list(folder.rglob("*.json")))


async def test_a_rerun_makes_zero_judge_calls(tmp_path: Path) -> None:
    folder = tmp_path / "judge"
    first_model = _model()
    cache = AnswerStore(folder)
    verdict, usage = await judge_action(
        first_model,
        "exact",
        character="A",
        prediction="A same",
        truth="A acts",
        cache=cache,
        model_name="openai:gpt-4.1",
    )
    assert verdict == Verdict(100, "match", "km") and usage.calls == 1

    second_model = _model()  # a new process: new cache object, new model
    reopened = AnswerStore(folder)
    cached, cached_usage = await judge_action(
        second_model,
        "exact",
        character="A",
        prediction="A same",
        truth="A acts",
        cache=reopened,
        model_name="openai:gpt-4.1",
    )
    assert cached == verdict and cached_usage.calls == 0
    assert second_model.calls == [] and _entries(folder) == 1
    assert (reopened.hits, reopened.misses) == (1, 0)


async def test_the_key_separates_judge_model_texts_and_character(tmp_path: Path) -> None:
    cache = AnswerStore(tmp_path)
    model = _model()

    async def judge(name: str, judge: str = "exact", prediction: str = "p", **kw: str) -> Verdict:
        options = {"character": "A", "truth": "t", **kw}
        verdict, _ = await judge_action(
            model,
            judge,
            prediction=prediction,
            character=options["character"],
            truth=options["truth"],
            cache=cache,
            model_name=name,
        )
        return verdict

    await judge("m1")
    await judge("m2")
    await judge("m1", prediction="p2")
    await judge("m1")
    assert len(model.calls) == 3 and _entries(tmp_path) == 3
    assert await judge("m1", prediction=" p ") == Verdict(0, "no_match", "km")  # stripped: a hit
    assert len(model.calls) == 3
    assert await judge("m1", "nli") == Verdict(50, "neutral", "r")  # another judge: asked
    await judge("m1", character="B")  # the character is part of the prompt
    assert len(model.calls) == 5 and _entries(tmp_path) == 5
