"""The BOOKMARKS baselines (Vanilla, RICL, ETA) as graphs: contract, grounding, no future reads."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.errors import ConfigurationError, InputError
from personae.graphs.bookmarks import baseline_eta, baseline_ricl, baseline_vanilla
from personae.graphs.bookmarks.acting import ActingContext
from personae.graphs.bookmarks.baseline_eta import (
    ETA_COUNTERS,
    ETAContext,
    rebuild_point,
    update_chunks,
)
from personae.graphs.bookmarks.baseline_resources import (
    eta_profiles_for,
    forget_baseline_resources,
    scene_pairs_for,
)
from personae.graphs.bookmarks.baseline_ricl import RICLContext
from personae.graphs.bookmarks.baseline_vanilla import VanillaContext
from personae.memory.bookmarks.storyline import load_storyline
from personae.testing import ScriptedChatModel, override_models, prompt_text

MARKER = re.compile(r"\[(\d+)\]|thing number (\d+) ")
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
    return [int(a or b) for a, b in MARKER.findall(prompt_text(messages))]


def scripted() -> ScriptedChatModel:
    """A model whose answers carry the positions it saw, so leaks would show downstream.

    The actor names the last position in its prompt; the ETA extractor states the first and
    last positions of its chunk as ``[p]`` markers; the update joins the previous profile and
    the new chunk's profile, so the recurrence shows in the result.
    """

    def next_action(messages: list[BaseMessage]) -> dict[str, Any]:
        seen = markers(messages)
        return {"action": f"Alice answers after {max(seen) if seen else 'nothing'}."}

    def extracted(messages: list[BaseMessage]) -> dict[str, Any]:
        seen = markers(messages) or [-1]
        return {"profile": f"saw [{min(seen)}]-[{max(seen)}]"}

    def updated(messages: list[BaseMessage]) -> dict[str, Any]:
        text = prompt_text(messages)
        main = text.split("# Main Profile\n")[1].split("\n")[0]
        new = text.split("(From New Episodes)\n")[1].split("\n")[0]
        return {"profile": new if main == "[empty]" else f"{main} | {new}"}

    return ScriptedChatModel(
        responders={
            "NextAction": next_action,
            "ChunkProfile": extracted,
            "UpdatedProfile": updated,
        }
    )


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    """The scripted model, injected as ``openai:baselines`` for the run contexts."""
    chat = scripted()
    override_models(specs={"openai:baselines": chat})
    yield chat


@pytest.fixture
def story(tmp_path: Path) -> Path:
    """A 200-action storyline file."""
    return write_storyline(tmp_path / "garden.jsonl")


async def test_vanilla_acts_on_exactly_the_scene_before_the_target(
    model: ScriptedChatModel, story: Path
) -> None:
    context = VanillaContext(storyline_path=str(story), model="openai:baselines")
    result = await baseline_vanilla.graph.ainvoke(
        {"character": "Alice", "position": 120}, context=context
    )
    assert result["action"] == "Alice answers after 119."
    assert result["grounding"] == []
    assert result["stats"]["llm_calls"] == 1
    assert result["stats"]["input_tokens"] > 0
    (prompt,) = model.calls_for("NextAction")
    assert sorted(set(markers(prompt))) == list(range(110, 120))
    assert "of Alice in the following scene" in prompt_text(prompt)  # the released predictor


async def test_vanilla_scene_is_clipped_at_the_story_start(
    model: ScriptedChatModel, story: Path
) -> None:
    context = VanillaContext(storyline_path=str(story), model="openai:baselines", scene_size=4)
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
    context = VanillaContext(storyline_path=str(story), model="openai:baselines")
    with pytest.raises(InputError) as raised:
        await baseline_vanilla.graph.ainvoke(
            {"character": character, "position": position}, context=context
        )
    assert str(raised.value).startswith(message)
    assert model.calls == []


async def test_vanilla_reports_a_missing_storyline_file(
    model: ScriptedChatModel, tmp_path: Path
) -> None:
    context = VanillaContext(storyline_path=str(tmp_path / "nope.jsonl"), model="openai:baselines")
    with pytest.raises(InputError, match="nope.jsonl does not exist; check the path"):
        await baseline_vanilla.graph.ainvoke({"character": "Alice", "position": 5}, context=context)


def ricl_context(story: Path, memory: Path | None, **changes: Any) -> RICLContext:
    """A RICL run context on the scripted model."""
    return RICLContext(
        storyline_path=str(story),
        model="openai:baselines",
        fast_model="openai:baselines",
        memory_dir=str(memory) if memory else None,
        **changes,
    )


def grounded_positions(line: str) -> list[int]:
    """Positions shown in one ``Scene: ... → Action: ...`` line."""
    return list(dict.fromkeys(int(a or b) for a, b in MARKER.findall(line)))


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


def eta_context(story: Path, memory: Path | None, **changes: Any) -> ETAContext:
    """An ETA run context on the scripted model."""
    return ETAContext(
        storyline_path=str(story),
        model="openai:baselines",
        fast_model="openai:baselines",
        memory_dir=str(memory) if memory else None,
        **changes,
    )


def test_stores_are_opened_once_per_key_and_scoped_by_the_text(story: Path, tmp_path: Path) -> None:
    memory = str(tmp_path / "m")
    pairs = scene_pairs_for(str(story), memory, "Alice", 10)
    assert scene_pairs_for(str(story), memory, "Alice", 10) is pairs
    assert scene_pairs_for(str(story), memory, "Bob", 10) is not pairs
    assert scene_pairs_for(str(story), memory, "Alice", 5) is not pairs
    profiles = eta_profiles_for(str(story), memory)
    assert eta_profiles_for(str(story), memory) is profiles
    stat = story.stat()
    story.write_text(story.read_text().replace("number 7 ", "number seven "), encoding="utf-8")
    os.utime(story, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert eta_profiles_for(str(story), memory).directory != profiles.directory
    assert scene_pairs_for(str(story), memory, "Alice", 10).collection.name != pairs.collection.name
    forget_baseline_resources()
    assert eta_profiles_for(str(story), memory) is not profiles
    with pytest.raises(InputError, match="does not exist"):
        eta_profiles_for(str(tmp_path / "nope.jsonl"), memory)


def test_update_schedule_and_chunks() -> None:
    assert [rebuild_point(t, 16) for t in (0, 15, 16, 17, 31, 32, 100)] == [
        0,
        0,
        16,
        16,
        16,
        32,
        96,
    ]
    assert update_chunks(0, 0, 64) == []
    assert update_chunks(0, 16, 64) == [(0, 16)]
    assert update_chunks(0, 96, 64) == [(0, 64), (64, 96)]
    assert update_chunks(96, 112, 64) == [(96, 112)]
    assert update_chunks(32, 160, 64) == [(32, 96), (96, 160)]


def chunk_extents(model: ScriptedChatModel) -> list[tuple[int, int]]:
    """``(first, last)`` position shown in each extraction prompt, in call order."""
    return [(min(markers(m)), max(markers(m))) for m in model.calls_for("ChunkProfile")]


async def test_eta_updates_the_profile_recurrently(
    model: ScriptedChatModel, story: Path, tmp_path: Path
) -> None:
    context = eta_context(story, tmp_path / "m")
    first = await baseline_eta.graph.ainvoke(
        {"character": "Alice", "position": 100}, context=context
    )
    # The runner's maybe_update_profile: at the target itself, chunks [0, 64) then [64, 100).
    assert chunk_extents(model) == [(0, 63), (64, 99)]
    assert first["grounding"] == ["saw [0]-[63] | saw [64]-[99]"]
    stats = first["stats"]
    assert (stats["rebuild_point"], stats["profile_from"], stats["profile_updated"]) == (100, 0, 1)
    assert (stats["chunks_extracted"], stats["chunks_reused"]) == (2, 0)
    assert (stats["actions_read"], stats["actions_from_scratch"]) == (100, 100)
    assert stats["llm_calls"] == 5  # two extractions, two updates, one action
    first_update = prompt_text(model.calls_for("UpdatedProfile")[0])
    assert "# Main Profile\n[empty]" in first_update

    same_point = await baseline_eta.graph.ainvoke(  # 15 actions later: not due yet
        {"character": "Alice", "position": 115}, context=context
    )
    assert same_point["grounding"] == first["grounding"]
    assert same_point["stats"]["profile_updated"] == 0
    assert same_point["stats"]["llm_calls"] == 1
    usage_keys = {"llm_calls", "input_tokens", "output_tokens"}
    assert set(first["stats"]) == set(same_point["stats"]) == set(ETA_COUNTERS) | usage_keys

    next_point = await baseline_eta.graph.ainvoke(
        {"character": "Alice", "position": 117}, context=context
    )
    # Recurrent: the previous profile plus the new actions [100, 117) only, never a rebuild.
    assert chunk_extents(model)[2:] == [(100, 116)]
    assert next_point["stats"]["profile_from"] == 100 and next_point["stats"]["actions_read"] == 17
    update = prompt_text(model.calls_for("UpdatedProfile")[-1])
    assert update.startswith("# Main Profile\nsaw [0]-[63] | saw [64]-[99]\n")
    assert "(From New Episodes)\nsaw [100]-[116]" in update
    assert next_point["grounding"] == ["saw [0]-[63] | saw [64]-[99] | saw [100]-[116]"]


def runner_update_points(targets: list[int], update_every: int = 16) -> list[int]:
    """The released runner's src/bookmarks/benchmark.py, maybe_update_profile: the targets (in
    story order) at which it updates one character's profile (profile_indices from 0)."""
    points, profile_idx = [], 0
    for idx in targets:
        if idx - profile_idx < update_every:
            continue
        points.append(idx)
        profile_idx = idx
    return points


