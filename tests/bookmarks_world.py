"""A small storyline and a deterministic scripted model for the BOOKMARKS graph, tool and CLI tests.

Importing it loads no graph, Chroma or OpenAI module (the Ctrl-C driver imports it before the
command starts up, whose start-up it must leave to the command).

Every scripted answer embeds ``[p]`` for the latest position its prompt showed, so an answer
synced past a target that leaked into an earlier target's prompt is caught by the same
``p >= target`` audit as a leaked story action (whose text says "in scene p").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from personae.testing import ScriptedChatModel, override_models, prompt_text

if TYPE_CHECKING:
    from personae.memory.bookmarks.bank import BookmarkBank

MARKER = re.compile(r"\[(\d+)\]|in scene (\d+)\.")
"""A position a prompt shows: a ``[p]`` marker, or an action's own text (prompts that show
plain action texts, as the released prompts do, still reveal where they read)."""
NAMES = ("Haruhi", "Kyon", "Nagato", "Mikuru")


def write_storyline(path: Path, size: int = 160) -> Path:
    """A JSONL storyline: four characters in turn, an ``Other`` every fifth action, 4 chapters.

    Its four characters are listed as the majors in ``all_characters.json`` beside it (merged
    with what is there), as the release lists a storyline's cast.
    """
    lines = []
    for position in range(size):
        who = "Other" if position % 5 == 4 else NAMES[position % 4]
        other = NAMES[(position + 1) % 4]
        text = f"{who} talks to {other} about the club in scene {position}."
        chapter = f"Chapter {position * 4 // size + 1}"
        lines.append(json.dumps({"action": text, "character": who, "chapter": chapter}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    listing = path.parent / "all_characters.json"
    data = json.loads(listing.read_text()) if listing.is_file() else {}
    data[path.stem] = {"major": list(NAMES)}
    listing.write_text(json.dumps(data), encoding="utf-8")
    return path


def stored_bank(story: Path, memory: Path) -> BookmarkBank:
    """A fresh bank object on ``memory`` for ``story``'s text, scoped as the graph opens it."""
    from personae.memory.bookmarks.bank import BookmarkBank
    from personae.memory.bookmarks.storyline import open_storyline

    storyline = open_storyline(story)
    return BookmarkBank.open(storyline.name, memory, scope=storyline.scope)


def last_user_text(messages: Sequence[BaseMessage]) -> str:
    """The last message's text (the user turn holding the data)."""
    return str(messages[-1].content)


def latest_marker(text: str) -> int:
    """The largest ``[p]`` in ``text`` (-1 when there is none)."""
    found = [int(a or b) for a, b in MARKER.findall(text)]
    return max(found) if found else -1


def _propose(messages: list[BaseMessage]) -> dict[str, Any]:
    text = prompt_text(messages)
    character = re.search(r"questions for (\w+)'s next action", text)
    name = character.group(1) if character else "Haruhi"
    seen = re.search(r"## Characters seen so far\n(.*)\n", text)
    others = [n for n in (seen.group(1).split(", ") if seen else []) if n != name]
    questions = [
        {"type": "behavioral", "question": f"How does {name} usually treat the club?"},
        {"type": "state", "question": f"Where is {name} now and who is with them?"},
    ]
    if others:
        friend = sorted(others)[0]
        questions.append(
            {"type": "concept", "question": f"Who is {friend} to {name}?", "keyword": friend}
        )
    return {"questions": questions}


def _match(messages: list[BaseMessage]) -> dict[str, Any]:
    text = last_user_text(messages)
    question = text.split("\n")[1].strip()
    for short_id, candidate in re.findall(r"^(B\d+): Q: (.*?) \| A:", text, re.M):
        if candidate == question:
            return {"choice": f"reuse {short_id}"}
    return {"choice": "derive B1"}


def _verdicts(messages: list[BaseMessage]) -> dict[str, Any]:
    ids = re.search(r"Give a verdict for each id: (.*)\.", last_user_text(messages))
    wanted = ids.group(1).split(", ") if ids else []
    return dict.fromkeys(wanted, True)


def _answer(kind: str) -> Any:
    def respond(messages: list[BaseMessage]) -> dict[str, Any]:
        latest = latest_marker(last_user_text(messages))
        if kind == "state":
            return {"operation": "update", "answer": f"as of [{latest}] in the club room"}
        return {"answer": f"{kind} seen through [{latest}]"}

    return respond


