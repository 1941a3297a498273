"""The concept summarizer role: previous answer and passages in, a non-empty note out."""

from __future__ import annotations

from collections.abc import Iterator

from personae.agents.bookmarks.concept_summarizer import summarize_concept
from personae.memory.bookmarks.storyline import StoryAction
from personae.testing import ScriptedChatModel, prompt_text


def act(position: int, text: str) -> StoryAction:
    return StoryAction(position, "ch", text, ("Haruhi",))


WINDOWS = [
    [act(3, "Haruhi founds the SOS Brigade."), act(4, "Kyon joins.")],
    [act(20, "The SOS Brigade meets.")],
]


async def test_note_is_updated_from_numbered_passages_and_the_previous_answer() -> None:
    model = ScriptedChatModel(
        responders={"ConceptAnswer": lambda m: {"answer": " Haruhi's club. "}}
    )
    answer, usage = await summarize_concept(
        model,
        question="What is the SOS Brigade?",
        keyword="SOS Brigade",
        windows=WINDOWS,
        previous_answer="A school club.",
    )
    assert answer == "Haruhi's club." and usage.calls == 1
    text = prompt_text(model.calls_for("ConceptAnswer")[0])
    assert "A school club." in text and '"SOS Brigade"' in text
    assert text.index("Passage 1:\n[3] (Haruhi) Haruhi founds") < text.index("Passage 2:\n[20]")
    assert "trust the later passages" in text


async def test_no_windows_means_no_call_and_the_previous_answer() -> None:
    model = ScriptedChatModel()
    answer, usage = await summarize_concept(
        model, question="Q?", keyword="X", windows=[], previous_answer="kept"
    )
    assert (answer, usage.calls, model.calls) == ("kept", 0, [])


async def test_empty_note_is_rejected_and_retried() -> None:
    replies: Iterator[dict[str, str]] = iter([{"answer": ""}, {"answer": "A club."}])
    model = ScriptedChatModel(responders={"ConceptAnswer": lambda m: next(replies)})
    answer, usage = await summarize_concept(
        model, question="Q?", keyword="SOS Brigade", windows=WINDOWS, previous_answer=""
    )
    assert answer == "A club." and usage.calls == 2
    assert "(nothing known yet)" in prompt_text(model.calls_for("ConceptAnswer")[0])
    assert "String should have at least 1 character" in prompt_text(
        model.calls_for("ConceptAnswer")[1]
    )
