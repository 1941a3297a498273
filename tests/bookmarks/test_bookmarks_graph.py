"""The BOOKMARKS graph end to end: real sync operators, real Chroma bank on disk, scripted LLM.

Every step run through :func:`step` also audits the invariant: no prompt of that step showed a
``[p]`` at or after the step's target.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bookmarks_world import (
    NAMES,
    future_reads,
    latest_marker,
    scripted_model,
    scripted_model_as,
    stored_bank,
    write_storyline,
)
from langgraph.checkpoint.memory import InMemorySaver

from personae.errors import ConfigurationError, InputError
from personae.graphs.bookmarks.graph import BookmarksContext, build_graph, graph
from personae.graphs.bookmarks.sync import SyncSettings
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import BookmarkType
from personae.testing import ScriptedChatModel, prompt_text

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    with scripted_model_as("bm-test") as scripted:
        yield scripted


@pytest.fixture
def story(tmp_path: Path) -> Path:
    path: Path = write_storyline(tmp_path / "club.jsonl")
    return path


def context(story: Path, memory: Path, **changes: Any) -> BookmarksContext:
    return BookmarksContext(
        storyline_path=str(story),
        memory_dir=str(memory),
        model="openai:bm-test",
        fast_model="openai:bm-test",
        **{"prompts": "personae", **changes},  # ours; the released prompts: test_released_*
    )


async def step(
    run_context: BookmarksContext, model: ScriptedChatModel, character: str, position: int
) -> dict[str, Any]:
    """One graph step; fails if any prompt of the step showed a position >= the target."""
    before = len(model.calls)
    result: dict[str, Any] = await graph.ainvoke(
        {"character": character, "position": position}, context=run_context
    )
    assert future_reads(model.calls[before:], position) == []
    assert all(latest_marker(line) < position for line in result["grounding"])
    assert result["stats"]["llm_calls"] == len(model.calls) - before
    return result


def bank_at(memory: Path) -> BookmarkBank:
    """The bank of the ``club.jsonl`` storyline beside ``memory`` (the ``story`` fixture)."""
    return stored_bank(memory.parent / "club.jsonl", memory)


async def test_first_step_creates_three_typed_bookmarks_synced_from_scratch(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    result = await step(context(story, tmp_path / "mem"), model, "Haruhi", 40)
    stats = result["stats"]
    assert (stats["new"], stats["reuse"], stats["derive"]) == (3, 0, 0)
    assert stats["actions_read"] == stats["actions_from_scratch"] > 40
    # propose, 1 state chunk, 8 evidence checks (one per action of Haruhi before 40, as the
    # released code) + 1 behavior summary, 1 concept summary, act
    assert stats["llm_calls"] == 13 and not model.calls_for("MatchChoice")
    assert len(model.calls_for("EvidenceVerdicts")) == 8
    assert stats["input_tokens"] > 0 and stats["output_tokens"] > 0
    assert result["action"] == "Haruhi smiles at the brigade."
    stored = bank_at(tmp_path / "mem").all()
    assert [(b.type, b.position) for b in stored] == [
        (BookmarkType.BEHAVIORAL, 40),
        (BookmarkType.STATE, 40),
        (BookmarkType.CONCEPT, 40),
    ]
    assert stored[2].keyword == "Kyon"
    assert result["grounding"] == [
        "Q: How does Haruhi usually treat the club? A: behavior seen through [36]",
        "Q: Where is Haruhi now and who is with them? A: as of [39] in the club room",
        "Q: Who is Kyon to Haruhi? A: concept seen through [39]",
    ]
    assert [b["id"] for b in result["bookmarks"]] == ["bm-0", "bm-1", "bm-2"]
    actor_prompt = prompt_text(model.calls_for("NextAction")[0])
    assert "\nQ: Where is Haruhi now and who is with them? A: as of [39]" in actor_prompt


async def test_second_step_reuses_and_reads_only_the_unseen_suffix(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    run_context = context(story, tmp_path / "mem")
    await step(run_context, model, "Haruhi", 40)
    result = await step(run_context, model, "Haruhi", 48)
    stats = result["stats"]
    assert (stats["new"], stats["reuse"], stats["derive"]) == (0, 3, 0)
    assert stats["actions_read"] < stats["actions_from_scratch"] / 2
    stored = bank_at(tmp_path / "mem").all()
    assert len(stored) == 3 and {b.position for b in stored} == {48}
    state = stored[1]
    assert [(v.position, v.answer) for v in state.history][-2:] == [
        (40, "as of [39] in the club room"),
        (48, "as of [47] in the club room"),
    ]
    # the state chunk of this step showed only [40, 48)
    chunk = prompt_text(model.calls_for("StateUpdate")[-1])
    shown = chunk.split("## New chunk")[-1]
    assert "[40]" in shown and "[47]" in shown and "[39]" not in shown


async def test_derive_starts_from_the_parent_answer_at_the_parent_position(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    run_context = context(story, tmp_path / "mem")
    await step(run_context, model, "Haruhi", 40)
    model.responders["ProposedQuestions"] = lambda m: {
        "questions": [{"type": "state", "question": "Who is with Haruhi in the club room?"}]
    }
    result = await step(run_context, model, "Haruhi", 56)
    assert (result["stats"]["derive"], result["stats"]["new"]) == (1, 0)
    child = bank_at(tmp_path / "mem").get("bm-3")
    assert (child.parent_id, child.type, child.position) == ("bm-1", BookmarkType.STATE, 56)
    # The child's first answer is a model call on the parent's answer (not a copy of it) ...
    (derive_prompt,) = model.calls_for("DerivedAnswer")
    text = prompt_text(derive_prompt)
    assert "# Existing bookmark query\nWhere is Haruhi now and who is with them?" in text
    assert "# Existing bookmark answer\nas of [39] in the club room" in text
    assert "# New bookmark query\nWho is with Haruhi in the club room?" in text
    derived = "derived from: as of [39] in the club room"
    parent = bank_at(tmp_path / "mem").get("bm-1")
    assert derived != parent.answer_at(40)  # generated from the parent's answer, not copied
    assert [(v.position, v.answer) for v in child.history] == [
        (40, derived),
        (56, "as of [55] in the club room"),
    ]
    # ... and the sync from the parent's position starts from it.
    first_chunk = prompt_text(model.calls_for("StateUpdate")[-1])
    assert derived in first_chunk
    assert result["stats"]["actions_read"] == 16  # the derived state read [40, 56) only
    assert result["stats"]["actions_from_scratch"] == 56
    assert bank_at(tmp_path / "mem").get("bm-1").position == 40  # the parent is untouched


async def test_no_future_read_for_targets_in_and_out_of_story_order(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    run_context = context(story, tmp_path / "mem")
    for character, target in [
        ("Haruhi", 30),
        ("Kyon", 61),
        ("Haruhi", 90),
        ("Kyon", 150),  # far ahead first ...
        ("Haruhi", 52),  # ... then earlier targets: answers synced past them must not leak
        ("Kyon", 21),
        ("Nagato", 151),
        ("Nagato", 2),
    ]:
        result = await step(run_context, model, character, target)
        # steps run one at a time, so nothing grounding a step was synced past its target
        assert all(b["position"] <= target for b in result["bookmarks"])
        assert all(latest_marker(b["answer"]) < target for b in result["bookmarks"])
        assert result["grounding"] == [
            f"Q: {b['question']} A: {b['answer']}" for b in result["bookmarks"]
        ]
    stored = bank_at(tmp_path / "mem").all()
    assert max(b.position for b in stored) == 151
    early = [b for b in stored if b.character == "Kyon" and b.position == 21]
    assert early, "the earlier Kyon target got bookmarks of its own"


async def test_near_bookmarks_ground_but_not_other_characters_behavior(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    run_context = context(story, tmp_path / "mem")
    kyon = await step(run_context, model, "Kyon", 45)
    haruhi = await step(run_context, model, "Haruhi", 48)
    kyon_ids = {b["id"]: b["type"] for b in kyon["bookmarks"]}
    grounded = {b["id"] for b in haruhi["bookmarks"]}
    assert {i for i, t in kyon_ids.items() if t == "state"} <= grounded
    assert not {i for i, t in kyon_ids.items() if t == "behavioral"} & grounded
    assert len(haruhi["grounding"]) == len(set(haruhi["grounding"]))


async def test_unknown_answers_are_recorded_and_not_asked_again(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    model.responders["StateUpdate"] = lambda m: {"operation": "no_change", "answer": "unchanged"}
    run_context = context(story, tmp_path / "mem")
    first = await step(run_context, model, "Haruhi", 40)
    assert not any("Where is Haruhi" in line for line in first["grounding"])
    files = list((tmp_path / "mem").glob("unknown-*.json"))
    assert len(files) == 1
    assert json.loads(files[0].read_text()) == {
        "Haruhi": [{"question": "Where is Haruhi now and who is with them?", "position": 40}]
    }
    second = await step(run_context, model, "Haruhi", 48)
    prompt = prompt_text(model.calls_for("ProposedQuestions")[1])
    assert "- Where is Haruhi now and who is with them?" in prompt
    assert (second["stats"]["reuse"], second["stats"]["new"]) == (2, 0)  # the re-ask was dropped
    assert len(bank_at(tmp_path / "mem")) == 3


async def test_bad_character_and_position_are_clear_input_errors(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    run_context = context(story, tmp_path / "mem")
    with pytest.raises(InputError, match="unknown character 'Koizumi'.*pick one of: "):
        await graph.ainvoke({"character": "Koizumi", "position": 3}, context=run_context)
    with pytest.raises(InputError, match="position 160 is out of range"):
        await graph.ainvoke({"character": "Kyon", "position": 160}, context=run_context)
    with pytest.raises(InputError, match="does not exist"):
        await graph.ainvoke(
            {"character": "Kyon", "position": 3},
            context=context(tmp_path / "missing.jsonl", tmp_path / "mem"),
        )
    assert not model.calls


async def test_checkpointed_thread_counts_each_step_on_its_own(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    compiled = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "one"}}
    run_context = context(story, tmp_path / "mem")
    first = await compiled.ainvoke(
        {"character": "Haruhi", "position": 40}, config, context=run_context
    )
    second = await compiled.ainvoke(
        {"character": "Haruhi", "position": 48}, config, context=run_context
    )
    assert first["stats"]["new"] == 3
    assert (second["stats"]["reuse"], second["stats"]["new"]) == (3, 0)
    assert second["stats"]["actions_read"] < first["stats"]["actions_read"]


RESTART_SCRIPT = """
import asyncio, json, sys
sys.path.insert(0, {tests!r})
from bookmarks_world import scripted_model
from personae.graphs.bookmarks.graph import BookmarksContext, graph
from personae.testing import override_models
override_models(scripted_model())
context = BookmarksContext(storyline_path={story!r}, memory_dir={memory!r},
    model="openai:bm-test", fast_model="openai:bm-test", prompts="personae")
