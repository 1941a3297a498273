"""The behavior checker role: short ids mapped back, batching, and the later-wins summary."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import BaseMessage

from personae.agents.bookmarks.behavior_checker import (
    BehaviorItem,
    LLMBehaviorClassifier,
    render_item,
    summarize_behavior,
)
from personae.llm import LLMUsage
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
        return {"verdicts": [{"id": i, "supports": p == 12} for i, p in pairs]}

    model = ScriptedChatModel(responders={"EvidenceVerdicts": reversed_verdicts})
    verdicts, usage = await LLMBehaviorClassifier(model, 8).classify(
        "Does Kyon complain?", [item(10), item(12), item(14)]
    )
    assert verdicts == [False, True, False] and usage.calls == 1


async def test_invented_and_missing_ids_are_rejected_and_retried() -> None:
    replies: Iterator[dict[str, Any]] = iter(
        [
            {"verdicts": [{"id": "A1", "supports": True}, {"id": "A7", "supports": True}]},
            {"verdicts": [{"id": "A1", "supports": True}, {"id": "A2", "supports": False}]},
        ]
    )
    model = ScriptedChatModel(responders={"EvidenceVerdicts": lambda m: next(replies)})
    verdicts, usage = await LLMBehaviorClassifier(model, 8).classify("P", [item(10), item(12)])
    assert verdicts == [True, False] and usage.calls == 2
    retry = prompt_text(model.calls_for("EvidenceVerdicts")[1])
    assert "unknown ids: A7" in retry and "missing ids: A2" in retry


async def test_batches_of_batch_size_with_ids_restarting_per_call() -> None:
    def all_true(messages: list[BaseMessage]) -> dict[str, Any]:
        return {"verdicts": [{"id": i, "supports": True} for i in ids_in(messages)]}

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
