from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field

from personae.errors import ConfigurationError, RemoteError
from personae.llm import call_structured, resolve_chat_model
from personae.settings import Settings, load_settings
from personae.testing import ScriptedChatModel, override_models, reset_model_overrides


class Pick(BaseModel):
    """A choice among ids."""

    id: str


async def test_call_structured_retries_malformed_and_rejected_answers() -> None:
    answers = iter(["not json at all", {"id": "S9"}, {"id": "S1"}])
    model = ScriptedChatModel(responders={"Pick": lambda _: next(answers)})

    def only_known(pick: Pick) -> None:
        if pick.id not in {"S1", "S2"}:
            raise ValueError(f"unknown id {pick.id}")

    pick, usage = await call_structured(model, Pick, [HumanMessage("pick")], check=only_known)
    assert pick.id == "S1"
    assert usage.calls == 3
    assert usage.input_tokens > 0
    last_prompt = model.calls_for("Pick")[-1]
    assert "unknown id S9" in str(last_prompt[-1].content)


async def test_call_structured_gives_up_with_one_line_error() -> None:
    model = ScriptedChatModel(responders={"Pick": lambda _: "nope"})
    with pytest.raises(RemoteError, match="malformed Pick output 3 times"):
        await call_structured(model, Pick, [HumanMessage("pick")])


class Rating(BaseModel):
    """A bounded percentage."""

    percent: int = Field(ge=0, le=100)


async def test_a_multi_line_validation_error_still_makes_a_one_line_message() -> None:
    # llama.cpp's grammars ignore numeric bounds: a real model answered 365 here.
    model = ScriptedChatModel(responders={"Rating": lambda _: {"percent": 365}})
    with pytest.raises(RemoteError) as error:
        await call_structured(model, Rating, [HumanMessage("rate")])
    message = str(error.value)
    assert "\n" not in message
    assert "percent Input should be less than or equal to 100" in message


def on(settings: Settings, spec: str) -> BaseChatModel:
    """The chat model of ``spec`` on the server ``settings`` name."""
    return resolve_chat_model(
        spec, base_url=settings.openai_base_url, api_key=settings.openai_api_key
    )


def test_resolve_model_explains_missing_configuration() -> None:
    settings = load_settings({})
    with pytest.raises(ConfigurationError, match="OPENAI_BASE_URL"):
        on(settings, settings.model)
    with pytest.raises(ConfigurationError, match="provider:model"):
        on(settings, "gpt-4")


def test_resolve_openai_compatible_server() -> None:
    settings = load_settings(
        {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "PERSONAE_MODEL": "openai:qwen"}
    )
    model = on(settings, settings.model)
    assert model.model_name == "qwen"  # type: ignore[attr-defined]
    assert settings.fast_model == "openai:qwen"


def test_openai_models_are_built_once_per_server_and_callers_get_their_own_copy() -> None:
    settings = load_settings({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    first = on(settings, "openai:qwen")
    second = on(settings, "openai:qwen")
    # One underlying client (built once), but a caller's field change stays its own.
    assert first is not second
    assert first.root_async_client is second.root_async_client  # type: ignore[attr-defined]
    first.temperature = 0.3  # type: ignore[attr-defined]
    assert on(settings, "openai:qwen").temperature is None  # type: ignore[attr-defined]
    assert first.max_retries == 0  # type: ignore[attr-defined]  # call_structured retries
    other = load_settings({"OPENAI_BASE_URL": "http://127.0.0.1:10/v1"})
    elsewhere = on(other, "openai:qwen")
    assert elsewhere.root_async_client is not first.root_async_client  # type: ignore[attr-defined]
    assert elsewhere.openai_api_base == "http://127.0.0.1:10/v1"  # type: ignore[attr-defined]


def test_the_override_answers_every_spec_or_the_named_ones_and_unwinds() -> None:
    every, judge = ScriptedChatModel(), ScriptedChatModel()
    empty = load_settings({})
    with override_models(every):
        assert on(empty, "openai:a") is every  # no server configured: the override answers
        with override_models(specs={"openai:judge": judge}):
            assert on(empty, "openai:judge") is judge and on(empty, "openai:a") is every
        assert on(empty, "openai:judge") is every
        with pytest.raises(ConfigurationError, match="provider:model"):
            on(empty, "judge")  # a malformed spec is still an error
    with pytest.raises(ConfigurationError, match="no LLM is configured"):
        on(empty, "openai:a")
    override_models(every)  # without `with`: until reset
    assert on(empty, "openai:b") is every
    reset_model_overrides()
    with pytest.raises(ConfigurationError, match="no LLM is configured"):
        on(empty, "openai:b")
    override_models(every)  # left applied: conftest resets it after the test


def test_no_override_leaks_from_an_earlier_test() -> None:
    # Ordered after the test above, which left one applied: the autouse fixture cleared it.
    with pytest.raises(ConfigurationError, match="no LLM is configured"):
        on(load_settings({}), "openai:b")


@pytest.mark.parametrize(
    "answer",
    [{"id": "S1"}, {"id": 5}, {"other": "x"}, "plain text, no tool call"],
    ids=["valid", "wrong-type", "missing-key", "no-tool-call"],
)
async def test_the_lean_structured_call_answers_as_langchain_s_include_raw_chain(
    answer: object,
) -> None:
    """``_StructuredCall`` (no thread hand-offs) gives what ``include_raw=True`` gives:
    the same raw message, parsed value, and a parser error of the same type."""
    from personae.llm import _structured, _StructuredCall

    model = ScriptedChatModel(responders={"Pick": lambda _: answer})
    prompt = [HumanMessage("pick")]
    lean = _structured(model, Pick)
    assert isinstance(lean, _StructuredCall)
    mine = await lean.ainvoke(prompt)
    theirs: Any = await model.with_structured_output(Pick, include_raw=True).ainvoke(prompt)
    assert mine["raw"].tool_calls == theirs["raw"].tool_calls
    assert mine["raw"].content == theirs["raw"].content
    assert mine["parsed"] == theirs["parsed"]
    assert type(mine["parsing_error"]) is type(theirs["parsing_error"])


async def test_the_lean_structured_call_lets_a_model_error_through() -> None:
    from personae.llm import _structured

    def down(_: object) -> object:
        raise ConnectionError("server went away")

    model = ScriptedChatModel(responders={"Pick": down})
    with pytest.raises(ConnectionError, match="server went away"):
        await _structured(model, Pick).ainvoke([HumanMessage("pick")])
