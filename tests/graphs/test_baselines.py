"""The BOOKMARKS baselines (Vanilla, RICL, ETA) as graphs: contract, grounding, no future reads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.errors import InputError
from personae.graphs import baseline_ricl, baseline_vanilla
from personae.graphs.baseline_ricl import RICLContext
from personae.graphs.baseline_vanilla import VanillaContext
from personae.llm import register_model, unregister_model
from personae.memory.storyline import load_storyline
from personae.testing import ScriptedChatModel, prompt_text

MARKER = re.compile(r"\[(\d+)\]")
NAMES = ("Alice", "Bob", "Other", "Environment")


def write_storyline(path: Path, size: int = 200) -> Path:
    """A JSONL storyline: Alice and Bob alternate with Other/Environment, chapters of 50."""
    rows = []
    for position in range(size):
        who = NAMES[position % 4] if position % 7 else "Alice"
        rows.append(
            {
                "chapter": f"chapter {position // 50 + 1}",
                "character": who,
                "action": f"{who} does thing number {position} near the garden",
            }
        )
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    return path


def markers(messages: list[BaseMessage]) -> list[int]:
    """Every ``[position]`` marker a prompt shows (``StoryAction.render`` prints them)."""
    return [int(found) for found in MARKER.findall(prompt_text(messages))]


def scripted() -> ScriptedChatModel:
    """A model that answers the actor with an action naming the last position it saw."""

    def next_action(messages: list[BaseMessage]) -> dict[str, Any]:
        seen = markers(messages)
        return {"action": f"Alice answers after {max(seen) if seen else 'nothing'}."}

    return ScriptedChatModel(responders={"NextAction": next_action})


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    """The scripted model, registered as ``registered:baselines`` for the run contexts."""
    chat = scripted()
    register_model("baselines", chat)
    yield chat
    unregister_model("baselines")


@pytest.fixture
def story(tmp_path: Path) -> Path:
    """A 200-action storyline file."""
    return write_storyline(tmp_path / "garden.jsonl")


async def test_vanilla_acts_on_exactly_the_scene_before_the_target(
    model: ScriptedChatModel, story: Path
) -> None:
    context = VanillaContext(storyline_path=str(story), model="registered:baselines")
    result = await baseline_vanilla.graph.ainvoke(
        {"character": "Alice", "position": 120}, context=context
    )
    assert result["action"] == "Alice answers after 119."
    assert result["grounding"] == []
    assert result["stats"]["llm_calls"] == 1
    assert result["stats"]["input_tokens"] > 0
    (prompt,) = model.calls_for("NextAction")
    assert sorted(set(markers(prompt))) == list(range(110, 120))
    assert "You are Alice" in prompt_text(prompt)


async def test_vanilla_scene_is_clipped_at_the_story_start(
    model: ScriptedChatModel, story: Path
) -> None:
    context = VanillaContext(storyline_path=str(story), model="registered:baselines", scene_size=4)
    result = await baseline_vanilla.graph.ainvoke(
        {"character": "Bob", "position": 2}, context=context
    )
    assert result["action"] == "Alice answers after 1."
    assert sorted(set(markers(model.calls_for("NextAction")[0]))) == [0, 1]


@pytest.mark.parametrize(
    ("character", "position", "message"),
    [
        ("Zed", 10, "unknown character 'Zed' in garden; pick one of: Alice, Bob"),
        ("Other", 10, "unknown character 'Other'"),
        ("Alice", 200, "position 200 is out of range for garden (200 actions)"),
        ("Alice", -1, "position -1 is out of range"),
    ],
)
async def test_vanilla_rejects_bad_targets_before_any_model_call(
    model: ScriptedChatModel, story: Path, character: str, position: int, message: str
) -> None:
    context = VanillaContext(storyline_path=str(story), model="registered:baselines")
    with pytest.raises(InputError) as raised:
        await baseline_vanilla.graph.ainvoke(
            {"character": character, "position": position}, context=context
        )
    assert str(raised.value).startswith(message)
    assert model.calls == []


async def test_vanilla_reports_a_missing_storyline_file(
    model: ScriptedChatModel, tmp_path: Path
) -> None:
    context = VanillaContext(
        storyline_path=str(tmp_path / "nope.jsonl"), model="registered:baselines"
    )
    with pytest.raises(InputError, match="nope.jsonl does not exist; check the path"):
        await baseline_vanilla.graph.ainvoke({"character": "Alice", "position": 5}, context=context)


def ricl_context(story: Path, memory: Path | None, **changes: Any) -> RICLContext:
    """A RICL run context on the scripted model."""
    return RICLContext(
        storyline_path=str(story),
        model="registered:baselines",
        fast_model="registered:baselines",
        memory_dir=str(memory) if memory else None,
        **changes,
    )


def grounded_positions(line: str) -> list[int]:
    """Positions shown in one ``Scene: ... → Action: ...`` line."""
    return [int(found) for found in MARKER.findall(line)]


async def test_ricl_grounds_on_k_past_pairs_of_the_character(
    model: ScriptedChatModel, story: Path, tmp_path: Path
) -> None:
    result = await baseline_ricl.graph.ainvoke(
        {"character": "Alice", "position": 150}, context=ricl_context(story, tmp_path / "m")
    )
    assert len(result["grounding"]) == 8
    storyline = load_storyline(story)
    actions = []
    for line in result["grounding"]:
        assert line.startswith("Scene: [") and " → Action: [" in line
        shown = grounded_positions(line)
        action = shown[-1]
        actions.append(action)
        assert storyline.actions[action].by("Alice")
        assert shown[:-1] == list(range(max(0, action - 10), action))
        assert action < 150
    assert actions == sorted(actions)
    assert result["stats"]["pairs_retrieved"] == 8
    alice_before = [p for p in storyline.positions_of("Alice") if 0 < p < 150]
    assert result["stats"]["pairs_indexed"] == len(alice_before)
    assert result["stats"]["llm_calls"] == 1
    (prompt,) = model.calls_for("NextAction")
    assert all(line in prompt_text(prompt) for line in result["grounding"])


async def test_ricl_indexes_incrementally_and_never_retrieves_at_or_after_the_target(
    model: ScriptedChatModel, story: Path, tmp_path: Path
) -> None:
    context = ricl_context(story, tmp_path / "m", k_pairs=50)
    later = await baseline_ricl.graph.ainvoke(
        {"character": "Bob", "position": 180}, context=context
    )
    earlier = await baseline_ricl.graph.ainvoke(
        {"character": "Bob", "position": 60}, context=context
    )
    again = await baseline_ricl.graph.ainvoke(
        {"character": "Bob", "position": 181}, context=context
    )
    assert later["stats"]["pairs_indexed"] > 0
    assert earlier["stats"]["pairs_indexed"] == 0
    assert again["stats"]["pairs_indexed"] == 0
    bob_before_60 = [p for p in load_storyline(story).positions_of("Bob") if 0 < p < 60]
    assert earlier["stats"]["pairs_retrieved"] == len(bob_before_60)
    assert max(max(grounded_positions(line)) for line in earlier["grounding"]) < 60
    assert max(max(grounded_positions(line)) for line in later["grounding"]) < 180


async def test_ricl_at_the_story_start_has_nothing_to_recall(
    model: ScriptedChatModel, story: Path
) -> None:
    result = await baseline_ricl.graph.ainvoke(
        {"character": "Alice", "position": 0}, context=ricl_context(story, None)
    )
    assert result["grounding"] == []
    assert result["stats"]["pairs_retrieved"] == 0
    assert result["action"] == "Alice answers after nothing."
