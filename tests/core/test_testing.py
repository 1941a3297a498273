"""The public test kit: a scripted model that answers any bound schema validly by default."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Literal

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field

import personae.agents
from personae.llm import call_structured
from personae.testing import ScriptedChatModel


class Verdict(BaseModel):
    """A nested schema with the constraints agents' schemas use."""

    label: Literal["supported", "contradicted"]
    ids: list[str] = Field(min_length=2)
    score: float = Field(ge=0.5, le=1.0)
    note: str | None = None
    kept: list[int] = Field(default_factory=list)


def agent_schemas() -> list[type[BaseModel]]:
    """Every pydantic schema the LLM roles in agents/ define (their structured outputs)."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(personae.agents.__path__):
        module = importlib.import_module(f"personae.agents.{info.name}")
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseModel) and value is not BaseModel:
                if value.__module__ == module.__name__:
                    found[f"{info.name}.{name}"] = value
    return [found[key] for key in sorted(found)]


async def test_an_unscripted_schema_gets_a_valid_answer() -> None:
    model = ScriptedChatModel()
    verdict, usage = await call_structured(model, Verdict, [HumanMessage("judge")])
    assert verdict.label == "supported" and len(verdict.ids) == 2 and verdict.score == 0.5
    assert usage.calls == 1 and model.calls_for("Verdict")


@pytest.mark.parametrize("schema", agent_schemas(), ids=lambda s: s.__name__)
async def test_every_agent_schema_has_a_default_answer(schema: type[BaseModel]) -> None:
    parsed, _ = await call_structured(ScriptedChatModel(), schema, [HumanMessage("go")], retries=0)
    assert isinstance(parsed, schema)


async def test_plain_text_without_a_responder_is_a_fixed_answer() -> None:
    answer = await ScriptedChatModel().ainvoke("hello")
    assert answer.content == "(scripted answer)"
