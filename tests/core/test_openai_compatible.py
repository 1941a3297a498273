"""The real ChatOpenAI client path against an OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai import FakeOpenAIChat
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from personae.errors import RemoteError
from personae.llm import call_structured, resolve_chat_model, with_retry_budget
from personae.loopback import LoopbackWebServer, free_port
from personae.settings import load_settings


class Verdict(BaseModel):
    """A judge verdict."""

    label: str


async def test_structured_call_through_openai_compatible_server() -> None:
    fake = FakeOpenAIChat({"Verdict": lambda messages: {"label": "supported"}})
    with LoopbackWebServer(fake) as server:
        settings = load_settings(
            {"OPENAI_BASE_URL": f"{server.url}/v1", "PERSONAE_MODEL": "openai:local-model"}
        )
        model = resolve_chat_model(
            settings.model, base_url=settings.openai_base_url, api_key=settings.openai_api_key
        )
        verdict, usage = await call_structured(model, Verdict, [HumanMessage("judge this")])
        await model.root_async_client.close()  # type: ignore[attr-defined]
    assert verdict.label == "supported"
    assert usage.calls == 1 and usage.input_tokens == 50 and usage.output_tokens == 10
    sent = fake.requests[0]
    assert sent["model"] == "local-model"
    assert sent["tools"][0]["function"]["name"] == "Verdict"
    assert sent["messages"][-1]["content"] == "judge this"


async def test_unreachable_server_is_a_one_line_remote_error() -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    settings = load_settings({"OPENAI_BASE_URL": closed, "PERSONAE_MODEL": "openai:m"})
    model = resolve_chat_model(
        settings.model, base_url=settings.openai_base_url, api_key=settings.openai_api_key
    )
    model = with_retry_budget(model, 0)  # no retries: the retry tests cover them
    with pytest.raises(
        RemoteError, match="cannot reach the LLM server at http://127.0.0.1"
    ) as caught:
        await call_structured(model, Verdict, [HumanMessage("judge this")])
    assert "\n" not in str(caught.value)
    assert "OPENAI_BASE_URL" in str(caught.value)


def test_one_model_serves_one_asyncio_run_after_another() -> None:
    """A pooled connection belongs to the loop that opened it: the next run must not reuse it."""
    fake = FakeOpenAIChat({"Verdict": lambda messages: {"label": "supported"}})
    with LoopbackWebServer(fake) as server:
        for _ in range(3):  # a CLI command per character, a library caller, a notebook
            model = resolve_chat_model("openai:m", base_url=f"{server.url}/v1")
            verdict, _ = asyncio.run(call_structured(model, Verdict, [HumanMessage("judge")]))
            assert verdict.label == "supported"
    assert len(fake.requests) == 3
