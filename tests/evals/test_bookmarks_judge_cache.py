from __future__ import annotations

from pathlib import Path
from typing import Any

from personae.agents.action_judge import Verdict
from personae.evals.judge_store import CachedJudge, JudgeStore
from personae.testing import ScriptedChatModel


def _model() -> ScriptedChatModel:
    def respond(messages: Any) -> dict[str, Any]:
        return {"key_move": "km", "match": "same" in str(messages[-1].content)}

    return ScriptedChatModel(responders={"KeyMoveVerdict": respond})


async def test_a_rerun_makes_zero_judge_calls(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite"
    first_model = _model()
    store = JudgeStore(path)
    judge = CachedJudge(store, first_model, "openai:gpt-4.1", "exact")
    verdict, usage = await judge(character="A", prediction="A same", truth="A acts")
    assert verdict == Verdict(100, "match", "km") and usage.calls == 1
    store.close()

    second_model = _model()  # a new process: new store object, new model
    reopened = JudgeStore(path)
    again = CachedJudge(reopened, second_model, "openai:gpt-4.1", "exact")
    cached, cached_usage = await again(character="A", prediction="A same", truth="A acts")
    assert cached == verdict and cached_usage.calls == 0
    assert second_model.calls == [] and len(reopened) == 1


async def test_the_key_separates_judge_model_and_texts(tmp_path: Path) -> None:
    store = JudgeStore(None)
    model = _model()
    await CachedJudge(store, model, "m1", "exact")(character="A", prediction="p", truth="t")
    await CachedJudge(store, model, "m2", "exact")(character="A", prediction="p", truth="t")
    await CachedJudge(store, model, "m1", "exact")(character="A", prediction="p2", truth="t")
    await CachedJudge(store, model, "m1", "exact")(character="A", prediction="p", truth="t")
    assert len(model.calls) == 3 and len(store) == 3
    assert store.get("nli", "m1", "p", "t") is None
    assert store.get("exact", "m1", " p ", "t") == Verdict(0, "no_match", "km")