result = asyncio.run(graph.ainvoke({{"character": "Haruhi", "position": 40}}, context=context))
print(json.dumps(result["stats"]))
"""


@pytest.mark.slow
async def test_memory_survives_a_process_restart(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    memory = tmp_path / "mem"
    script = RESTART_SCRIPT.format(tests=str(TESTS), story=str(story), memory=str(memory))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["new"] == 3
    stored = bank_at(memory).all()
    assert [b.position for b in stored] == [40, 40, 40]
    result = await step(context(story, memory), model, "Haruhi", 48)
    assert (result["stats"]["reuse"], result["stats"]["new"]) == (3, 0)
    assert result["stats"]["actions_read"] < result["stats"]["actions_from_scratch"] / 2
    assert {b.position for b in bank_at(memory).all()} == {48}


async def test_concurrent_steps_sharing_a_bookmark_keep_positions_forward(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    model.responders["ProposedQuestions"] = lambda m: {
        "questions": [{"type": "state", "question": "Where is the whole brigade?"}]
    }
    run_context = context(story, tmp_path / "mem")
    await step(run_context, model, "Haruhi", 40)
    before = len(model.calls)
    later, earlier = await asyncio.gather(
        graph.ainvoke({"character": "Kyon", "position": 90}, context=run_context),
        graph.ainvoke({"character": "Nagato", "position": 70}, context=run_context),
    )
    assert (later["stats"]["reuse"], earlier["stats"]["reuse"]) == (1, 1)
    assert later["stats"]["llm_calls"] + earlier["stats"]["llm_calls"] == len(model.calls) - before
    assert future_reads(model.calls[before:], 90) == []
    assert latest_marker(earlier["grounding"][0]) < 70
    assert later["grounding"] == ["Q: Where is the whole brigade? A: as of [89] in the club room"]
    assert earlier["grounding"][0].startswith("Q: Where is the whole brigade? A: as of [")
    [stored] = bank_at(tmp_path / "mem").all()
    assert stored.position == 90
    assert stored.answer_at(70) in {"as of [39] in the club room", "as of [69] in the club room"}


async def test_settings_are_checked_and_zero_candidates_means_always_new(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    assert context(story, tmp_path / "mem").sync_settings() == SyncSettings(prompts="personae")
    assert context(story, tmp_path / "mem", incremental_behavior=True).sync_settings() == (
        SyncSettings(prompts="personae", incremental_behavior=True)
    )
    # The operators' sizes are the released runner's, derived: a run naming one is told so.
    with pytest.raises(ConfigurationError, match="'state_chunk' is no longer set by a run"):
        context(story, tmp_path / "mem", state_chunk=0)
    with pytest.raises(ConfigurationError, match="near_window must not be negative"):
        context(story, tmp_path / "mem", near_window=-1)
    ablation = context(story, tmp_path / "mem", k_candidates=0, near_window=0)
    await step(ablation, model, "Haruhi", 40)
    second = await step(ablation, model, "Haruhi", 48)
    assert (second["stats"]["new"], second["stats"]["reuse"]) == (3, 0)
    assert second["stats"]["actions_read"] == second["stats"]["actions_from_scratch"]
    assert len(bank_at(tmp_path / "mem")) == 6


async def test_an_unknown_found_later_is_not_shown_to_an_earlier_target(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    """`act` at an earlier position on a bench's memory must not learn that a question stays
    unanswerable further on."""
    model.responders["StateUpdate"] = lambda m: {"operation": "no_change", "answer": "unchanged"}
    run_context = context(story, tmp_path / "mem")
    await step(run_context, model, "Haruhi", 80)
    await step(run_context, model, "Haruhi", 40)
    earlier = prompt_text(model.calls_for("ProposedQuestions")[1])
    assert "Where is Haruhi now and who is with them?" not in earlier.split("## The scene")[0]
    await step(run_context, model, "Haruhi", 88)
    later = prompt_text(model.calls_for("ProposedQuestions")[2])
    assert "- Where is Haruhi now and who is with them?" in later


async def test_ablations_no_derive_no_reuse_and_no_near(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    no_derive = context(story, tmp_path / "a", derive=False)
    await step(no_derive, model, "Haruhi", 40)
    model.responders["ProposedQuestions"] = lambda m: {
        "questions": [{"type": "state", "question": "Who is with Haruhi in the club room?"}]
    }
    result = await step(no_derive, model, "Haruhi", 56)
    assert (result["stats"]["derive"], result["stats"]["new"]) == (0, 1)
    assert not model.calls_for("DerivedAnswer")
    assert bank_at(tmp_path / "a").get("bm-3").parent_id is None
    assert result["stats"]["actions_from_scratch"] == result["stats"]["actions_read"] == 56

    no_reuse = context(story, tmp_path / "b", k_candidates=0)
    await step(no_reuse, model, "Haruhi", 40)
    matched = len(model.calls_for("MatchChoice"))
    again = await step(no_reuse, model, "Haruhi", 48)
    assert (again["stats"]["reuse"], again["stats"]["new"]) == (0, 1)
    assert len(model.calls_for("MatchChoice")) == matched  # K' = 0: no candidate to match

    model.responders["ProposedQuestions"] = scripted_model().responders["ProposedQuestions"]
    near, no_near = context(story, tmp_path / "c"), context(story, tmp_path / "d", near_window=0)
    for run_context in (near, no_near):
        await step(run_context, model, "Kyon", 44)
    with_near = await step(near, model, "Haruhi", 45)
    without = await step(no_near, model, "Haruhi", 45)
    # near: Kyon's state bookmark synced at 44 grounds Haruhi too; without: only her own three
    assert len(with_near["bookmarks"]) == 4 and len(without["bookmarks"]) == 3


async def test_with_profile_grounds_on_the_running_eta_profile_first(
    story: Path, tmp_path: Path, model: ScriptedChatModel
) -> None:
    result = await step(context(story, tmp_path / "mem", with_profile=True), model, "Haruhi", 40)
    assert result["grounding"][0] == "Profile: profiled through [31]"  # update point 32
    assert result["grounding"][1].startswith("Q: ")
    assert len(model.calls_for("ChunkProfile")) == len(model.calls_for("UpdatedProfile")) == 1
    plain = await step(context(story, tmp_path / "off"), model, "Haruhi", 40)
    assert not any(line.startswith("Profile:") for line in plain["grounding"])


async def test_hidden_title_and_utterance_format_reach_every_prompt(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    (tmp_path / "band2members.json").write_text(json.dumps({"club": list(NAMES)}))
    result = await step(context(story, tmp_path / "mem"), model, "Haruhi", 40)  # title hidden
    assert result["action"] == "Haruhi: Haruhi smiles at the brigade."  # utterance prefix
    assert not any('"club"' in prompt_text(messages) for _, messages in model.calls)
    assert "(A concise sentence, Haruhi: ...)" in prompt_text(model.calls_for("NextAction")[0])
    assert "next utterance" in prompt_text(model.calls_for("ProposedQuestions")[0])
    model.calls.clear()
    shown = await step(context(story, tmp_path / "m2", hide_title=False), model, "Haruhi", 40)
    assert shown["action"] and 'the story "club"' in prompt_text(model.calls_for("NextAction")[0])


async def test_a_step_writes_the_bank_once_and_a_failed_step_writes_nothing(
    story: Path, tmp_path: Path, model: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[list[str]] = []
    real_write = BookmarkBank._write

    def counted(bank: BookmarkBank, bookmarks: list[Any]) -> None:
        writes.append([b.id for b in bookmarks])
        real_write(bank, bookmarks)

    monkeypatch.setattr(BookmarkBank, "_write", counted)
    run_context = context(story, tmp_path / "mem")
    await step(run_context, model, "Haruhi", 40)  # three new bookmarks
    await step(run_context, model, "Haruhi", 48)  # three reused ones
    assert writes == [["bm-0", "bm-1", "bm-2"], ["bm-0", "bm-1", "bm-2"]]

    def broken(messages: Any) -> Any:
        raise RuntimeError("the model went away")

    model.responders["ConceptAnswer"] = broken  # the concept sync fails after the others ran
    model.responders["ProposedQuestions"] = lambda m: {
        "questions": [
            {"type": "state", "question": "What is the weather like today?"},
            {"type": "concept", "question": "Who is Kyon to Haruhi?", "keyword": "Kyon"},
        ]
    }
    with pytest.raises(RuntimeError, match="went away"):
        await graph.ainvoke({"character": "Haruhi", "position": 56}, context=run_context)
    assert len(writes) == 2  # neither the new state bookmark nor the synced ones were written
    assert [(b.id, b.position) for b in bank_at(tmp_path / "mem").all()] == [
        ("bm-0", 48),
        ("bm-1", 48),
        ("bm-2", 48),
    ]
