"""The AMADEUS runners as a library calls them: index a profile document, answer, keep a chat."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from personae import (
    AmadeusContext,
    ChatTurn,
    ask_character,
    index_persona,
    open_chat,
    persona_index_settings,
)
from personae.errors import InputError, RunLockedError
from personae.run_lock import run_lock
from personae.testing import ScriptedChatModel, override_models, prompt_text

PROFILE: dict[str, Any] = {
    "character": "Iago",
    "profile": "I am Othello's ensign. I hate the Moor.",
    "dimensions": {"deeds": [{"text": "I set Roderigo on Brabantio."}]},
}


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    def answer(messages: list[BaseMessage]) -> str:
        return (
            "Again, ensign."
            if "I am not what I am." in prompt_text(messages)
            else "I am not what I am."
        )

    chat = ScriptedChatModel(
        responders={
            "RelevanceVerdict": lambda m: {"reason": "r", "relevant": "ensign" in prompt_text(m)},
            "CharacterAttributes": lambda m: {
                "belief_and_value": "Self first.",
                "psychological_traits": "Cold.",
            },
            "text": answer,
        }
    )
    with override_models(chat):
        yield chat


async def test_a_profile_document_is_indexed_then_the_character_answers_from_it(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    context = AmadeusContext(memory_dir=str(tmp_path / "personas"), model="openai:scripted")
    where = persona_index_settings(context.memory_dir, context=context)
    done = await index_persona(PROFILE, index=where, context=context)
    assert (done.character, done.source_kind, done.stats.added) == ("Iago", "profile", 2)
    assert done.as_json()["kind"] == "profile" and done.warning is None
    again = await index_persona(PROFILE, index=where, context=context)
    assert (again.stats.added, again.stats.kept) == (0, 2)  # unchanged: nothing re-embedded
    turn = await ask_character("Iago", "Who are you?", context=context)
    assert turn.response == "I am not what I am." and turn.degraded == 0
    record = turn.as_json()
    assert record["method"] == "amadeus"
    assert any("ensign" in chunk["text"] for chunk in record["knowledge"])


async def test_a_named_chat_thread_is_kept_and_resumed(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    context = AmadeusContext(memory_dir=str(tmp_path / "personas"), model="openai:scripted")
    await index_persona(PROFILE, index=persona_index_settings(context.memory_dir, context=context))
    async with open_chat("Iago", context=context, thread="t1") as chat:
        first = await chat.ask("Who are you?")
    async with open_chat("Iago", context=context, thread="t1") as chat:
        second = await chat.ask("And again?")  # the earlier turn is in the prompt
    assert (first.response, second.response) == ("I am not what I am.", "Again, ensign.")
    assert (tmp_path / "personas" / "chats.sqlite").is_file()
    alone = await ask_character("Iago", "And again?", context=context)  # no thread: no history
    assert alone.response == "I am not what I am."


async def test_a_conversation_the_caller_keeps_is_the_history_asked_or_streamed(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    context = AmadeusContext(memory_dir=str(tmp_path / "personas"), model="openai:scripted")
    await index_persona(PROFILE, index=persona_index_settings(context.memory_dir, context=context))
    history = [HumanMessage("Who are you?"), AIMessage("I am not what I am.")]
    async with open_chat("Iago", context=context) as chat:  # a chat app's request: no thread
        asked = await chat.ask("And again?", history=history)
        pieces = [piece async for piece in chat.stream("And again?", history=history)]
    *texts, streamed = pieces
    assert asked.response == "Again, ensign."  # the earlier answer was in the prompt
    assert isinstance(streamed, ChatTurn) and streamed.response == asked.response
    assert texts and "".join(str(text) for text in texts) == streamed.response
    assert streamed.details["usage"]["rp_calls"] == 1
    assert set(streamed.details) == set(asked.details)  # the same record as ask's
    for prompt in model.calls_for("text")[-2:]:
        said = [message.content for message in prompt[1:]]
        assert said == ["Who are you?", "I am not what I am.", "And again?"]
    assert not (tmp_path / "personas" / "chats.sqlite").exists()  # nothing kept


async def test_a_kept_thread_reads_back_oldest_first_with_each_answer_s_chunks(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    context = AmadeusContext(memory_dir=str(tmp_path / "personas"), model="openai:scripted")
    await index_persona(PROFILE, index=persona_index_settings(context.memory_dir, context=context))
    async with open_chat("Iago", context=context, thread="t1") as chat:
        assert await chat.history() == []
        first = await chat.ask("Who are you?")
        second = await chat.ask("And again?")
    async with open_chat("Iago", context=context, thread="t1") as chat:  # after a restart
        turns = await chat.history()
    assert [t.question for t in turns] == ["Who are you?", "And again?"]
    assert [t.response for t in turns] == [first.response, second.response]
    assert first.question == "Who are you?"
    kept = [[c["id"] for c in t.details["selected"]] for t in turns]
    assert kept == [
        [c["id"] for c in first.details["selected"]],
        [c["id"] for c in second.details["selected"]],
    ]
    assert all("ensign" in c["text"] for c in turns[0].details["selected"])  # GS kept only those
    async with open_chat("Iago", context=context, thread="other") as chat:
        assert await chat.history() == []
    async with open_chat("Iago", context=context) as chat:  # no thread: nothing kept
        await chat.ask("Who are you?")
        assert await chat.history() == []


async def test_bad_input_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="the question is empty"):
        await ask_character("Iago", "  ")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        persona_index_settings(tmp_path / "file")
    with pytest.raises(InputError, match="the profile document is not a Personae profile.json"):
        await index_persona({"character": "X"}, index=persona_index_settings(tmp_path / "p"))


async def test_two_index_runs_on_one_folder_take_turns_and_the_second_pays_nothing(
    tmp_path: Path,
) -> None:
    """One index run per folder: the second waits (saying for whom), then finds every section
    already embedded; told not to wait, it stops naming the holder."""
    context = AmadeusContext(memory_dir=str(tmp_path / "personas"))
    where = persona_index_settings(context.memory_dir, context=context)
    lines: list[list[str]] = [[], []]
    first, second = await asyncio.gather(
        *(index_persona(PROFILE, index=where, context=context, progress=lines[i].append)
          for i in range(2))
    )  # fmt: skip
    assert (first.stats.added, second.stats.added, second.stats.kept) == (2, 0, 2)
    folder = tmp_path / "personas"
    assert lines[0] == [] and len(lines[1]) == 1
    assert lines[1][0].startswith(f"waiting: an AMADEUS index of {folder} is running in pid ")
    async with run_lock(folder, "index", what="a test"):
        with pytest.raises(RunLockedError, match=f"an AMADEUS index of {folder} is running in"):
            await index_persona(PROFILE, index=where, context=context, wait=False)
