"""The AMADEUS graph end to end on a real Chroma index and a scripted model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from personae.errors import InputError
from personae.graphs.amadeus.graph import AmadeusContext, build_graph
from personae.memory.amadeus.persona_chunks import split_persona
from personae.memory.amadeus.persona_doc import parse_markdown
from personae.memory.amadeus.persona_store import PersonaIndex, open_client
from personae.memory.embeddings import HashingTextEmbedding
from personae.testing import ScriptedChatModel, override_models, prompt_text

PERSONA = "# Megumin\n\n" + "\n\n".join(
    f"## Topic {i}\n\nMegumin fact {i} about explosion magic and the crimson demons."
    for i in range(12)
)


def _model(relevant: set[int]) -> ScriptedChatModel:
    def gs(messages: list[BaseMessage]) -> dict[str, Any]:
        text = prompt_text(messages)
        return {"reason": "r", "relevant": any(f"fact {i} " in text for i in relevant)}

    return ScriptedChatModel(
        responders={
            "RelevanceVerdict": gs,
            "CharacterAttributes": lambda m: {
                "belief_and_value": "BELIEF-X",
                "psychological_traits": "TRAIT-Y",
            },
            "text": lambda m: "Explosion is the way!",
        }
    )


@pytest.fixture
def memory(tmp_path: Path) -> str:
    path = str(tmp_path / "mem")
    doc = parse_markdown(PERSONA, "Megumin")
    PersonaIndex(open_client(path), "Megumin", "acts", HashingTextEmbedding()).sync(
        doc, split_persona(doc)
    )
    return path


@pytest.fixture
def registered() -> Iterator[dict[str, ScriptedChatModel]]:
    yield {}  # the suite resets model overrides after every test


def _context(
    memory: str, models: dict[str, ScriptedChatModel], chat: ScriptedChatModel, **changes: Any
) -> AmadeusContext:
    models[f"amadeus-{len(models)}"] = chat
    override_models(chat)
    return AmadeusContext(model="openai:scripted", memory_dir=memory, **changes)


async def test_wave_sizes_give_the_sequential_slot(
    memory: str, registered: dict[str, ScriptedChatModel]
) -> None:
    results = []
    for wave in (1, 3, 30):
        chat = _model({5, 9, 2})
        context = _context(memory, registered, chat, gs_wave=wave)
        out = await build_graph().ainvoke(
            {"character": "Megumin", "query": "What do you love?"}, context=context
        )
        ranks = [v["rank"] for v in out["verdicts"]]
        assert len(ranks) == len(set(ranks)) <= 12
        results.append(([c["id"] for c in out["selected"]], out["gs_failed"]))
        if wave == 1:
            assert ranks == list(range(len(ranks)))  # similarity order, one at a time
            assert out["usage"]["gs_calls"] == len(ranks)
        assert len(chat.calls_for("CharacterAttributes")) == 1
    assert results[0] == results[1] == results[2] and results[0][1] is False
    assert len(results[0][0]) == 2


async def test_fallback_feeds_top_k_plus_one_to_the_extractor_and_the_prompt(
    memory: str, registered: dict[str, ScriptedChatModel]
) -> None:
    chat = _model(set())
    out = await build_graph().ainvoke(
        {"character": "Megumin", "query": "Is your room tidy?"},
        context=_context(memory, registered, chat, gs_wave=4),
    )
    assert out["gs_failed"] is True and [c["rank"] for c in out["selected"]] == [0, 1, 2]
    assert out["usage"]["gs_calls"] == 12  # every chunk (fewer than N = 30) was checked
    extractor_prompt = prompt_text(chat.calls_for("CharacterAttributes")[0])
    assert all(c["text"] in extractor_prompt for c in out["selected"])
    respond_prompt = prompt_text(chat.calls_for("text")[0])
    for chunk in out["knowledge"] + out["selected"]:
        assert chunk["text"] in respond_prompt
    assert "BELIEF-X" in respond_prompt and "TRAIT-Y" in respond_prompt
    assert out["response"] == "Explosion is the way!"


@pytest.mark.parametrize(
    ("method", "roles"),
    [
        ("none", ["text"]),
        ("naive", ["text"]),
        ("amadeus", ["RelevanceVerdict", "CharacterAttributes", "text"]),
    ],
)
async def test_methods_call_exactly_their_roles(
    memory: str, registered: dict[str, ScriptedChatModel], method: str, roles: list[str]
) -> None:
    chat = _model({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
    out = await build_graph().ainvoke(
        {"character": "Megumin", "query": "Tell me about magic."},
        context=_context(memory, registered, chat, method=method),
    )
    assert sorted({name for name, _ in chat.calls}) == sorted(roles)
    prompt = prompt_text(chat.calls_for("text")[0])
    assert ("Megumin fact" in prompt) == (method != "none")
    assert ("Belief and value" in prompt) == (method == "amadeus")
    assert len(out["knowledge"]) == (0 if method == "none" else 4)


async def test_conversation_resumes_after_a_restart(
    memory: str, registered: dict[str, ScriptedChatModel], tmp_path: Path
) -> None:
    chat = _model({1})
    context = _context(memory, registered, chat, method="naive")
    config: RunnableConfig = {"configurable": {"thread_id": "chat-1"}}
    db = str(tmp_path / "chat.sqlite")
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        await build_graph(saver).ainvoke(
            {"character": "Megumin", "query": "My name is Kazuma."}, config, context=context
        )
    async with AsyncSqliteSaver.from_conn_string(db) as saver:  # a new process would do this
        out = await build_graph(saver).ainvoke(
            {"character": "Megumin", "query": "What is my name?"}, config, context=context
        )
    assert [m.type for m in out["messages"]] == ["human", "ai", "human", "ai"]
    second_prompt = chat.calls_for("text")[1]
    assert "My name is Kazuma." in prompt_text(second_prompt[1:-1])  # history before the question
    assert str(second_prompt[-1].content) == "What is my name?"


async def test_unknown_character_is_an_input_error(
    memory: str, registered: dict[str, ScriptedChatModel]
) -> None:
    with pytest.raises(InputError, match="unknown character 'Aqua'"):
        await build_graph().ainvoke(
            {"character": "Aqua", "query": "Hi"},
            context=_context(memory, registered, _model(set())),
        )


async def test_ask_character_tool_answers_and_keeps_one_thread_per_character(
    memory: str, registered: dict[str, ScriptedChatModel]
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from personae.graphs.amadeus.tool import create_ask_character_tool

    chat = _model({0})
    tool = create_ask_character_tool(
        _context(memory, registered, chat, method="naive"), checkpointer=InMemorySaver()
    )
    assert tool.name == "ask_character" and set(tool.args) == {"character", "question"}
    first = await tool.ainvoke({"character": "Megumin", "question": "Hello there"})
    await tool.ainvoke({"character": "megumin", "question": "And again?"})
    assert first == "Explosion is the way!"
    assert "Hello there" in prompt_text(chat.calls_for("text")[1][1:-1])


async def test_ask_character_tool_returns_its_errors_as_the_answer(
    memory: str, registered: dict[str, ScriptedChatModel]
) -> None:
    from personae.graphs.amadeus.tool import create_ask_character_tool

    tool = create_ask_character_tool(_context(memory, registered, _model(set())))
    call = {"type": "tool_call", "id": "call-7", "name": "ask_character"}
    message = await tool.ainvoke({**call, "args": {"character": "Aqua", "question": "Hi"}})
    assert message.status == "error" and "unknown character 'Aqua'" in message.content
