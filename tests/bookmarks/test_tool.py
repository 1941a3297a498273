"""The storyline_memory tool: on-demand sync cached as bookmarks, reuse, derive, clear errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bookmarks_world import future_reads, scripted_model, stored_bank, write_storyline
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from personae.graphs.bookmarks.resources import forget_resources
from personae.graphs.bookmarks.step import BookmarkStepSettings
from personae.graphs.bookmarks.sync import SyncSettings
from personae.graphs.bookmarks.tool import create_storyline_memory_tool
from personae.testing import ScriptedChatModel, prompt_text

OURS = BookmarkStepSettings(sync=SyncSettings(prompts="personae"))
"""Our prompts (``bookmarks-personae``); the tool's default is the paper's (released) ones."""


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    yield scripted_model()
    forget_resources()


@pytest.fixture
def tool(tmp_path: Path, model: ScriptedChatModel) -> BaseTool:
    story = write_storyline(tmp_path / "club.jsonl")
    made: BaseTool = create_storyline_memory_tool(
        str(story), memory_dir=str(tmp_path / "mem"), model=model, fast_model=model, settings=OURS
    )
    return made


async def ask(tool: BaseTool, model: ScriptedChatModel, position: int, **args: object) -> str:
    before = len(model.calls)
    answer = await tool.ainvoke({"character": "Kyon", "position": position, **args})
    assert future_reads(model.calls[before:], position) == []
    return str(answer)


async def test_answers_are_synced_on_demand_and_reused(
    tool: BaseTool, model: ScriptedChatModel, tmp_path: Path
) -> None:
    first = await ask(tool, model, 50, question="Where is Kyon now?")
    assert first == (
        "as of [49] in the club room (bookmark bm-0, new; valid at position 50: "
        "reflects the actions before it)"
    )
    assert len(model.calls_for("StateUpdate")) == 1 and not model.calls_for("MatchChoice")
    second = await ask(tool, model, 70, question="Where is Kyon now?")
    assert second.startswith("as of [69] in the club room (bookmark bm-0, reused;")
    chunk = prompt_text(model.calls_for("StateUpdate")[-1]).split("## New chunk")[-1]
    assert "[50]" in chunk and "[49]" not in chunk  # only the unseen suffix was read
    stored = stored_bank(tmp_path / "club.jsonl", tmp_path / "mem").get("bm-0")
    assert stored.position == 70 and stored.answer_at(60) == "as of [49] in the club room"


async def test_an_earlier_position_never_sees_a_later_answer(
    tool: BaseTool, model: ScriptedChatModel
) -> None:
    await ask(tool, model, 120, question="Where is Kyon now?")
    earlier = await ask(tool, model, 30, question="Where is Kyon now?")
    assert earlier.startswith("as of [29] in the club room (bookmark bm-1, new;")


async def test_related_questions_derive_and_concepts_scan_their_keyword(
    tool: BaseTool, model: ScriptedChatModel, tmp_path: Path
) -> None:
    await ask(tool, model, 40, question="How does Kyon usually treat the club?", type="behavioral")
    derived = await ask(
        tool, model, 60, question="How does Kyon usually treat Haruhi?", type="behavioral"
    )
    assert "(bookmark bm-1, derived;" in derived
    bank = stored_bank(tmp_path / "club.jsonl", tmp_path / "mem")
    assert (bank.get("bm-1").parent_id, bank.get("bm-1").history[0].position) == ("bm-0", 40)
    concept = await ask(
        tool, model, 40, question="Who is Nagato?", type="concept", keyword="Nagato"
    )
    assert concept.startswith("concept seen through [39] (bookmark bm-2, new;")
    assert bank.get("bm-2").keyword == "Nagato"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"character": "Koizumi", "position": 3}, "unknown character 'Koizumi'"),
        ({"character": "Kyon", "position": 999}, "position 999 is out of range"),
        ({"character": "Kyon", "position": 3, "question": "  "}, "the question is empty"),
    ],
)
async def test_bad_arguments_come_back_as_one_line_errors(
    tool: BaseTool, model: ScriptedChatModel, args: dict[str, object], message: str
) -> None:
    answer = await tool.ainvoke({"question": "Where is Kyon?", **args})
    assert isinstance(answer, str) and message in answer and "\n" not in answer
    assert not model.calls


async def test_an_agent_tool_call_gets_a_tool_message(tool: BaseTool) -> None:
    schema = convert_to_openai_tool(tool)["function"]
    assert schema["name"] == "storyline_memory"
    assert set(schema["parameters"]["properties"]) == {
        "character",
        "question",
        "position",
        "type",
        "keyword",
    }
    assert sorted(schema["parameters"]["required"]) == ["character", "position", "question"]
    call = {"character": "Nagato", "question": "Where is Nagato now?", "position": 30}
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "call-1", "name": "storyline_memory", "args": call}
    )
    assert isinstance(message, ToolMessage) and message.tool_call_id == "call-1"
    assert str(message.content).startswith("as of [29] in the club room (bookmark bm-0, new;")


async def test_the_tool_runs_the_graphs_step_with_its_settings(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    """No drift: unknown answers are listed (with their position), K' and derive are the
    context's, and a derive is a model call, exactly as in the graph."""
    from personae.graphs.bookmarks.graph import BookmarksContext
    from personae.graphs.bookmarks.resources import resources_for

    story = write_storyline(tmp_path / "club.jsonl")
    memory = str(tmp_path / "mem")
    context = BookmarksContext(
        storyline_path=str(story), memory_dir=memory, k_candidates=0, prompts="personae"
    )
    tool = create_storyline_memory_tool(
        str(story), memory_dir=memory, fast_model=model, settings=context.step_settings()
    )
    model.responders["StateUpdate"] = lambda m: {"operation": "no_change", "answer": ""}
    answer = await ask(tool, model, 30, question="Who does Kyon owe money to?")
    assert answer.startswith("unknown: nothing before this position answers it")
    unknown = resources_for(str(story), memory).unknown
    assert unknown.questions("Kyon", before=30) == ["Who does Kyon owe money to?"]
    assert unknown.questions("Kyon", before=29) == []
    again = await ask(tool, model, 40, question="Who does Kyon owe money to?")
    assert "new;" in again and not model.calls_for("MatchChoice")  # K' = 0: never reuse

    derive_tool = create_storyline_memory_tool(
        str(story), memory_dir=str(tmp_path / "other"), fast_model=model, settings=OURS
    )
    model.responders["StateUpdate"] = scripted_model().responders["StateUpdate"]
    await ask(derive_tool, model, 50, question="Where is Kyon now?")
    derived = await ask(derive_tool, model, 60, question="Where is Kyon sitting in the room?")
    assert "derived;" in derived and len(model.calls_for("DerivedAnswer")) == 1