def _derive(messages: list[BaseMessage]) -> dict[str, Any]:
    parent = last_user_text(messages).split("# Existing bookmark answer\n")[1].split("\n")[0]
    return {"answer": f"derived from: {parent}"}


def _chunk_profile(messages: list[BaseMessage]) -> dict[str, Any]:
    scenes = [int(n) for n in re.findall(r"in scene (\d+)\.", last_user_text(messages))]
    return {"profile": f"profiled through [{max(scenes, default=-1)}]"}


def _updated_profile(messages: list[BaseMessage]) -> dict[str, Any]:
    new = last_user_text(messages).split("(From New Episodes)\n")[1].split("\n")[0]
    return {"profile": new}


def _act(messages: list[BaseMessage]) -> dict[str, Any]:
    name = re.search(r"next action \(.*?\) of (\w+) in the", last_user_text(messages), re.S)
    return {"action": f"{name.group(1) if name else 'Someone'} smiles at the brigade."}


def _propose_released(messages: list[BaseMessage]) -> dict[str, Any]:
    """The released proposer: the same questions as ours, tagged as the released prompt asks."""
    text = prompt_text(messages)
    turn = re.search(r"it's (\w+)'s turn to make the next", text)
    name = turn.group(1) if turn else "Haruhi"
    scene = text.split("# Scene\n", 1)[-1].split("\n\n", 1)[0]
    # The paper's method shows plain action texts ("Kyon talks to ..."): who acts opens the line.
    others = sorted({n for n in re.findall(r"^(\w+) talks to", scene, re.M)} - {name, "Other"})
    queries = [
        {"tag": "behavioral", "query": f"How does {name} usually treat the club?"},
        {"tag": "state", "query": f"Where is {name} now and who is with them?"},
    ]
    if others:
        queries.append({"tag": "concept", "query": f"Who is {others[0]} to {name}?"})
    return {"queries": queries}


def _relation(messages: list[BaseMessage]) -> dict[str, Any]:
    text = last_user_text(messages)
    old = text.split("Existing bookmark query:\n", 1)[1].split("\n", 1)[0]
    new = text.split("New bookmark query:\n", 1)[1].split("\n", 1)[0]
    return {"relation": "reuse" if old == new else "derive"}


def _keyword(messages: list[BaseMessage]) -> dict[str, Any]:
    found = re.search(r"Who is (\w+) to", last_user_text(messages))
    return {"keyword": found.group(1) if found else "Kyon"}


RELEASED_RESPONDERS: dict[str, Any] = {
    "ReleasedQueries": _propose_released,
    "Relation": _relation,
    "StateCheck": lambda m: {"decision": "update"},
    "StateAnswer": lambda m: {"answer": _answer("state")(m)["answer"]},
    "EvidenceAnswer": lambda m: {"answer": "yes"},
    "ConceptKeyword": _keyword,
    "ConceptUpdate": _answer("concept"),
}
"""Answers to the released prompts (``--method bookmarks``), in the same spirit as ours."""


def scripted_model(**overrides: Any) -> ScriptedChatModel:
    """Answers every role of the graph, both prompt sets (propose, match, syncs, act)."""
    responders: dict[str, Any] = {
        **RELEASED_RESPONDERS,
        "ProposedQuestions": _propose,
        "MatchChoice": _match,
        "DerivedAnswer": _derive,
        "ChunkProfile": _chunk_profile,
        "UpdatedProfile": _updated_profile,
        "StateUpdate": _answer("state"),
        "EvidenceVerdicts": _verdicts,
        "BehaviorSummary": _answer("behavior"),
        "ConceptAnswer": _answer("concept"),
        "NextAction": _act,
    }
    responders.update(overrides)
    return ScriptedChatModel(responders=responders)


@contextmanager
def scripted_model_as(name: str) -> Iterator[ScriptedChatModel]:
    """:func:`scripted_model` injected as ``openai:<name>``; afterwards the cached banks are
    forgotten, so the next test opens its own memory folder (the override is reset by
    conftest after every test)."""
    from personae.graphs.bookmarks.resources import forget_resources

    scripted = scripted_model()
    override_models(specs={f"openai:{name}": scripted})
    try:
        yield scripted
    finally:
        forget_resources()


def future_reads(
    calls: Sequence[tuple[str, list[BaseMessage]]], target: int
) -> list[tuple[str, int]]:
    """Every ``(schema, p)`` where a prompt showed a ``[p]`` at or after ``target``."""
    leaks = []
    for name, messages in calls:
        latest = latest_marker(prompt_text(messages))
        if latest >= target:
            leaks.append((name, latest))
    return leaks