async def test_eta_updates_at_the_runners_points_and_reads_every_chunk(
    model: ScriptedChatModel, tmp_path: Path
) -> None:
    rows = [
        {"character": "Other", "action": f"Someone waits, thing number {i} "} for i in range(70)
    ]
    rows += [
        {"character": "Carol", "action": f"Carol sings thing number {i} "} for i in range(70, 140)
    ]
    story = tmp_path / "carol.jsonl"
    story.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    context = eta_context(story, tmp_path / "m")
    targets = [10, 20, 30, 37, 50, 100, 101, 117, 139]
    updated = []
    for target in targets:
        result = await baseline_eta.graph.ainvoke(
            {"character": "Carol", "position": target}, context=context
        )
        if result["stats"]["profile_updated"]:
            updated.append(target)
        if target == 10:  # nothing yet: the runner's starting "[empty]" grounds the actor
            assert result["grounding"] == ["[empty]"]
    assert updated == runner_update_points(targets) == [20, 37, 100, 117, 139]
    # Every chunk, the ones without Carol too (the runner reads them all), up to each target.
    assert chunk_extents(model)[:3] == [(0, 19), (20, 36), (37, 99)]


async def test_eta_before_the_first_update_grounds_on_the_empty_profile(
    model: ScriptedChatModel, story: Path
) -> None:
    result = await baseline_eta.graph.ainvoke(
        {"character": "Bob", "position": 15}, context=eta_context(story, None)
    )
    assert result["grounding"] == ["[empty]"]  # the runner's profile before any update
    assert result["stats"]["rebuild_point"] == 0
    assert result["stats"]["llm_calls"] == 1
    assert [name for name, _ in model.calls] == ["NextAction"]


