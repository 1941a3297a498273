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


def test_openai_clients_share_the_process_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's async and sync clients load no CA bundle of their own (~40 ms of CPU each,
    two per ChatOpenAI, one ChatOpenAI per model and server)."""
    import ssl
    from typing import Any

    from personae.process_caches import reset_runtime
    from personae.tls import shared_ssl_context

    context = shared_ssl_context()
    reset_runtime()  # a fresh ChatOpenAI below, not one cached by an earlier test
    loads: list[Any] = []
    real_load = ssl.SSLContext.load_verify_locations

    def counting_load(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        real_load(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting_load)
    model: Any = resolve_chat_model("openai:tls-check", base_url="http://127.0.0.1:9/v1")
    assert loads == []
    for client in (model.root_async_client, model.root_client):
        assert client._client._transport._pool._ssl_context is context
