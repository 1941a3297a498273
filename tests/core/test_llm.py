from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from personae.errors import ConfigurationError, RemoteError
from personae.llm import call_structured, resolve_chat_model
from personae.settings import load_settings
from personae.testing import ScriptedChatModel


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


def test_resolve_model_explains_missing_configuration() -> None:
    settings = load_settings({})
    with pytest.raises(ConfigurationError, match="OPENAI_BASE_URL"):
        resolve_chat_model(settings.model, settings)
    with pytest.raises(ConfigurationError, match="provider:model"):
        resolve_chat_model("gpt-4", settings)


def test_resolve_openai_compatible_server() -> None:
    settings = load_settings(
        {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "PERSONAE_MODEL": "openai:qwen"}
    )
    model = resolve_chat_model(settings.model, settings)
    assert model.model_name == "qwen"  # type: ignore[attr-defined]
    assert settings.fast_model == "openai:qwen"


def test_openai_models_are_built_once_per_server_and_callers_get_their_own_copy() -> None:
    settings = load_settings({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    first = resolve_chat_model("openai:qwen", settings)
    second = resolve_chat_model("openai:qwen", settings)
    # One underlying client (built once), but a caller's field change stays its own.
    assert first is not second
    assert first.root_async_client is second.root_async_client  # type: ignore[attr-defined]
    first.max_retries = 0  # type: ignore[attr-defined]
    assert resolve_chat_model("openai:qwen", settings).max_retries == 2  # type: ignore[attr-defined]
    other = load_settings({"OPENAI_BASE_URL": "http://127.0.0.1:10/v1"})
    elsewhere = resolve_chat_model("openai:qwen", other)
    assert elsewhere.root_async_client is not first.root_async_client  # type: ignore[attr-defined]
    assert elsewhere.openai_api_base == "http://127.0.0.1:10/v1"  # type: ignore[attr-defined]
