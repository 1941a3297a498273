"""The behavior checker role: short ids mapped back, batching, and the later-wins summary."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.agents.bookmarks.behavior_checker import (
    MAX_PARALLEL_BATCHES,
    BehaviorItem,
    LLMBehaviorClassifier,
    evidence_verdicts_schema,
    render_item,
    summarize_behavior,
)
from personae.errors import RemoteError
from personae.llm import LLMUsage, with_retry_budget
from personae.memory.bookmarks.storyline import StoryAction
from personae.testing import ScriptedChatModel, prompt_text


def act(position: int, who: str = "Kyon") -> StoryAction:
    return StoryAction(position, "ch", f"{who} acts {position}", (who,))


def item(position: int) -> BehaviorItem:
    return BehaviorItem(
        action=act(position), scene=(act(position - 2, "Haruhi"), act(position - 1, "Haruhi"))
    )


def ids_in(messages: list[BaseMessage]) -> list[str]:
    return re.findall(r"^(A\d+):", prompt_text(messages), re.MULTILINE)


def marked(messages: list[BaseMessage]) -> list[int]:
    return [int(p) for p in re.findall(r"^>>> \[(\d+)\]", prompt_text(messages), re.MULTILINE)]


async def test_verdicts_are_mapped_back_by_id_not_by_order() -> None:
    def reversed_verdicts(messages: list[BaseMessage]) -> dict[str, Any]:
        pairs = list(zip(ids_in(messages), marked(messages), strict=True))[::-1]
        return {i: p == 12 for i, p in pairs}

    model = ScriptedChatModel(responders={"EvidenceVerdicts": reversed_verdicts})
    verdicts, usage = await LLMBehaviorClassifier(model, 8).classify(
        "Does Kyon complain?", [item(10), item(12), item(14)]
    )
    assert verdicts == [False, True, False] and usage.calls == 1


async def test_the_ids_shown_are_the_schema_s_required_keys_and_a_missing_one_is_retried() -> None:
    replies: Iterator[dict[str, Any]] = iter([{"A1": True, "A7": True}, {"A1": True, "A2": False}])
    model = ScriptedChatModel(responders={"EvidenceVerdicts": lambda m: next(replies)})
    verdicts, usage = await LLMBehaviorClassifier(model, 8).classify("P", [item(10), item(12)])
    assert verdicts == [True, False] and usage.calls == 2
    retry = prompt_text(model.calls_for("EvidenceVerdicts")[1])
    assert "\nA2\n  Field required" in retry  # the missing id, named; A7 is not a key
    schema = evidence_verdicts_schema(["A1", "A2"]).model_json_schema()
    assert schema["required"] == ["A1", "A2"] and schema["additionalProperties"] is False


async def test_a_batch_still_invalid_is_asked_item_by_item_and_a_lost_item_is_no_evidence() -> None:
    def refuses_item_12(messages: list[BaseMessage]) -> Any:
        if 12 in marked(messages):
            return "I will not judge that one."
        return dict.fromkeys(ids_in(messages), True)

    model = ScriptedChatModel(responders={"EvidenceVerdicts": refuses_item_12})
    verdicts, usage = await LLMBehaviorClassifier(model, 8).classify(
        "P", [item(10), item(12), item(14)]
    )
    assert verdicts == [True, False, True] and usage.degraded == 1
    # the batch (3 tries), then 10 alone, 12 alone (3 tries), 14 alone
    assert usage.calls == 3 + 1 + 3 + 1
    assert [marked(m) for m in model.calls_for("EvidenceVerdicts")][3:] == [[10]] + [[12]] * 3 + [
        [14]
    ]


async def test_a_failed_batch_cancels_the_batches_not_started() -> None:
    started: list[int] = []

    def server_down_at_the_second(messages: list[BaseMessage]) -> Any:
        started.extend(marked(messages))
        if len(started) == 2:
            raise ConnectionError("the LLM server went away")
        return dict.fromkeys(ids_in(messages), True)

    scripted = ScriptedChatModel(
        responders={"EvidenceVerdicts": server_down_at_the_second}, latency=0.01
    )
    model = with_retry_budget(scripted, 0)  # a refused connection is not retried here
    items = [item(p) for p in range(10, 50)]  # 40 batches of one, 4 in flight at a time
    with pytest.raises(RemoteError, match="LLM"):
        await LLMBehaviorClassifier(model, 1).classify("P", items)
    await asyncio.sleep(0.2)  # anything still scheduled would have called by now
    assert len(started) <= MAX_PARALLEL_BATCHES + 1  # no call started after the failure


async def test_batches_of_batch_size_with_ids_restarting_per_call() -> None:
    def all_true(messages: list[BaseMessage]) -> dict[str, Any]:
        return dict.fromkeys(ids_in(messages), True)

    model = ScriptedChatModel(responders={"EvidenceVerdicts": all_true})
    items = [item(p) for p in range(10, 31)]  # 21 items
    verdicts, usage = await LLMBehaviorClassifier(model, 5).classify("P", items)
    calls = model.calls_for("EvidenceVerdicts")
    assert len(calls) == 5 and usage.calls == 5  # ceil(21 / 5)
    assert [len(ids_in(c)) for c in calls] == [5, 5, 5, 5, 1]
    assert sorted(p for c in calls for p in marked(c)) == list(range(10, 31))
    assert verdicts == [True] * 21


def test_an_item_shows_its_scene_then_the_marked_action() -> None:
    text = render_item("A3", item(10))
    assert text.splitlines() == [
        "A3:",
        "    [8] (Haruhi) Haruhi acts 8",
        "    [9] (Haruhi) Haruhi acts 9",
        ">>> [10] (Kyon) Kyon acts 10",
    ]


async def test_summary_weighs_all_evidence_oldest_first_later_favoured() -> None:
    model = ScriptedChatModel(responders={"BehaviorSummary": lambda m: {"answer": "He sighs."}})
    evidence = [act(p) for p in range(40, 0, -1)]  # 40 actions, given newest first
    answer, usage = await summarize_behavior(model, "How does Kyon react?", "Kyon", evidence)
    assert answer == "He sighs." and usage.calls == 1
    text = prompt_text(model.calls_for("BehaviorSummary")[0])
    shown = [int(p) for p in re.findall(r"^\[(\d+)\]", text, re.MULTILINE)]
    assert shown == list(range(1, 41))  # every piece, not only the latest 24
    assert "prioritize the pattern implied by the later" in text


async def test_no_evidence_means_no_summary_call() -> None:
    model = ScriptedChatModel()
    assert await summarize_behavior(model, "Q?", "Kyon", []) == ("", LLMUsage())
    assert model.calls == []
