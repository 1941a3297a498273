"""The one answer store: its key recipe, validation on a hit, counts, and I/O off the loop."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Literal

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from personae import answer_store
from personae.answer_store import AnswerStore, answer_key, model_name_of, sampling_of
from personae.files import write_json_atomic
from personae.llm import LLMUsage, call_structured, call_text
from personae.testing import ScriptedChatModel

PROMPT = [SystemMessage("You judge."), HumanMessage("Is it so?")]


class Verdict(BaseModel):
    """A verdict."""

    label: Literal["yes", "no"]


def _verdict_with_a_reason() -> type[BaseModel]:
    class Verdict(BaseModel):  # same name, another JSON schema: another kind of answer
        """A verdict."""

        label: Literal["yes", "no"]
        reason: str

    return Verdict


def test_every_part_of_the_recipe_changes_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    key = answer_key("m1", {}, Verdict, PROMPT)
    assert key == answer_key("m1", {}, Verdict, list(PROMPT))  # a recipe, not an identity
    others = [
        answer_key("m2", {}, Verdict, PROMPT),
        answer_key("m1", {"temperature": 0.7}, Verdict, PROMPT),
        answer_key("m1", {}, _verdict_with_a_reason(), PROMPT),
        answer_key("m1", {}, None, PROMPT),
        answer_key("m1", {}, Verdict, [*PROMPT[:1], HumanMessage("Is it not so?")]),
        answer_key("m1", {}, Verdict, [HumanMessage("You judge."), PROMPT[1]]),  # message type
        answer_key("m1", {}, Verdict, PROMPT, scope="timechara"),
    ]
    monkeypatch.setattr(answer_store, "STORE_VERSION", answer_store.STORE_VERSION + 1)
    others.append(answer_key("m1", {}, Verdict, PROMPT))
    assert len({key, *others}) == len(others) + 1


def test_sampling_and_name_come_from_the_model() -> None:
    cold = ChatOpenAI(
        model="gpt-x", temperature=0, api_key=SecretStr("k"), base_url="http://127.0.0.1:9"
    )
    warm = cold.model_copy(update={"temperature": 0.9, "top_p": 0.5})
    assert (
        model_name_of(cold) == "gpt-x" and model_name_of(ScriptedChatModel()) == "ScriptedChatModel"
    )
    assert sampling_of(cold)["temperature"] == 0
    assert {"temperature": 0.9, "top_p": 0.5}.items() <= sampling_of(warm).items()
    assert answer_key("m", sampling_of(cold), None, PROMPT) != answer_key(
        "m", sampling_of(warm), None, PROMPT
    )


async def test_a_hit_costs_nothing_and_is_counted(tmp_path: Path) -> None:
    model = ScriptedChatModel(responders={"Verdict": lambda _: {"label": "yes"}})
    store = AnswerStore(tmp_path)
    first, paid = await call_structured(model, Verdict, PROMPT, store=store, model_name="m")
    again, free = await call_structured(model, Verdict, PROMPT, store=store, model_name="m")
    assert first == again == Verdict(label="yes") and len(model.calls) == 1
    assert paid.calls == 1 and free == LLMUsage(cache_hits=1)
    assert free.as_dict()["cache_hits"] == 1 and "cache_hits" not in paid.as_dict()
    assert (store.hits, store.misses) == (1, 1)
    [entry] = tmp_path.rglob("*.json")
    assert entry.parent.name == entry.stem[:2]  # <key[:2]>/<key>.json, as every store writes


async def test_an_entry_that_no_longer_validates_is_a_logged_miss(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel(responders={"Verdict": lambda _: {"label": "no"}})
    store = AnswerStore(tmp_path)
    key = store.key("m", {}, Verdict, PROMPT)
    await store.keep(key, "m", {"label": "maybe"}, {"llm_calls": 1})  # stored by older code
    with caplog.at_level(logging.INFO, logger="personae.answer_store"):
        answer, usage = await call_structured(model, Verdict, PROMPT, store=store, model_name="m")
    assert answer.label == "no" and usage.calls == 1 and len(model.calls) == 1
    assert "no longer valid" in caplog.text and (store.hits, store.misses) == (0, 1)

    def refuse_no(verdict: Verdict) -> None:  # the code-side check tightened since
        if verdict.label == "no":
            raise ValueError("no is not allowed")

    model.responders["Verdict"] = lambda _: {"label": "yes"}
    answer, _ = await call_structured(
        model, Verdict, PROMPT, check=refuse_no, store=store, model_name="m"
    )
    assert answer.label == "yes" and len(model.calls) == 2


async def test_a_text_entry_is_never_read_as_a_structured_one(tmp_path: Path) -> None:
    model = ScriptedChatModel(
        responders={"text": lambda _: "yes", "Verdict": lambda _: {"label": "no"}}
    )
    store = AnswerStore(tmp_path)
    assert (await call_text(model, PROMPT, store=store))[0] == "yes"
    verdict, usage = await call_structured(model, Verdict, PROMPT, store=store)
    assert verdict.label == "no" and usage.calls == 1 and len(list(tmp_path.rglob("*.json"))) == 2


async def test_scoped_views_keep_apart_and_count_together(tmp_path: Path) -> None:
    answers = iter(["first", "second"])
    model = ScriptedChatModel(responders={"text": lambda _: next(answers)})
    store = AnswerStore(tmp_path)
    vanilla, timechara = store.scoped("roleplay:vanilla"), store.scoped("roleplay:timechara")
    assert (await call_text(model, PROMPT, store=vanilla))[0] == "first"
    assert (await call_text(model, PROMPT, store=timechara))[0] == "second"
    assert (await call_text(model, PROMPT, store=vanilla))[0] == "first"
    assert (store.hits, store.misses) == (1, 2) and len(model.calls) == 2


async def test_no_directory_stores_nothing_and_counts_misses(tmp_path: Path) -> None:
    model = ScriptedChatModel(responders={"text": lambda _: "hi"})
    store = AnswerStore(None)
    for _ in range(2):
        await call_text(model, PROMPT, store=store)
    assert len(model.calls) == 2 and (store.hits, store.misses) == (0, 2)


async def test_files_are_read_and_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    original_read, original_write = AnswerStore._read, write_json_atomic

    def read(self: AnswerStore, *args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original_read(self, *args)

    def write(*args: Any) -> None:
        threads.append(threading.current_thread().name)
        original_write(*args)

    monkeypatch.setattr(AnswerStore, "_read", read)
    monkeypatch.setattr(answer_store, "write_json_atomic", write)
    model = ScriptedChatModel(responders={"text": lambda _: "hi"})
    for _ in range(2):
        await call_text(model, PROMPT, store=AnswerStore(tmp_path))
    assert len(threads) == 3 and threading.main_thread().name not in threads
