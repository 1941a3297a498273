"""The bookmark matcher: one choice from an enum of this call's ids, mapped back; degrades."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from personae.agents.bookmarks.matcher import match_choice_schema, match_question
from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType
from personae.testing import ScriptedChatModel, prompt_text


def bookmark(number: int, question: str, versions: list[tuple[int, str]]) -> Bookmark:
    return Bookmark(
        id=f"bm-{number}",
        question=question,
        type=BookmarkType.STATE,
        character="Kyon",
        answer=versions[-1][1],
        position=versions[-1][0],
        history=[AnswerVersion(position=p, answer=a) for p, a in versions],
    )


CANDIDATES = [
    bookmark(17, "Where is Kyon now?", [(0, ""), (40, "at school")]),
    bookmark(4, "Who is Kyon with now?", [(0, ""), (30, "Haruhi")]),
]


def answers(*choices: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from choices


async def test_reuse_maps_the_short_id_back_to_the_bookmark() -> None:
    model = ScriptedChatModel(responders={"MatchChoice": lambda m: {"choice": "reuse B2"}})
    match, usage = await match_question(
        model, question="Who is beside Kyon?", type="state", candidates=CANDIDATES, target=50
    )
    assert (match.decision, match.bookmark) == ("reuse", CANDIDATES[1])
    prompt = prompt_text(model.calls_for("MatchChoice")[0])
    assert "B1: Q: Where is Kyon now? | A: at school" in prompt
    assert "B2: Q: Who is Kyon with now? | A: Haruhi" in prompt
    assert "bm-17" not in prompt and "bm-4" not in prompt  # the model never sees bank ids
    assert usage.calls == 1


async def test_the_choices_are_an_enum_of_this_call_s_ids_and_an_unknown_one_is_retried() -> None:
    script = answers({"choice": "derive bm-17"}, {"choice": "reuse"}, {"choice": "derive B1"})
    model = ScriptedChatModel(responders={"MatchChoice": lambda m: next(script)})
    match, usage = await match_question(
        model, question="Where was Kyon?", type="state", candidates=CANDIDATES, target=50
    )
    assert (match.decision, match.bookmark) == ("derive", CANDIDATES[0])
    assert usage.calls == 3
    retry = prompt_text(model.calls_for("MatchChoice")[1])
    assert "Input should be 'none', 'reuse B1', 'derive B1', 'reuse B2' or 'derive B2'" in retry
    enum = match_choice_schema(2).model_json_schema()["properties"]["choice"]["enum"]
    assert enum == ["none", "reuse B1", "derive B1", "reuse B2", "derive B2"]


async def test_a_model_that_keeps_inventing_ids_degrades_to_a_new_bookmark() -> None:
    model = ScriptedChatModel(responders={"MatchChoice": lambda m: {"choice": "reuse B7"}})
    match, usage = await match_question(
        model, question="Where is Kyon going?", type="state", candidates=CANDIDATES, target=50
    )
    assert (match.decision, match.bookmark) == ("none", None)
    assert usage.calls == 3 and usage.degraded == 1


async def test_none_and_no_candidates_means_no_call() -> None:
    model = ScriptedChatModel(responders={"MatchChoice": lambda m: {"choice": "none"}})
    match, usage = await match_question(
        model, question="Where is Kyon going?", type="state", candidates=CANDIDATES, target=50
    )
    assert (match.decision, match.bookmark, usage.calls) == ("none", None, 1)
    match, usage = await match_question(
        model, question="Where is Kyon going?", type="state", candidates=[], target=50
    )
    assert (match.decision, match.bookmark, usage.calls) == ("none", None, 0)
    assert len(model.calls) == 1


async def test_the_same_question_is_reused_without_a_call() -> None:
    model = ScriptedChatModel(responders={})
    match, usage = await match_question(
        model, question="who is KYON with, now", type="state", candidates=CANDIDATES, target=50
    )
    assert (match.decision, match.bookmark, usage.calls) == ("reuse", CANDIDATES[1], 0)
