"""Per-endpoint structured-output method, context window and answer cap, on a loopback server.

The real ``ChatOpenAI`` client runs against :class:`FakeOpenAIChat`, which takes only the
methods a test gives it and refuses the others as llama-cpp-python's server does (HTTP 500).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from fake_openai import FakeOpenAIChat
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from personae import llm_endpoint
from personae.agents.answer_schemas import bounded, non_blank
from personae.errors import ConfigurationError, RemoteError
from personae.llm import (
    call_structured,
    call_text,
    resolve_chat_model,
    with_retry_budget,
    with_sampling,
)
from personae.llm_endpoint import (
    chosen_methods,
    parse_context_window,
    parse_structured_output,
    prompts_cut,
    window_in,
)
from personae.loopback import LoopbackWebServer


class Pick(BaseModel):
    """A choice among ids."""

    id: str


def fake(**options: Any) -> FakeOpenAIChat:
    return FakeOpenAIChat({"Pick": lambda _: {"id": "S1"}, "text": lambda _: "hello"}, **options)


def model_on(server: LoopbackWebServer, **options: Any) -> BaseChatModel:
    return resolve_chat_model("openai:fake", base_url=f"{server.url}/v1", **options)


def method_of(body: dict[str, Any]) -> str:
    if body.get("tools"):
        return "function_calling"
    return str((body.get("response_format") or {}).get("type", "text"))


async def test_auto_takes_the_first_method_the_server_accepts_and_remembers_it() -> None:
    chat = fake(methods=("function_calling",))
    with LoopbackWebServer(chat) as server:
        model = model_on(server)
        first, usage = await call_structured(model, Pick, [HumanMessage("pick")])
        second, _ = await call_structured(model, Pick, [HumanMessage("pick again")])
    assert first.id == second.id == "S1"
    assert [method_of(b) for b in chat.refused] == ["json_schema"]  # tried once, not twice
    assert [method_of(b) for b in chat.requests] == ["function_calling"] * 2
    assert usage.calls == 1  # a refusal costs nothing and is no answer
    assert chosen_methods() == {f"fake@{server.url}/v1": "function_calling"}


async def test_a_server_that_takes_json_schemas_gets_one_first() -> None:
    chat = fake(methods=("json_schema", "function_calling"))
    with LoopbackWebServer(chat) as server:
        pick, _ = await call_structured(model_on(server), Pick, [HumanMessage("pick")])
    assert pick.id == "S1" and chat.refused == []
    schema = chat.requests[0]["response_format"]["json_schema"]
    assert schema["name"] == "Pick" and schema["schema"]["required"] == ["id"]
    assert chosen_methods() == {f"fake@{server.url}/v1": "json_schema"}


async def test_json_mode_puts_the_schema_in_the_system_message() -> None:
    chat = fake(methods=("json_mode",))
    with LoopbackWebServer(chat) as server:
        messages = [SystemMessage("You pick."), HumanMessage("pick")]
        pick, _ = await call_structured(model_on(server), Pick, messages)
    assert pick.id == "S1"
    assert [method_of(b) for b in chat.refused] == ["json_schema", "function_calling"]
    sent = chat.requests[0]
    assert sent["response_format"] == {"type": "json_object"}
    system = sent["messages"][0]["content"]
    assert system.startswith("You pick.") and "matches this JSON schema (Pick)" in system
    assert '"required":["id"]' in system


async def test_a_set_method_is_used_alone_and_a_refusal_names_the_setting() -> None:
    chat = fake(methods=("function_calling",))
    with LoopbackWebServer(chat) as server:
        # A 500 may pass, so it is retried; the message then names the method it was for.
        model = with_retry_budget(model_on(server, structured_output="json_schema"), 0)
        with pytest.raises(RemoteError) as error:
            await call_structured(model, Pick, [HumanMessage("pick")])
        told = model_on(server, structured_output="function_calling")
        await call_structured(told, Pick, [HumanMessage("pick")])
    message = str(error.value)
    assert "HTTP 500" in message and "Input should be 'text' or 'json_object'" in message
    assert "PERSONAE_STRUCTURED_OUTPUT=auto" in message and "\n" not in message
    assert len(chat.refused) == 1  # not retried: the server will not change its mind
    assert [method_of(b) for b in chat.requests] == ["function_calling"]


async def test_a_server_refusing_every_method_says_so_once() -> None:
    chat = fake(methods=())
    with LoopbackWebServer(chat) as server:
        with pytest.raises(RemoteError) as error:
            await call_structured(model_on(server), Pick, [HumanMessage("pick")])
    message = str(error.value)
    assert message.startswith(f"the LLM server at {server.url}/v1 refused every structured-output")
    for method in ("json_schema: HTTP 500", "function_calling: HTTP 500", "json_mode: HTTP 500"):
        assert method in message
    assert "PERSONAE_STRUCTURED_OUTPUT" in message and error.value.exit_code == 3
    assert chosen_methods() == {}


async def test_a_malformed_json_schema_answer_is_retried_with_feedback() -> None:
    answers = iter(["not json at all", '{"id": "S2"}'])
    chat = FakeOpenAIChat({"Pick": lambda _: next(answers)}, methods=("json_schema",))
    with LoopbackWebServer(chat) as server:
        pick, usage = await call_structured(model_on(server), Pick, [HumanMessage("pick")])
    assert pick.id == "S2" and usage.calls == 2
    feedback = chat.requests[1]["messages"][-1]["content"]
    assert feedback.startswith("Your previous answer was invalid") and "Pick" in feedback


class Said(BaseModel):
    """A rating and what was said."""

    text: str = non_blank("what was said")
    score: int = bounded(1, 5)


async def test_a_tool_call_carries_what_grammars_enforce_and_the_answer_is_validated() -> None:
    blank, too_high, incomplete = (
        {"text": "  ", "score": 3},
        {"text": "Y", "score": 9},
        {"text": "N"},
    )
    answers = iter([blank, too_high, incomplete, {"text": "Fine.", "score": 4}])
    chat = FakeOpenAIChat({"Said": lambda _: next(answers)}, methods=("function_calling",))
    with LoopbackWebServer(chat) as server:
        model = model_on(server, structured_output="function_calling")
        said, usage = await call_structured(model, Said, [HumanMessage("say")], retries=3)
    assert type(said) is Said and (said.text, said.score) == ("Fine.", 4) and usage.calls == 4
    parameters = chat.requests[0]["tools"][0]["function"]["parameters"]
    # no pattern (a grammar reads it on the raw JSON: the string would never end), the bounds
    # as an enum (a grammar ignores minimum and maximum)
    text = {"type": "string", "minLength": 1, "description": "what was said"}
    assert parameters["properties"]["text"] == text
    assert parameters["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    feedback = [body["messages"][-1]["content"] for body in chat.requests[1:]]
    assert "should match pattern" in feedback[0] and "less than or equal to 5" in feedback[1]
    assert "Field required" in feedback[2]


async def test_a_json_schema_for_a_compatible_server_has_no_pattern_either() -> None:
    answers = iter([{"text": " ", "score": 2}, {"text": "Fine.", "score": 2}])
    chat = FakeOpenAIChat({"Said": lambda _: next(answers)}, methods=("json_schema",))
    with LoopbackWebServer(chat) as server:  # llama.cpp's server and Ollama take JSON schemas
        said, usage = await call_structured(model_on(server), Said, [HumanMessage("say")])
    assert type(said) is Said and said.text == "Fine." and usage.calls == 2
    sent = chat.requests[0]["response_format"]["json_schema"]
    assert sent["name"] == "Said" and "pattern" not in sent["schema"]["properties"]["text"]
    assert "should match pattern" in chat.requests[1]["messages"][-1]["content"]


async def test_a_prompt_larger_than_the_stated_window_is_cut_to_fit_with_a_notice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chat = fake(n_ctx=1024)
    passage = " ".join(f"word{i}" for i in range(3000))  # ~5,000 tokens
    with LoopbackWebServer(chat) as server, caplog.at_level(logging.WARNING, "personae.notices"):
        model = model_on(server, structured_output="function_calling")
        pick, usage = await call_structured(model, Pick, [HumanMessage(f"{passage}\nPick one.")])
        text, text_usage = await call_text(model, [HumanMessage(f"{passage}\nSay hi.")])
    assert pick.id == "S1" and text == "hello"
    assert usage.cut_prompts == 1 and text_usage.as_dict()["cut_prompts"] == 1
    for body in chat.requests:
        content = body["messages"][-1]["content"]
        assert "characters cut to fit the model's context window" in content
        assert content.startswith("word0 word1") and content.rstrip().endswith(("one.", "hi."))
        sent = len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools", [])))
        assert sent / 3 + body["max_tokens"] <= 1024  # prompt and answer fit the window
        assert body["max_tokens"] == body["max_completion_tokens"] == 256
    notices = [r.getMessage() for r in caplog.records if r.name == "personae.notices"]
    assert len(notices) == 1 and "1024-token context window" in notices[0]
    assert "PERSONAE_CONTEXT_WINDOW" in notices[0]
    assert prompts_cut() == {f"fake@{server.url}/v1": 2}


async def test_the_window_setting_beats_the_server_and_small_prompts_go_whole() -> None:
    chat = fake(n_ctx=100_000)
    with LoopbackWebServer(chat) as server:
        model = model_on(server, structured_output="function_calling", context_window=2048)
        await call_structured(model, Pick, [HumanMessage("pick " * 2000)])
        await call_structured(model, Pick, [HumanMessage("pick")])
    first, second = (b["messages"][-1]["content"] for b in chat.requests)
    assert "cut to fit" in first and len(first) < 2048 * 3
    assert second == "pick"
    assert [b["max_tokens"] for b in chat.requests] == [512, 512]  # a quarter of the window


async def test_a_cap_reaches_compatible_servers_as_max_tokens_too() -> None:
    chat = fake()
    with LoopbackWebServer(chat) as server:
        model = with_sampling(model_on(server), {"max_tokens": 30})
        await call_text(model, [HumanMessage("hi")])
        await call_text(model_on(server), [HumanMessage("hi")])  # no cap, no window: none sent
    capped, free = chat.requests
    assert capped["max_tokens"] == capped["max_completion_tokens"] == 30
    assert "max_tokens" not in free and "max_completion_tokens" not in free


def test_openai_itself_gets_only_max_completion_tokens() -> None:
    openai_model = resolve_chat_model("openai:gpt-4.1", api_key="sk-test")
    local = resolve_chat_model("openai:m", base_url="http://127.0.0.1:9/v1")
    assert llm_endpoint.is_openai_itself(openai_model)
    assert not llm_endpoint.is_openai_itself(local)


def test_windows_are_read_where_each_server_states_them() -> None:
    llama_cpp_props = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}
    llama_cpp_models = {"data": [{"id": "m", "meta": {"n_ctx_train": 8192, "n_vocab": 49152}}]}
    vllm = {"data": [{"id": "other", "max_model_len": 1}, {"id": "m", "max_model_len": 32768}]}
    assert window_in(llama_cpp_props, "m") == 4096
    assert window_in(llama_cpp_models, "m") == 8192
    assert window_in(vllm, "m") == 32768
    assert window_in({"data": [{"id": "m", "object": "model"}]}, "m") is None  # OpenAI, Ollama
    assert window_in({"n_ctx": True}, "m") is None and window_in([], "m") is None


def test_settings_are_checked_with_the_fix_in_the_message() -> None:
    assert parse_structured_output("") == "auto"
    assert parse_structured_output(" JSON_MODE ") == "json_mode"
    with pytest.raises(ConfigurationError, match="PERSONAE_STRUCTURED_OUTPUT='tools'.*doctor"):
        parse_structured_output("tools")
    assert parse_context_window("") is None and parse_context_window("8192") == 8192
    with pytest.raises(ConfigurationError, match="PERSONAE_CONTEXT_WINDOW='8k'"):
        parse_context_window("8k")
    with pytest.raises(ConfigurationError, match="512 or more"):
        parse_context_window("100")


def test_the_cli_prints_notices_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from personae.cli import main

    assert main(["doctor", "--no-web", "--json"]) == 2  # nothing configured: quick
    capsys.readouterr()
    llm_endpoint.notices.warning("a prompt was cut")
    assert capsys.readouterr().err == "personae: notice: a prompt was cut\n"
