"""The question proposer with a scripted model: K cap, types, keywords, de-duplication, re-asks."""

from __future__ import annotations

from typing import Any

from personae.agents.bookmarks.question_proposer import (
    ProposedQuestion,
    is_near_duplicate,
    propose_questions,
)
from personae.memory.bookmarks.bookmark import BookmarkType
from personae.memory.bookmarks.storyline import StoryAction
from personae.testing import ScriptedChatModel, prompt_text

SCENE = (
    StoryAction(7, "Ep 1", "Haruhi drags Kyon into the literary club room.", ("Haruhi",)),
    StoryAction(8, "Ep 1", "Nagato Yuki keeps reading her book.", ("Nagato",)),
    StoryAction(9, "Ep 1", "Kyon asks what the SOS Brigade is for.", ("Kyon",)),
)


def scripted(questions: list[dict[str, Any]]) -> ScriptedChatModel:
    return ScriptedChatModel(responders={"ProposedQuestions": lambda m: {"questions": questions}})


async def propose(model: ScriptedChatModel, **changes: Any) -> list[tuple[str, str, str | None]]:
    options: dict[str, Any] = {
        "character": "Haruhi",
        "story": "haruhi",
        "scene": SCENE,
        "characters": ["Haruhi", "Kyon", "Nagato"],
        "k": 5,
    }
    options.update(changes)
    questions, usage, _ = await propose_questions(model, **options)
    assert usage.calls == 1
    return [(q.type, q.question, q.keyword) for q in questions]


async def test_keeps_valid_typed_questions_and_drops_the_rest() -> None:
    model = scripted(
        [
            {"type": "behavioral", "question": "How does Haruhi react to boredom?"},
            {"type": "state", "question": "Where is  Haruhi now?", "keyword": "room"},
            {"type": "concept", "question": "What is the SOS Brigade?", "keyword": "SOS Brigade"},
            {"type": "concept", "question": "Who is Koizumi?", "keyword": "Koizumi"},
            {"type": "concept", "question": "Who is Nagato?", "keyword": None},
            {"type": "concept", "question": "Who is Nagato Yuki?", "keyword": "nagato"},
            {"type": "state", "question": "   "},
        ]
    )
    assert await propose(model) == [
        ("behavioral", "How does Haruhi react to boredom?", None),
        ("state", "Where is Haruhi now?", None),  # whitespace folded, keyword dropped
        ("concept", "What is the SOS Brigade?", "SOS Brigade"),
        # Koizumi is not in the scene or character list; a concept needs a keyword
        ("concept", "Who is Nagato Yuki?", "nagato"),
    ]


async def test_dropped_questions_are_counted() -> None:
    model = scripted(
        [
            {"type": "state", "question": "Where is Haruhi now?"},
            {"type": "concept", "question": "Who is Koizumi?", "keyword": "Koizumi"},
            {"type": "state", "question": "where is haruhi now"},
        ]
    )
    kept, _, dropped = await propose_questions(
        model, character="Haruhi", story="haruhi", scene=SCENE, characters=["Haruhi"], k=5
    )
    assert [q.question for q in kept] == ["Where is Haruhi now?"] and dropped == 2


async def test_a_type_outside_the_schema_is_rejected_and_asked_again() -> None:
    answers = iter(
        [
            {"questions": [{"type": "gossip", "question": "Is Haruhi famous?"}]},
            {"questions": [{"type": "behavioral", "question": "How does Haruhi act?"}]},
        ]
    )
    model = ScriptedChatModel(responders={"ProposedQuestions": lambda m: next(answers)})
    kept, usage, dropped = await propose_questions(
        model, character="Haruhi", story="haruhi", scene=SCENE, characters=["Haruhi"], k=5
    )
    assert [(q.type, q.question) for q in kept] == [("behavioral", "How does Haruhi act?")]
    assert len(model.calls_for("ProposedQuestions")) == 2 and dropped == 0
    schema = ProposedQuestion.model_json_schema()
    assert set(schema["properties"]["type"]["enum"]) == {t.value for t in BookmarkType}


async def test_caps_at_k_and_drops_duplicates_and_unknown_re_asks() -> None:
    model = scripted(
        [
            {"type": "state", "question": "Where is Haruhi now?"},
            {"type": "state", "question": "where is haruhi now"},
            {"type": "state", "question": "Who is with Haruhi right now?"},
            {"type": "behavioral", "question": "How does Haruhi treat Kyon?"},
            {"type": "behavioral", "question": "What does Haruhi want from the club?"},
            {"type": "state", "question": "What is Kyon doing?"},
        ]
    )
    kept = await propose(model, k=3, do_not_ask=["Who is with Haruhi right now?"])
    assert [q for _, q, _ in kept] == [
        "Where is Haruhi now?",
        "How does Haruhi treat Kyon?",
        "What does Haruhi want from the club?",
    ]
    prompt = prompt_text(model.calls_for("ProposedQuestions")[0])
    assert "- Who is with Haruhi right now?" in prompt
    assert "[9] (Kyon) Kyon asks what the SOS Brigade is for." in prompt
    assert "up to 3 questions" in prompt


def test_near_duplicate_is_by_content_words() -> None:
    assert is_near_duplicate("Where is Haruhi now?", ["where is HARUHI"])
    assert is_near_duplicate(
        "Where is Haruhi with the whole brigade?", ["where is haruhi with brigade"]
    )
    assert not is_near_duplicate("Where is Haruhi?", ["Where is Kyon?"])
    assert not is_near_duplicate("Where is Haruhi?", ["Who is Haruhi?"])
    assert not is_near_duplicate("Where is Haruhi?", [])


async def test_zero_questions_asked_costs_no_call() -> None:
    model = scripted([{"type": "state", "question": "Where is Haruhi?"}])
    questions, usage, dropped = await propose_questions(
        model, character="Haruhi", story="haruhi", scene=SCENE, characters=["Haruhi"], k=0
    )
    assert (questions, usage.calls, model.calls) == ([], 0, [])
