"""The step journal in the LLM helper: a journaled answer is not paid again, a bad one is."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from personae.llm import call_structured, call_text, with_call_journal
from personae.testing import ScriptedChatModel


class Pick(BaseModel):
    """A choice among ids."""

    id: str


async def test_a_journaled_answer_comes_back_with_what_it_cost(tmp_path: Path) -> None:
    answers = iter(["malformed"])
    model = ScriptedChatModel(responders={"Pick": lambda _: next(answers, {"id": "S1"})})
    journaled = with_call_journal(model, str(tmp_path))
    first, paid = await call_structured(journaled, Pick, [HumanMessage("pick")])
    again, usage = await call_structured(journaled, Pick, [HumanMessage("pick")])
    assert first == again == Pick(id="S1")
    assert paid.calls == 2 and usage == paid  # the resumed step counts what the answer cost
    assert len(model.calls) == 2  # and pays nothing for it
    await call_structured(journaled, Pick, [HumanMessage("pick another")])
    assert len(model.calls) == 3 and len(list(tmp_path.rglob("*.json"))) == 2


async def test_damaged_or_rejected_entries_are_asked_again(tmp_path: Path) -> None:
    model = ScriptedChatModel(responders={"Pick": lambda _: {"id": "S2"}})
    journaled = with_call_journal(model, str(tmp_path))
    await call_structured(journaled, Pick, [HumanMessage("pick")])
    [entry] = tmp_path.rglob("*.json")
    entry.write_text('{"answer": {"id"', encoding="utf-8")  # torn by hand: never by a kill
    pick, usage = await call_structured(journaled, Pick, [HumanMessage("pick")])
    assert pick.id == "S2" and usage.calls == 1 and len(model.calls) == 2

    def refuse_s2(answer: Pick) -> None:
        if answer.id == "S2":
            raise ValueError("S2 is gone")

    model.responders["Pick"] = lambda _: {"id": "S3"}
    pick, _ = await call_structured(journaled, Pick, [HumanMessage("pick")], check=refuse_s2)
    assert pick.id == "S3" and len(model.calls) == 3


async def test_text_answers_are_journaled_and_no_journal_means_no_files(tmp_path: Path) -> None:
    model = ScriptedChatModel(responders={"text": lambda _: "hello"})
    journaled = with_call_journal(model, str(tmp_path / "j"))
    assert (await call_text(journaled, [HumanMessage("hi")]))[0] == "hello"
    text, usage = await call_text(journaled, [HumanMessage("hi")])
    assert text == "hello" and usage.calls == 1 and len(model.calls) == 1
    await call_text(model, [HumanMessage("hi")])  # the plain model: called, nothing written
    assert len(model.calls) == 2 and len(list((tmp_path / "j").rglob("*.json"))) == 1
