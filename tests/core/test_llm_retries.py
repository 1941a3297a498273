"""The LLM client against a loopback OpenAI-compatible server that rate-limits, fails and vanishes.

The real ``ChatOpenAI`` client runs; ``personae.llm._sleep`` records the waits instead of
sleeping, so backoff and ``Retry-After`` are checked exactly and the tests stay fast.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from fake_openai import FakeOpenAIChat
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from personae import llm
from personae.errors import ConfigurationError, RemoteError
from personae.llm import call_structured, call_text, resolve_chat_model, with_retry_budget
from personae.loopback import LoopbackWebServer, WebRequest, WebResponse, free_port
from personae.run_context import LLMContext


class Pick(BaseModel):
    """A choice among ids."""

    id: str


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    recorded: list[float] = []

    async def record(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(llm, "_sleep", record)
    yield recorded


def flaky(
    failures: list[WebResponse],
) -> tuple[FakeOpenAIChat, Callable[[WebRequest], WebResponse]]:
    """A fake server answering each of ``failures`` once, then properly."""
    chat = FakeOpenAIChat({"Pick": lambda _: {"id": "S1"}, "text": lambda _: "hello"})
    pending = list(failures)

    def route(request: WebRequest) -> WebResponse:
        if request.path.endswith("/chat/completions") and pending:
            return pending.pop(0)
        return chat(request)

    return chat, route


def model_on(url: str, budget: float) -> BaseChatModel:
    return with_retry_budget(resolve_chat_model("openai:fake", base_url=url + "/v1"), budget)


async def test_rate_limits_and_server_errors_are_retried_honouring_retry_after(
    waits: list[float],
) -> None:
    chat, route = flaky(
        [
            WebResponse(429, {"error": {"message": "slow down"}}, {"Retry-After": "7"}),
            WebResponse(503, {"error": {"message": "overloaded"}}),
            WebResponse(500, {"error": {"message": "oops"}}, {"Retry-After": "0"}),
        ]
    )
    with LoopbackWebServer(route) as server:
        model = model_on(server.url, 60)
        pick, usage = await call_structured(model, Pick, [HumanMessage("pick")])
        text, _ = await call_text(model, [HumanMessage("hi")])
    assert pick.id == "S1" and text == "hello"
    assert usage.calls == 1  # failed attempts are not answers
    assert waits[0] == 7.0 and 2.0 <= waits[1] <= 3.0 and waits[2] == 0.0  # backoff doubles
    assert len(server.requests) == 5


async def test_connection_errors_in_structured_calls_are_retried_then_given_up_saying_so(
    waits: list[float],
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(RemoteError) as error:
        await call_structured(model_on(url, 30), Pick, [HumanMessage("pick")])
    message = str(error.value)
    assert "cannot reach the LLM server" in message
    # waits of 1, 2, 4 and 8 s (+ up to 50 % jitter) fit in 30 s; a fifth of 16 s would not
    assert re.search(r"gave up after 5 attempts and \d+s of retrying", message)
    assert "PERSONAE_LLM_RETRY_SECONDS, now 30s" in message
    assert len(waits) == 4 and 15 <= sum(waits) <= 30
    assert error.value.exit_code == 3 and "\n" not in message


async def test_a_retry_after_beyond_the_budget_gives_up_at_once(waits: list[float]) -> None:
    _, route = flaky([WebResponse(429, {"error": {"message": "quota"}}, {"Retry-After": "600"})])
    with LoopbackWebServer(route) as server:
        with pytest.raises(RemoteError, match="it asked to wait 600s more") as error:
            await call_structured(model_on(server.url, 120), Pick, [HumanMessage("pick")])
    assert "rate-limiting (HTTP 429)" in str(error.value) and waits == []


async def test_client_errors_are_not_retried(waits: list[float]) -> None:
    _, route = flaky([WebResponse(401, {"error": {"message": "bad key"}})])
    with LoopbackWebServer(route) as server:
        with pytest.raises(RemoteError, match="AuthenticationError"):
            await call_structured(model_on(server.url, 120), Pick, [HumanMessage("pick")])
        assert len(server.requests) == 1 and waits == []


def test_the_budget_comes_from_the_run_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PERSONAE_LLM_RETRY_SECONDS", "45")
    assert llm.retry_budget(LLMContext().llm("fast")) == 45
    assert llm.retry_budget(LLMContext(llm_retry_seconds=5).llm("strong")) == 5
    monkeypatch.delenv("PERSONAE_LLM_RETRY_SECONDS")
    assert llm.retry_budget(LLMContext().llm("fast")) == llm.DEFAULT_RETRY_SECONDS
    monkeypatch.setenv("PERSONAE_LLM_RETRY_SECONDS", "soon")
    with pytest.raises(ConfigurationError, match="PERSONAE_LLM_RETRY_SECONDS='soon'"):
        LLMContext()