async def test_a_grid_profile_skips_chunks_without_the_character(
    model: ScriptedChatModel, tmp_path: Path
) -> None:
    """Ours (``bookmarks-personae`` with a profile): the fixed grid, observed chunks only."""
    rows = [
        {"character": "Other", "action": f"Someone waits, thing number {i} "} for i in range(64)
    ]
    rows += [
        {"character": "Carol", "action": f"Carol sings thing number {i} "} for i in range(64, 104)
    ]
    story = tmp_path / "carol.jsonl"
    story.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    result = await baseline_eta.profile_at(
        str(story), None, character="Carol", target=100, model=model, schedule="grid"
    )
    assert chunk_extents(model) == [(64, 95)]
    assert result.stats["chunks_skipped"] == 1 and result.stats["rebuild_point"] == 96
    assert result.profile == "saw [64]-[95]"


ALL_METHODS: list[tuple[Any, Any]] = [
    (baseline_vanilla.graph, VanillaContext),
    (baseline_ricl.graph, RICLContext),
    (baseline_eta.graph, ETAContext),
]


@pytest.mark.parametrize(("graph", "context_type"), ALL_METHODS, ids=["vanilla", "ricl", "eta"])
async def test_no_prompt_ever_shows_an_action_at_or_after_the_target(
    model: ScriptedChatModel, story: Path, tmp_path: Path, graph: Any, context_type: Any
) -> None:
    context: ActingContext = context_type(
        storyline_path=str(story),
        model="openai:baselines",
        fast_model="openai:baselines",
        memory_dir=str(tmp_path / "m"),
    )
    targets = [150, 40, 97, 199, 16, 63, 64, 180, 1, 120]
    seen_before = 0
    for character_index, target in enumerate(targets):
        character = ("Alice", "Bob")[character_index % 2]
        result = await graph.ainvoke({"character": character, "position": target}, context=context)
        prompts = [messages for _, messages in model.calls[seen_before:]]
        seen_before = len(model.calls)
        assert prompts, "every run calls the actor"
        shown = [p for messages in prompts for p in markers(messages)]
        assert shown and max(shown) < target, (target, max(shown))
        assert all(
            max(grounded_positions(line), default=-1) < target for line in result["grounding"]
        )


