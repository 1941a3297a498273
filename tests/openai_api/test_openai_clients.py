"""Clients no one here wrote talk to a persona: the openai SDK, LangChain's ChatOpenAI, raw SSE."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from openai_world import ANSWER, CHARACTER, chat_server, prompt_of
from pydantic import SecretStr


def role_play_prompts(requests: list[dict[str, Any]]) -> list[str]:
    """The prompts of the role-play calls (the answers; not the checks)."""
    return [prompt_of(r) for r in requests if not r.get("tools") and not r.get("response_format")]


def test_the_sdk_lists_the_persona_and_gets_its_answer_plain_and_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with chat_server(tmp_path, monkeypatch) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="anything", max_retries=0)
        assert [model.id for model in client.models.list()] == [CHARACTER]
        assert client.models.retrieve("iago").id == CHARACTER
        reply = client.chat.completions.create(
            model=CHARACTER, messages=[{"role": "user", "content": "Who are you?"}]
        )
        stream = client.chat.completions.create(
            model=CHARACTER,
            messages=[{"role": "user", "content": "And what do you want?"}],
            stream=True,
        )
        chunks = list(stream)
    assert reply.object == "chat.completion" and reply.model == CHARACTER
    assert reply.choices[0].message.content == ANSWER
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.total_tokens == (
        reply.usage.prompt_tokens + reply.usage.completion_tokens
    )
    assert reply.usage.prompt_tokens >= 50  # the fake states 50 per call; a turn makes several
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == ANSWER
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len({chunk.id for chunk in chunks}) == 1
    prompts = role_play_prompts(server.model.requests)
    assert len(prompts) == 2 and "Who are you?" in prompts[0] and "Iago" in prompts[0]
    assert "I am Othello's ensign" in prompts[0]  # the persona's retrieval reached the answer


def test_the_async_sdk_streams_with_usage_in_the_last_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def talk(base_url: str) -> tuple[str, list[Any]]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="anything", max_retries=0)
        reply = await client.chat.completions.create(
            model=CHARACTER, messages=[{"role": "user", "content": "Speak."}]
        )
        stream = await client.chat.completions.create(
            model=CHARACTER,
            messages=[{"role": "user", "content": "Speak again."}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
        return reply.choices[0].message.content or "", chunks

    with chat_server(tmp_path, monkeypatch) as server:
        content, chunks = asyncio.run(talk(server.base_url))
    assert content == ANSWER
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens > 0
    assert all(chunk.usage is None for chunk in chunks[:-1])


def test_langchain_chat_openai_invokes_and_streams_the_character(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with chat_server(tmp_path, monkeypatch) as server:
        model = ChatOpenAI(
            model=CHARACTER,
            base_url=server.base_url,
            api_key=SecretStr("anything"),
            max_retries=0,
        )
        said = model.invoke(
            [
                SystemMessage("You are a helpful assistant."),
                HumanMessage("Who set Roderigo on?"),
                AIMessage("Not I."),
                HumanMessage("Be honest with me."),
            ]
        )
        streamed = "".join(str(chunk.content) for chunk in model.stream("Tell me a secret."))
        requests = list(server.model.requests)
    assert said.content == ANSWER and streamed == ANSWER
    assert said.usage_metadata is not None and said.usage_metadata["total_tokens"] > 0
    first = role_play_prompts(requests)[0]
    # The conversation the app sent reached the answer, in order; its system prompt did not
    # (the persona plays from its own document).
    assert first.index("Who set Roderigo on?") < first.index("Not I.")
    assert first.index("Not I.") < first.index("Be honest with me.")
    assert "helpful assistant" not in first


def sse_events(body: str) -> list[str]:
    """The ``data:`` payloads of a server-sent event stream, in order."""
    events = [block for block in body.split("\n\n") if block.strip()]
    assert all(block.startswith("data: ") for block in events), body
    return [block.removeprefix("data: ") for block in events]


def test_raw_sse_has_role_content_stop_usage_then_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {
        "model": CHARACTER,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello?"}]}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with chat_server(tmp_path, monkeypatch) as server:
        answer = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=30)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = sse_events(answer.text)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(data) for data in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == ANSWER
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert all(chunk["usage"] is None for chunk in chunks[:-1])
