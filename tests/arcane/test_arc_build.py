"""arc_build: both streams with their running context, tags, critic and human gates, resume."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import arc_responders, imported_novel, induction_answer
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import ValidationError

from personae.agents.arcane import arc_rules
from personae.agents.arcane.axes import (
    AxisInduction,
    in_order,
    induction_schema,
    reconciliation_schema,
)
from personae.errors import NothingUsableError
from personae.graphs.arcane.arc_build import ArcBuildContext, arcs_of, build_graph
from personae.graphs.arcane.context import checkpoint_serde
from personae.memory.arcane.records import CriticVerdict, load_arcs
from personae.testing import ScriptedChatModel, override_models, prompt_text


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responders=arc_responders())
    with override_models(scripted):
        yield scripted


def _context(data: Path) -> ArcBuildContext:
    return ArcBuildContext(data_dir=str(data), model="openai:scripted")


def _config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


async def test_streams_tags_and_critic_gate(tmp_path: Path, model: ScriptedChatModel) -> None:
    imported_novel(tmp_path)
    graph = build_graph(InMemorySaver(serde=checkpoint_serde()))
    request: Any = {"novel": "the_river", "character": "Ada", "split": "train"}
    result = await graph.ainvoke(
        request,
        config=_config(),
        context=_context(tmp_path),
    )
    event_prompts = [prompt_text(m) for m in model.calls_for("ChapterEvents")]
    state_prompts = [prompt_text(m) for m in model.calls_for("ChapterState")]
    assert len(event_prompts) == len(state_prompts) == 6
    for n in range(2, 7):  # chapter n carries chapter n-1's running summary / profile
        assert f"event summary through {n - 1}" in event_prompts[n - 1]
        assert f"state profile through {n - 1}" in state_prompts[n - 1]
    assert "(none yet" in event_prompts[0] and "(none yet" in state_prompts[0]
    assert not any("state profile" in p for p in event_prompts)  # no cross-talk
    assert not any("event summary" in p for p in state_prompts)
    assert len(model.calls_for("CriticAnswer")) == 3 * 3  # 3 kept axes x 3 critics
    kept = {a.axis_id: a for a in arcs_of(result)}
    assert sorted(kept) == ["final_intra_01", "final_rel_01"]
    assert kept["final_rel_01"].reconciliation_tag == "valid_missed"
    assert any("final_intra_02" in d and "artifact" in d for d in result["dropped"])
    assert any("final_intra_03" in d and "critics" in d for d in result["dropped"])
    assert any("final_intra_03: borderline" in f for f in result["flags"])
    assert result["usage"]["llm_calls"] == 6 + 6 + 2 + 1 + 9
    stored = load_arcs(tmp_path / "novels" / "the_river")
    assert [a.axis_id for a in stored] == ["final_intra_01", "final_rel_01"]
    assert stored[0].literary_validation["historical"].citations[0].verified is False
    assert (tmp_path / "novels/the_river/streams/ada/events.jsonl").read_text().count("\n") == 6


async def test_killed_build_resumes_after_the_last_chapter(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    imported_novel(tmp_path)
    answer = model.responders["ChapterEvents"]
    failures = {"left": 1}

    def flaky(messages: Any) -> Any:
        if "CURRENT CHAPTER (4)" in prompt_text(messages) and failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("killed")  # the process dies while reading chapter 4
        return answer(messages)

    model.responders["ChapterEvents"] = flaky
    saver = InMemorySaver(serde=checkpoint_serde())
    graph = build_graph(saver)
    payload: Any = {"novel": "the_river", "character": "Ada", "split": "train"}
    with pytest.raises(RuntimeError, match="killed"):
        await graph.ainvoke(payload, config=_config("k"), context=_context(tmp_path))
    # Chapters 1-3 were read; chapter 4's state call races the failing event call.
    assert len(model.calls_for("ChapterState")) in (3, 4)
    model.calls.clear()
    # A fresh answer cache: only the checkpoint can spare chapters 1-3.
    fresh = ArcBuildContext(
        data_dir=str(tmp_path), model="openai:scripted", cache_dir=str(tmp_path / "c2")
    )
    result = await build_graph(saver).ainvoke(None, config=_config("k"), context=fresh)
    for schema in ("ChapterState", "ChapterEvents"):
        read = [prompt_text(m).split("CURRENT CHAPTER (")[1][0] for m in model.calls_for(schema)]
        assert read == ["4", "5", "6"]
    assert len(result["arcs"]) == 2


async def test_eval_split_waits_for_two_of_three_human_votes(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    imported_novel(tmp_path)
    graph = build_graph(InMemorySaver(serde=checkpoint_serde()))
    payload: Any = {"novel": "the_river", "character": "Ada", "split": "eval"}
    first = await graph.ainvoke(payload, config=_config("e"), context=_context(tmp_path))
    sheet = first["__interrupt__"][0].value["axes"]
    assert {row["axis_id"] for row in sheet} == {"final_intra_01", "final_intra_03", "final_rel_01"}
    assert load_arcs(tmp_path / "novels" / "the_river") == []

    def votes(valid: int) -> list[dict[str, Any]]:
        return [{"annotator": f"a{i}", "validity": i < valid} for i in range(3)]

    resume = {"final_intra_01": votes(2), "final_intra_03": votes(3), "final_rel_01": votes(1)}
    result = await graph.ainvoke(
        Command(resume=resume), config=_config("e"), context=_context(tmp_path)
    )
    assert sorted(a.axis_id for a in arcs_of(result)) == ["final_intra_01", "final_intra_03"]
    assert all(a.validated_by == "humans" and a.split == "eval" for a in arcs_of(result))


@pytest.mark.parametrize(("true_votes", "kept"), [(0, False), (1, False), (2, True), (3, True)])
def test_critic_majority_is_two_of_three(true_votes: int, kept: bool) -> None:
    verdicts = {
        name: CriticVerdict(verdict=i < true_votes, reasoning="")
        for i, name in enumerate(("structuralist", "psychological", "historical"))
    }
    assert arc_rules.critic_majority(verdicts) is kept


def test_drift_flag_and_malformed_ranges() -> None:
    good = AxisInduction.model_validate(induction_answer([]))
    assert arc_rules.drift_flags("event", good) == []
    drifting = good.model_copy(deep=True)
    drifting.intrapersonal_axes[0].dimension_label = "Pride"
    drifting.intrapersonal_axes[0].axis_name = "From pride to humility"
    assert arc_rules.drift_flags("event", drifting)
    schema = induction_schema(6)
    schema.model_validate(induction_answer([]))
    late = induction_answer([])
    late["intrapersonal_axes"][0]["trajectory"][2]["chapter_range"] = [5, 9]
    with pytest.raises(ValidationError, match="less than or equal to 6"):
        schema.model_validate(late)  # the schema the model is given says 1..6
    reversed_ = good.model_copy(deep=True)
    trajectory = reversed_.intrapersonal_axes[0].trajectory
    trajectory[0].chapter_range, trajectory[1].chapter_range = (4, 3), (1, 2)
    fixed = in_order(reversed_).intrapersonal_axes[0].trajectory
    assert [p.chapter_range for p in fixed][:2] == [(1, 2), (3, 4)]  # the code orders them


async def test_a_chapter_or_critic_still_invalid_degrades_and_a_rerun_asks_again(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    imported_novel(tmp_path)
    events, critic = model.responders["ChapterEvents"], model.responders["CriticAnswer"]
    model.responders["ChapterEvents"] = lambda m: (
        "no JSON" if "CURRENT CHAPTER (3)" in prompt_text(m) else events(m)
    )
    model.responders["CriticAnswer"] = lambda m: (
        {"verdict": "maybe"} if "historical" in str(m[0].content) else critic(m)
    )
    request: Any = {"novel": "the_river", "character": "Ada", "split": "train"}
    result = await build_graph().ainvoke(request, context=_context(tmp_path))
    chapter = [d for d in result["degraded"] if d.startswith("chapter 3: event stream (T12)")]
    assert len(chapter) == 1 and "rerun to ask again" in chapter[0]
    assert sum("historical critic (T16) degraded" in d for d in result["degraded"]) == 3
    assert result["usage"]["degraded"] == 1 + 3 and len(result["degraded"]) == 4
    assert sorted(a.axis_id for a in arcs_of(result)) == ["final_intra_01", "final_rel_01"]
    # the running summary skipped chapter 3: chapter 4 reads chapter 2's
    fourth = [prompt_text(m) for m in model.calls_for("ChapterEvents") if "(4)" in prompt_text(m)]
    assert "event summary through 2" in fourth[0]
    model.responders["ChapterEvents"], model.responders["CriticAnswer"] = events, critic
    model.calls.clear()
    again = await build_graph().ainvoke(request, context=_context(tmp_path))
    assert again["degraded"] == []
    asked = {
        prompt_text(m).split("CURRENT CHAPTER (")[1][0] for m in model.calls_for("ChapterEvents")
    }
    assert "3" in asked  # the failed chapter is asked again (the others are cached answers)


async def test_a_long_chapter_is_read_in_windows_carrying_the_running_text(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    imported_novel(tmp_path)
    events, states = model.responders["ChapterEvents"], model.responders["ChapterState"]
    windows: dict[str, list[str]] = {"ChapterEvents": [], "ChapterState": []}

    def windowed(schema: str, answer: Any, running: str) -> Any:
        def respond(messages: Any) -> Any:
            text = prompt_text(messages)
            if "CURRENT CHAPTER (2)" not in text:
                return answer(messages)
            window = text.split("CURRENT CHAPTER (2):")[1][:120]
            seen = windows[schema]
            seen += [] if window in seen else [window]
            if schema == "ChapterState" and seen.index(window) == 2:
                return "no JSON"  # the state stream's third window of chapter 2 stays invalid
            found = dict(answer(messages))
            found[running] = f"chapter 2 window {seen.index(window) + 1}"
            return found

        return respond

    model.responders["ChapterEvents"] = windowed("ChapterEvents", events, "updated_running_summary")
    model.responders["ChapterState"] = windowed("ChapterState", states, "updated_running_profile")
    request: Any = {"novel": "the_river", "character": "Ada", "split": "train"}
    context = ArcBuildContext(
        data_dir=str(tmp_path), model="openai:scripted", max_chapter_chars=400
    )
    result = await build_graph().ainvoke(request, context=context)
    assert len(windows["ChapterEvents"]) == len(windows["ChapterState"]) == 3
    second = [prompt_text(m) for m in model.calls_for("ChapterEvents")]
    second = [p for p in second if "CURRENT CHAPTER (2)" in p]
    assert "event summary through 1" in second[0]  # the first window carries chapter 1's
    for k in range(1, len(second)):  # each later window carries the one before it
        assert f"chapter 2 window {k}" in second[k]
    folder = tmp_path / "novels/the_river/streams/ada"
    chapters = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    two = chapters[1]
    assert [e["event_id"] for e in two["events"]] == [
        f"ch2_evt{n:02d}" for n in range(1, 4)
    ]  # every window's events, numbered in order
    assert two["updated_running_summary"] == "chapter 2 window 3"
    kept = json.loads((folder / "states.jsonl").read_text().splitlines()[1])
    assert kept["updated_running_profile"] == "chapter 2 window 2"  # the last window read
    assert [d.split(" (rerun")[0] for d in result["degraded"]] == [
        "chapter 2: state stream (T13) degraded"
    ]
    third = [p for p in map(prompt_text, model.calls_for("ChapterState")) if "(3)" in p]
    assert "chapter 2 window 2" in third[0]  # chapter 3 goes on from the last window read


async def test_a_reconciliation_still_invalid_leaves_nothing_usable(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    imported_novel(tmp_path)
    model.responders["Reconciliation"] = lambda m: "I cannot merge these."
    request: Any = {"novel": "the_river", "character": "Ada", "split": "train"}
    with pytest.raises(NothingUsableError, match="nothing usable left: the reconciliation"):
        await build_graph().ainvoke(request, context=_context(tmp_path))
    assert load_arcs(tmp_path / "novels" / "the_river") == []


def test_the_schemas_leave_the_axis_type_to_the_list_it_sits_in() -> None:
    """The code knows an axis's type from its list: neither T14 nor T15 asks the model."""
    for schema in (induction_schema(6), reconciliation_schema(6)):
        text = json.dumps(schema.model_json_schema())
        assert "axis_type" not in text, schema.__name__


async def test_a_contradicting_axis_type_does_not_survive(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    """``final_intra_01`` answered with ``axis_type: relational`` is stored intrapersonal."""
    imported_novel(tmp_path)
    merged = model.responders["Reconciliation"]

    def contradicting(messages: Any) -> dict[str, Any]:
        answer: dict[str, Any] = merged(messages)
        for axis in answer["intrapersonal_axes"]:
            axis["axis_type"] = "relational"
        for axis in answer["relational_axes"]:
            axis["axis_type"] = "intrapersonal"
        return answer

    model.responders["Reconciliation"] = contradicting
    request: Any = {"novel": "the_river", "character": "Ada", "split": "train"}
    result = await build_graph().ainvoke(request, context=_context(tmp_path))
    kept = {a.axis_id: a.axis_type for a in arcs_of(result)}
    assert kept == {"final_intra_01": "intrapersonal", "final_rel_01": "relational"}
    critic_prompts = [prompt_text(m) for m in model.calls_for("CriticAnswer")]
    intra = [p for p in critic_prompts if "final_intra_01" in p]
    assert intra and all("AXIS TYPE: INTRAPERSONAL" in p for p in intra)
