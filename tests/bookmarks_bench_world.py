"""Test world for the bench harness: a tiny storyline, a scripted model and a stub method graph.

The stub graph follows the acting contract and behaves like a memory method: it remembers per
character how far it has read (on disk, in its memory folder) and reads only the unseen suffix,
so the runner's story order, resume and persistence can be checked without the real agent.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from personae.agents.bookmarks.actor import act
from personae.errors import RemoteError
from personae.graphs.bookmarks.acting import ActingContext, ActInput, ActOutput
from personae.memory.bookmarks.storyline import open_storyline
from personae.testing import ScriptedChatModel, prompt_text

WRONG = "does nothing at all"

# Alice acts at 0, 3, 6, ..., 39 (14 actions); Bob at 1, 4, ..., 37 (13); Other at 2, 5, ...
ROWS = [
    {
        "action": f"{['Alice', 'Bob', 'Other'][i % 3]} move number {i}",
        "character": ["Alice", "Bob", "Other"][i % 3],
        "chapter": f"chapter {i // 20 + 1}",
    }
    for i in range(40)
]


def write_storyline(
    path: Path, rows: list[dict[str, Any]] | None = None, majors: list[str] | None = None
) -> Path:
    """Write ``rows`` (default :data:`ROWS`) as a JSONL storyline, and list its majors.

    The major characters (default: every named character, in order of appearance) go into
    ``all_characters.json`` beside it under the file's stem, merged with what is there, as the
    release lists them; ``majors=[]`` writes no entry (a storyline without a character list).
    """
    rows = rows or ROWS
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    named = [str(r["character"]) for r in rows if r.get("character") not in {"Other", None}]
    cast = list(dict.fromkeys(named)) if majors is None else majors
    if cast:
        listing = path.parent / "all_characters.json"
        data = json.loads(listing.read_text()) if listing.is_file() else {}
        data[path.stem] = {"major": cast}
        listing.write_text(json.dumps(data), encoding="utf-8")
    return path


def true_action(position: int) -> str:
    """The text of :data:`ROWS` at ``position``."""
    return str(ROWS[position]["action"])


def _target(messages: list[BaseMessage]) -> int:
    """The target position: one after the last scene line ``[p] (...)`` in the actor prompt."""
    positions = [int(p) for p in re.findall(r"^\[(\d+)\]", prompt_text(messages), re.M)]
    return max(positions) + 1 if positions else 0


def _between(text: str, start: str, end: str | None) -> str:
    tail = text.split(start, 1)[1]
    return (tail.split(end, 1)[0] if end else tail).strip()


def judged_texts(messages: list[BaseMessage]) -> tuple[str, str]:
    """(truth, prediction) from a judge prompt (``Your Response:`` / ``Ground Truth:`` lines)."""
    text = prompt_text(messages)
    return _between(text, "Ground Truth:", "\n"), _between(text, "Your Response:", "\n")


def scripted_model(fail_after: int | None = None) -> ScriptedChatModel:
    """Actor right on even targets, wrong on odd ones; judges compare texts exactly.

    With ``fail_after``, the actor raises a :class:`RemoteError` on its call number
    ``fail_after + 1`` (a crash mid-benchmark).
    """
    acted = {"n": 0}

    def actor(messages: list[BaseMessage]) -> dict[str, str]:
        acted["n"] += 1
        if fail_after is not None and acted["n"] > fail_after:
            raise RemoteError("the LLM server went away", "rerun to resume")
        target = _target(messages)
        name = re.search(r"next action \(.*?\) of (\w+) in the", prompt_text(messages), re.S)
        who = name.group(1) if name else "?"
        right = target % 2 == 0 and target < len(ROWS)
        return {"action": true_action(target) if right else f"{who} {WRONG}"}

    def key_move(messages: list[BaseMessage]) -> dict[str, Any]:
        truth, prediction = judged_texts(messages)
        return {"reasoning": truth, "score": "A" if truth == prediction else "C"}

    def nli(messages: list[BaseMessage]) -> dict[str, Any]:
        truth, prediction = judged_texts(messages)
        return {"reasoning": "compared", "score": "A" if truth == prediction else "B"}

    return ScriptedChatModel(
        responders={"NextAction": actor, "KeyMoveVerdict": key_move, "NLIVerdict": nli}
    )


# --- the stub method graph -------------------------------------------------------------------

CALLS: list[tuple[str, int]] = []
"""(character, position) of every stub graph run, in call order."""
ACTIVE = {"now": 0, "max": 0, "goal": 0}
"""Stub graph runs in progress, the most seen at once (concurrency bound checks) and, when set,
the number a run waits to see at once before acting (so the check does not depend on timing)."""
READS: list[tuple[str, int, int]] = []
"""(character, start, stop) of every window the stub read: it must always stop <= target."""


@dataclass(frozen=True, kw_only=True)
class StubContext(ActingContext):
    """Run settings of the stub method."""


class StubState(TypedDict):
    """State of the stub method graph."""

    character: str
    """Who acts."""
    position: int
    """Target position."""
    action: str
    """Predicted action."""
    grounding: list[str]
    """What the actor was shown."""
    stats: dict[str, int]
    """Counters."""


async def _until_goal_reached(seconds: float = 10.0) -> None:
    """Hold this run until ``ACTIVE["goal"]`` runs were in progress at once (or ``seconds``).

    A run that really runs that many at once reaches it however loaded the machine is; one
    that cannot never does, and the test's bound check fails after the wait.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while ACTIVE["goal"] and ACTIVE["max"] < ACTIVE["goal"] and loop.time() < deadline:
        await asyncio.sleep(0.001)


async def act_with_stub_memory(state: StubState, runtime: Runtime[StubContext]) -> dict[str, Any]:
    """Read the unseen suffix, record progress on disk, then act."""
    context = runtime.context
    storyline = open_storyline(context.storyline_path)
    character = storyline.check_character(state["character"])
    position = storyline.check_position(state["position"])
    memory = Path(context.memory_dir or ".") / f"stub-{character}.json"
    start = json.loads(memory.read_text())["position"] if memory.is_file() else 0
    if position < start:
        raise ValueError(f"{character}: target {position} is behind memory at {start}")
    read = storyline.before(position, start)
    READS.append((character, start, position))
    CALLS.append((character, position))
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_text(json.dumps({"position": position}))
    ACTIVE["now"] += 1
    ACTIVE["max"] = max(ACTIVE["max"], ACTIVE["now"])
    await _until_goal_reached()
    try:
        action, usage = await act(
            context.llm("strong"),
            character=character,
            story=context.story_title(storyline.name),
            scene=storyline.scene(position, context.scene_size),
            acting_format=storyline.acting_format,
            grounding=[f"read {len(read)} actions"],
        )
    finally:
        ACTIVE["now"] -= 1
    stats = {
        "reuse": 1 if start else 0,
        "derive": 1 if start and position % 2 == 0 else 0,
        "new": 1,
        "actions_read": len(read),
        "actions_from_scratch": position,
        **usage.as_dict(),
    }
    return {"action": action, "grounding": [f"read {len(read)} actions"], "stats": stats}


_builder = StateGraph(
    StubState, context_schema=StubContext, input_schema=ActInput, output_schema=ActOutput
)
_builder.add_node(act_with_stub_memory)
_builder.add_edge(START, "act_with_stub_memory")
_builder.add_edge("act_with_stub_memory", END)
graph = _builder.compile(name="stub")
