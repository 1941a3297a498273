"""The public test kit: a scripted model that answers any bound schema validly by default,
and in a "valid but random" mode that follows the schema and nothing else."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Literal

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field

import personae.agents
from personae.llm import InvalidAnswerError, call_structured
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
    for info in pkgutil.walk_packages(personae.agents.__path__, "personae.agents."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseModel) and value is not BaseModel:
                if value.__module__ == module.__name__:
                    found[f"{info.name}.{name}"] = value
    assert len(found) > 40  # every paper's roles (a flat walk finds only the subpackages)
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


@pytest.mark.parametrize("schema", agent_schemas(), ids=lambda s: s.__name__)
async def test_every_agent_schema_has_random_answers_it_accepts(schema: type[BaseModel]) -> None:
    for seed in range(5):
        model = ScriptedChatModel(random_seed=seed)
        parsed, _ = await call_structured(model, schema, [HumanMessage(f"go {seed}")], retries=0)
        assert isinstance(parsed, schema)


async def test_random_answers_are_seeded_per_prompt_and_vary_within_the_schema() -> None:
    prompt = [HumanMessage("judge S1 and S2")]
    first = [(await call_structured(ScriptedChatModel(random_seed=7), Verdict, prompt))[0]]
    again = (await call_structured(ScriptedChatModel(random_seed=7), Verdict, prompt))[0]
    assert again == first[0]  # the same seed and prompt: the same answer, whatever the order
    answers = [
        (await call_structured(ScriptedChatModel(random_seed=s), Verdict, prompt))[0]
        for s in range(40)
    ]
    assert {a.label for a in answers} == {"supported", "contradicted"}  # random enum members
    assert {len(a.ids) for a in answers} >= {2, 3}  # the minimum, and more
    assert all(0.5 <= a.score <= 1.0 for a in answers) and len({a.score for a in answers}) > 3
    assert any(a.kept == [] for a in answers) and any(a.kept for a in answers)
    assert any(a.note is None for a in answers) and any(a.note is not None for a in answers)
    ids = {i for a in answers for i in a.ids}
    assert "" in ids or any(not i.strip() for i in ids)  # minimum-length strings
    assert ids & {"S1", "S99", "A138", "B7"}  # ids the schema allows, shown or not
    text = await ScriptedChatModel(random_seed=3).ainvoke("hello")
    assert isinstance(text.content, str) and text.content.strip()


async def test_plain_text_without_a_responder_is_a_fixed_answer() -> None:
    answer = await ScriptedChatModel().ainvoke("hello")
    assert answer.content == "(scripted answer)"


async def test_concurrent_calls_binding_schemas_of_one_name_each_get_their_own() -> None:
    import asyncio

    from personae.agents.arcane.designers import location_schema

    model = ScriptedChatModel(random_seed=2, latency=0.01)  # every call binds, then answers
    offered = [(f"ch{n}_evt01",) for n in range(1, 25)]
    calls = [
        call_structured(model, location_schema(ids), [HumanMessage(f"locate {ids}")], retries=0)
        for ids in offered
    ]
    answers = await asyncio.gather(*calls)  # all bound before any answers
    assert all(a.event_id in (None, ids[0]) for (a, _), ids in zip(answers, offered, strict=True))


async def test_a_share_of_random_answers_can_ignore_the_schema() -> None:
    prompts = [[HumanMessage(f"judge {n}")] for n in range(60)]
    malformed = 0
    for prompt in prompts:
        model = ScriptedChatModel(random_seed=5, random_malformed=0.3)
        try:
            await call_structured(model, Verdict, prompt, retries=0)
        except InvalidAnswerError:
            malformed += 1
    assert 8 <= malformed <= 30  # about 30 %, seeded
