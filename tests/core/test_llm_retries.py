"""The LLM client against a loopback OpenAI-compatible server that rate-limits, fails and vanishes.

The real ``ChatOpenAI`` client runs; ``personae.llm._sleep`` records the waits instead of
sleeping, so backoff and ``Retry-After`` are checked exactly and the tests stay fast.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from fake_openai import FakeOpenAIChat
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

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


def chat_requests(server: LoopbackWebServer) -> list[WebRequest]:
    """The chat calls a server got (not the one-time look-up of its context window)."""
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def model_on(url: str, budget: float) -> BaseChatModel:
    # One method, so that every request below is a retry and none a probe (test_llm_endpoint).
    model = resolve_chat_model(
        "openai:fake", base_url=url + "/v1", structured_output="function_calling"
    )
    return with_retry_budget(model, budget)


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
    assert len(chat_requests(server)) == 5


async def test_a_refused_connection_fails_at_once_without_retrying(waits: list[float]) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there: a wrong OPENAI_BASE_URL
    started = time.monotonic()
    with pytest.raises(RemoteError) as error:
        await call_structured(model_on(url, 120), Pick, [HumanMessage("pick")])
    with pytest.raises(RemoteError, match="cannot reach the LLM server"):
        await call_text(model_on(url, 120), [HumanMessage("hi")])
    message = str(error.value)
    assert message.startswith(f"cannot reach the LLM server at {url}/v1 (nothing answers there)")
    assert "OPENAI_BASE_URL" in message and "gave up" not in message
    assert waits == [] and time.monotonic() - started < 10
    assert error.value.exit_code == 3 and "\n" not in message


@contextmanager
def hang_up() -> Iterator[str]:
    """A loopback URL whose server accepts every connection and closes it without answering."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.recv(65536)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


async def test_a_connection_dropped_mid_request_is_retried_then_given_up_saying_so(
    waits: list[float],
) -> None:
    with hang_up() as url, pytest.raises(RemoteError) as error:
        await call_structured(model_on(url, 30), Pick, [HumanMessage("pick")])
    message = str(error.value)
    assert message.startswith(f"the LLM server at {url}/v1 dropped the connection")
    # waits of 1, 2, 4 and 8 s (+ up to 50 % jitter) fit in 30 s; a fifth of 16 s would not
    assert re.search(r"gave up after 5 attempts and \d+s of retrying", message)
    assert "PERSONAE_LLM_RETRY_SECONDS, now 30s" in message
    assert len(waits) == 4 and 15 <= sum(waits) <= 30
    assert error.value.exit_code == 3 and "\n" not in message


async def test_timeouts_are_retried(waits: list[float]) -> None:
    chat, route = flaky([])
    with LoopbackWebServer(route, latency=1.0) as server:
        slow = ChatOpenAI(
            model="fake",
            base_url=f"{server.url}/v1",
            api_key=SecretStr("x"),
            timeout=0.2,
            max_retries=0,
        )
        model = with_retry_budget(slow, 5)
        with pytest.raises(RemoteError, match="timed out; gave up after 3 attempts"):
            await call_text(model, [HumanMessage("hi")])
    assert len(waits) == 2 and len(chat_requests(server)) == 3


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
        assert len(chat_requests(server)) == 1 and waits == []


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


async def test_a_base_url_without_v1_answering_404_asks_about_v1(waits: list[float]) -> None:
    """Issue 27: a vLLM-like server serves /v1/...; the base without /v1 got a bare 404."""
    chat = FakeOpenAIChat({"text": lambda _: "hello"})

    def route(request: WebRequest) -> WebResponse:
        if not request.path.startswith("/v1/"):
            return WebResponse(404, {"detail": "Not Found"})
        return chat(request)

    with LoopbackWebServer(route) as server:
        model = resolve_chat_model("openai:fake", base_url=server.url, api_key="sk-test")
        with pytest.raises(RemoteError) as error:
            await call_text(model, [HumanMessage("hi")])
        text, _ = await call_text(model_on(server.url, 10), [HumanMessage("hi")])
    assert str(error.value) == (
        f"the LLM server at {server.url} answered HTTP 404 (no such path); does OPENAI_BASE_URL "
        "end in /v1? OpenAI-compatible servers answer under it, e.g. http://localhost:8000/v1"
    )
    assert text == "hello" and waits == []


async def test_with_a_key_and_no_base_url_an_unreachable_server_is_named(
    waits: list[float],
) -> None:
    """Issue 27: the message said "at the configured server" where OpenAI's own was meant."""
    model = resolve_chat_model("openai:fake", api_key="sk-test", structured_output="json_mode")
    with pytest.raises(RemoteError) as error:  # the tests' network guard refuses the connection
        await call_text(model, [HumanMessage("hi")])
    assert str(error.value).startswith(
        "cannot reach the LLM server at https://api.openai.com/v1 (nothing answers there)"
    )