async def test_memory_survives_fresh_stores_on_the_same_directory(
    model: ScriptedChatModel, story: Path, tmp_path: Path
) -> None:
    memory = tmp_path / "m"
    ricl = await baseline_ricl.graph.ainvoke(
        {"character": "Alice", "position": 150}, context=ricl_context(story, memory)
    )
    eta = await baseline_eta.graph.ainvoke(
        {"character": "Alice", "position": 150}, context=eta_context(story, memory)
    )
    forget_baseline_resources()
    model.calls.clear()
    ricl_again = await baseline_ricl.graph.ainvoke(
        {"character": "Alice", "position": 150}, context=ricl_context(story, memory)
    )
    eta_again = await baseline_eta.graph.ainvoke(
        {"character": "Alice", "position": 159}, context=eta_context(story, memory)
    )
    assert ricl_again["stats"]["pairs_indexed"] == 0
    assert ricl_again["grounding"] == ricl["grounding"]
    assert eta_again["stats"]["profile_updated"] == 0
    assert eta_again["grounding"] == eta["grounding"]
    assert [name for name, _ in model.calls] == ["NextAction", "NextAction"]


async def test_a_checkpointed_thread_reports_each_runs_own_stats(
    model: ScriptedChatModel, story: Path
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    graph = baseline_eta.build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "alice"}}
    context = eta_context(story, None)
    first = await graph.ainvoke({"character": "Alice", "position": 40}, config, context=context)
    second = await graph.ainvoke({"character": "Alice", "position": 41}, config, context=context)
    assert first["stats"]["llm_calls"] == 3  # chunk [0, 32): extract, update; act
    assert second["stats"]["llm_calls"] == 1
    assert second["stats"]["profile_updated"] == 0


async def test_all_baselines_on_the_shared_haruhi_storyline(
    model: ScriptedChatModel, shared_dir: Path, tmp_path: Path
) -> None:
    path = shared_dir / "data" / "bookmarks" / "title2action_series.haruhi.json"
    storyline = load_storyline(path)
    _, test = storyline.test_split("Kyon")
    target = test[0]
    for graph, context_type in ALL_METHODS:
        context = context_type(
            storyline_path=str(path),
            model="openai:baselines",
            fast_model="openai:baselines",
            memory_dir=str(tmp_path / "m"),
        )
        before = len(model.calls)
        result = await graph.ainvoke({"character": "Kyon", "position": target}, context=context)
        shown = [p for _, messages in model.calls[before:] for p in markers(messages)]
        assert max(shown) == target - 1
        assert result["action"] == f"Alice answers after {target - 1}."
    ricl_lines = await baseline_ricl.graph.ainvoke(
        {"character": "Kyon", "position": target},
        context=ricl_context(path, tmp_path / "m"),
    )
    assert len(ricl_lines["grounding"]) == 8
    assert all("(Kyon)" in line.split(" → Action: ")[1] for line in ricl_lines["grounding"])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: VanillaContext(storyline_path="s", scene_size=0),
            "VanillaContext.scene_size is 0",
        ),
        (lambda: RICLContext(storyline_path="s", k_pairs=0), "RICLContext.k_pairs is 0"),
        (lambda: ETAContext(storyline_path="s", chunk=-64), "ETAContext.chunk is -64"),
        (lambda: ETAContext(storyline_path="s", rebuild_every=0), "rebuild_every is 0"),
    ],
)
def test_unusable_settings_are_rejected_with_the_field_name(make: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as raised:
        make()
    assert "set " in str(raised.value) and ">= 1" in str(raised.value)


async def test_characters_run_concurrently_on_one_memory_directory(
    model: ScriptedChatModel, story: Path, tmp_path: Path
) -> None:
    async def run(graph: Any, context: Any, character: str) -> list[dict[str, Any]]:
        return [
            await graph.ainvoke({"character": character, "position": target}, context=context)
            for target in (120, 137, 160)
        ]

    for graph, context in (
        (baseline_ricl.graph, ricl_context(story, tmp_path / "m")),
        (baseline_eta.graph, eta_context(story, tmp_path / "m")),
    ):
        alice, bob = await asyncio.gather(run(graph, context, "Alice"), run(graph, context, "Bob"))
        for results in (alice, bob):
            for result, target in zip(results, (120, 137, 160), strict=True):
                shown = [max(grounded_positions(g), default=-1) for g in result["grounding"]]
                assert max(shown, default=-1) < target
        assert alice[-1]["grounding"] and bob[-1]["grounding"]
    bob_pairs = await baseline_ricl.graph.ainvoke(
        {"character": "Bob", "position": 160}, context=ricl_context(story, tmp_path / "m")
    )
    storyline = load_storyline(story)
    for line in bob_pairs["grounding"]:
        assert storyline.actions[grounded_positions(line)[-1]].by("Bob")
