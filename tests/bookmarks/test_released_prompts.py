"""The paper's BOOKMARKS method runs the released runner's prompts, roles and formats.

``fixtures/released_prompts.json`` holds the prompt texts of the authors' released runner
(KomeijiForce/BOOKMARKS_Koishiday_2026 @ 2489d17), verbatim. Our paper-method prompts are
compared with them word by word outside the placeholders (the figure is printed, for each
prompt, beside the same figure for our own prompts), and each operator is checked to ask the
released questions in the released order, on the model the role preset names.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from bookmarks_world import scripted_model, write_storyline
from langchain_core.messages import BaseMessage

from personae.agents.bookmarks import (
    actor,
    behavior_checker,
    concept_summarizer,
    deriver,
    matcher,
    question_proposer,
    state_syncer,
)
from personae.agents.bookmarks.behavior_checker import (
    BehaviorItem,
    ReleasedBehaviorClassifier,
    released_check_prompt,
)
from personae.agents.bookmarks.matcher import match_released, overlap_rate, released_candidates
from personae.graphs.bookmarks.graph import BookmarksContext, build_graph
from personae.graphs.bookmarks.resources import forget_resources
from personae.graphs.bookmarks.sync import SyncSettings, sync_bookmark, sync_concept, sync_state
from personae.llm import LLMUsage
from personae.memory.bookmarks.bookmark import Bookmark, BookmarkType
from personae.memory.bookmarks.storyline import StoryAction, Storyline
from personae.testing import ScriptedChatModel, override_models, prompt_text
from personae.tools.bookmarks.storyline_index import index_for

RELEASED = json.loads((Path(__file__).parent / "fixtures/released_prompts.json").read_text())
PROMPTS: dict[str, str] = RELEASED["prompts"]
PLACEHOLDER = re.compile(r"\{[A-Za-z_][\w\[\]\"']*\}")

OURS_PAPER = {
    "proposer": question_proposer.RELEASED_PROPOSER.replace(
        "{profile_block}", question_proposer.RELEASED_PROFILE_BLOCK
    )
    .replace("{history_block}", question_proposer.RELEASED_HISTORY_BLOCK)
    .replace("{history_rule}", question_proposer.RELEASED_HISTORY_RULE),
    "matcher": matcher.RELEASED_RELATION,
    "state_check": state_syncer.RELEASED_CHECK,
    "state_update": state_syncer.RELEASED_UPDATE,
    "concept_keyword": concept_summarizer.RELEASED_KEYWORD,
    "concept_update": concept_summarizer.RELEASED_CONCEPT_UPDATE,
    "behavior_check": behavior_checker.RELEASED_CHECK,
    "behavior_summary": behavior_checker.RELEASED_SUMMARY,
    "derive": deriver.DERIVE_PROMPT,
    "actor": actor.ACTOR_PROMPT,
}
"""The prompts ``--method bookmarks`` sends (the paper's method)."""
OURS_PERSONAE = {
    "proposer": question_proposer.PROPOSER_SYSTEM + question_proposer.PROPOSER_USER,
    "matcher": matcher.MATCHER_SYSTEM + matcher.MATCHER_USER,
    "state_check": state_syncer.STATE_SYNC_SYSTEM + state_syncer.STATE_SYNC_USER,
    "concept_update": concept_summarizer.CONCEPT_SYSTEM + concept_summarizer.CONCEPT_USER,
    "behavior_check": behavior_checker.CHECK_SYSTEM + behavior_checker.CHECK_USER,
    "behavior_summary": behavior_checker.SUMMARY_SYSTEM + behavior_checker.SUMMARY_USER,
}
"""The prompts ``--method bookmarks-personae`` sends (ours) where they differ."""


def words(template: str) -> list[str]:
    """The words of a prompt template outside its placeholders, lower-cased."""
    text = PLACEHOLDER.sub(" ", template).replace("{{", "{").replace("}}", "}")
    return re.findall(r"[a-z0-9']+", text.lower())


def overlap(ours: str, released: str) -> float:
    """Share of words in common, in order (difflib's ratio over the two word lists)."""
    return difflib.SequenceMatcher(None, words(ours), words(released), autojunk=False).ratio()


def test_the_paper_method_sends_the_released_prompts_word_for_word() -> None:
    assert set(OURS_PAPER) == set(PROMPTS)
    lines, low = [], []
    for name, released in PROMPTS.items():
        paper = overlap(OURS_PAPER[name], released)
        ours = overlap(OURS_PERSONAE[name], released) if name in OURS_PERSONAE else None
        shown = f"{name}: paper method {100 * paper:.1f}%" + (
            f", bookmarks-personae {100 * ours:.1f}%" if ours is not None else ""
        )
        lines.append(shown)
        if paper < 0.9:
            low.append(shown)
    print("word overlap with the released prompts (outside placeholders)")
    print("\n".join(lines))
    assert low == []


def _actions(rows: Sequence[tuple[str, str]]) -> Storyline:
    actions = tuple(
        StoryAction(position=p, characters=(who,), text=text, chapter="c1")
        for p, (who, text) in enumerate(rows)
    )
    return Storyline(name="tiny", actions=actions, chapters=("c1",))


def test_the_evidence_check_renders_the_released_prompt_exactly() -> None:
    """What the paper's distilled classifier reads: the released text, placeholders filled.

    The runner (src/bookmarks/bookmarks.py, update_behavioral_bookmark) fills ``scene`` with
    ``"\\n".join(_item["action"] for _item in action_seq[idx - 10:idx])`` and ``action`` with
    ``item["action"]``: the plain texts, which is what the expected text is built from here.
    """
    rows = [("Kyon", "Kyon sighs."), ("Mikuru", "Mikuru pours tea.")]
    story = _actions([*rows, ("Haruhi", "Haruhi drags Kyon to the club.")])
    item = BehaviorItem(action=story.actions[2], scene=story.actions[:2], character="Haruhi")
    runner_items = [{"action": text} for _, text in rows]
    expected = PROMPTS["behavior_check"] + "\n"  # the runner's f-string ends with a newline
    expected = expected.format(
        scene="\n".join(_item["action"] for _item in runner_items),
        character="Haruhi",
        action="Haruhi drags Kyon to the club.",
        query="How does Haruhi treat Kyon?",
    )
    assert released_check_prompt("How does Haruhi treat Kyon?", item) == expected
    assert "[" not in released_check_prompt("How does Haruhi treat Kyon?", item)


class DistilledClassifier:
    """The README's recipe: a classifier over the released prompt text (here a keyword rule)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def classify(
        self, pattern: str, items: Sequence[BehaviorItem]
    ) -> tuple[list[bool], LLMUsage]:
        texts = [released_check_prompt(pattern, item) for item in items]
        self.seen += texts
        return ["drags" in item.action.text for item in items], LLMUsage()


async def test_the_readme_classifier_recipe_plugs_a_classifier_into_the_behavior_sync() -> None:
    story = _actions(
        [("Kyon", "Kyon sighs."), ("Haruhi", "Haruhi drags Kyon."), ("Haruhi", "Haruhi naps.")]
    )
    model = ScriptedChatModel(responders={"BehaviorSummary": lambda m: {"answer": "She drags."}})
    mark = Bookmark(
        id="b1",
        question="How does Haruhi treat Kyon?",
        type=BookmarkType.BEHAVIORAL,
        character="Haruhi",
    )
    classifier = DistilledClassifier()
    result = await sync_bookmark(
        mark,
        3,
        storyline=story,
        index=index_for(story),
        fast_model=model,
        model=model,
        classifier=classifier,
    )
    assert result.bookmark.evidence == [1] and result.bookmark.answer == "She drags."
    assert len(classifier.seen) == 2 and classifier.seen[0].startswith("# Scene\nKyon sighs.\n#")
    assert "Does THIS specific action by Haruhi in THIS scene" in classifier.seen[0]
    summary = prompt_text(model.calls_for("BehaviorSummary")[0])
    assert (
        "# Character action samples (chronologically ordered):\n['Haruhi drags Kyon.']" in summary
    )


async def test_released_state_sync_checks_then_updates_and_reset_means_unknown() -> None:
    story = _actions([("Kyon", f"Kyon walks to place {n}.") for n in range(6)])
    decisions = iter(["update", "none", "reset"])
    model = ScriptedChatModel(
        responders={
            "StateCheck": lambda m: {"decision": next(decisions)},
            "StateAnswer": lambda m: {"answer": "at place 1, having left home"},
        }
    )
    mark = Bookmark(
        id="s1", question="Where is Kyon now?", type=BookmarkType.STATE, character="Kyon"
    )
    result = await sync_state(
        mark, 6, storyline=story, fast_model=model, settings=SyncSettings(state_chunk=2)
    )
    assert [t.operation for t in result.bookmark.transitions] == ["update", "no_change", "reset"]
    assert result.bookmark.answer == "" and result.usage.calls == 4  # 3 checks, 1 update
    first_check = prompt_text(model.calls_for("StateCheck")[0])
    assert first_check.startswith('Before the following scene,\nCurrent answer to "Where is')
    assert '"unknown"' in first_check  # the empty answer shown as the released runner does
    update = prompt_text(model.calls_for("StateAnswer")[0])
    assert "Preserve the trace of important transitions" in update


async def test_released_concept_sync_extracts_the_keyword_once_and_ties_go_to_the_latest() -> None:
    rows = [("Kyon", "Kyon reads."), ("Kyon", "The SOS Brigade meets.")] + [
        ("Kyon", f"filler {n}") for n in range(30)
    ]
    rows += [("Kyon", "The SOS Brigade plans."), ("Kyon", "Kyon sleeps.")]
    story = _actions(rows)
    model = ScriptedChatModel(
        responders={
            "ConceptKeyword": lambda m: {"keyword": "SOS Brigade"},
            "ConceptUpdate": lambda m: {"answer": "Haruhi's club."},
        }
    )
    mark = Bookmark(
        id="c1", question='What is "SOS Brigade"?', type=BookmarkType.CONCEPT, character="Kyon"
    )
    settings = SyncSettings(concept_radius=1, concept_top_windows=1)
    result = await sync_concept(
        mark, len(rows), storyline=story, index=index_for(story), model=model, settings=settings
    )
    assert result.bookmark.keyword == "SOS Brigade" and result.bookmark.answer == "Haruhi's club."
    update = prompt_text(model.calls_for("ConceptUpdate")[0])
    # One hit each: the runner's (-count, -rep) sort puts the latest span first; plain texts.
    assert update.startswith("filler 29\nThe SOS Brigade plans.\nKyon sleeps.\n\nBased on")
    assert "meets" not in update
    assert 'Based on the appearance of "SOS Brigade" above' in update
    again = await sync_concept(
        result.bookmark,
        len(rows),
        storyline=story,
        index=index_for(story),
        model=model,
        settings=settings,
    )
    assert again.usage.calls == 0 and len(model.calls_for("ConceptKeyword")) == 1


async def test_released_matching_ranks_by_overlap_and_asks_one_candidate_at_a_time() -> None:
    def bookmark(i: int, question: str, position: int = 5) -> Bookmark:
        return Bookmark(
            id=f"b{i}",
            question=question,
            type=BookmarkType.STATE,
            character="Kyon",
            position=position,
        )

    candidates = [
        bookmark(1, "Where is the brigade meeting now?"),
        bookmark(2, "Where is Kyon now?"),
        bookmark(3, "Where is Kyon sitting?", position=0),  # never synced: not a candidate
    ]
    assert overlap_rate("Where is Kyon right now?", "Where is Kyon now?") == 1.0
    ranked = released_candidates("Where is Kyon right now?", candidates, 5)
    assert [b.id for b in ranked] == ["b2", "b1"]  # zero overlap is still asked, as the runner
    answers = iter(["none", "derive"])
    model = ScriptedChatModel(responders={"Relation": lambda m: {"relation": next(answers)}})
    pool = [candidates[0], candidates[1]]
    match, usage = await match_released(
        model, question="Where is Kyon right now?", type="state", candidates=pool, target=9
    )
    assert (match.decision, match.bookmark) == ("derive", candidates[1]) and usage.calls == 2
    prompts = [prompt_text(m) for m in model.calls_for("Relation")]
    assert "Existing bookmark query:\nWhere is the brigade meeting now?" in prompts[0]
    assert prompts[1].endswith("Directly output one word: reuse, derive, or none.\n")


async def test_the_released_classifier_answers_yes_or_no_per_action() -> None:
    story = _actions([("Kyon", "Kyon sighs."), ("Haruhi", "Haruhi drags Kyon.")])
    model = ScriptedChatModel(responders={"EvidenceAnswer": lambda m: {"answer": "yes"}})
    item = BehaviorItem(action=story.actions[1], scene=story.actions[:1], character="Haruhi")
    verdicts, usage = await ReleasedBehaviorClassifier(model).classify("p?", [item, item])
    assert verdicts == [True, True] and usage.calls == 2


async def test_ibu_syncs_behavior_chunk_by_chunk_like_a_state() -> None:
    story = _actions([("Haruhi", f"Haruhi does {n}.") for n in range(10)])
    model = ScriptedChatModel(
        responders={
            "StateCheck": lambda m: {"decision": "update"},
            "StateAnswer": lambda m: {"answer": "bossy, then bossier"},
        }
    )
    mark = Bookmark(
        id="b", question="How does Haruhi act?", type=BookmarkType.BEHAVIORAL, character="Haruhi"
    )
    settings = SyncSettings(state_chunk=5, incremental_behavior=True)
    result = await sync_bookmark(
        mark,
        10,
        storyline=story,
        index=index_for(story),
        fast_model=model,
        model=model,
        settings=settings,
    )
    assert result.bookmark.answer == "bossy, then bossier" and result.bookmark.evidence == []
    assert len(model.calls_for("StateCheck")) == 2 and model.calls_for("EvidenceAnswer") == []


def _roles_world(roles: str, tmp_path: Path) -> tuple[ScriptedChatModel, ScriptedChatModel, Any]:
    strong, fast = scripted_model(), scripted_model()
    override_models(specs={"openai:strong": strong, "openai:fast": fast})
    story = write_storyline(tmp_path / "club.jsonl")
    context = BookmarksContext(
        storyline_path=str(story),
        memory_dir=str(tmp_path / roles),
        model="openai:strong",
        fast_model="openai:fast",
        roles=roles,  # type: ignore[arg-type]
    )
    return strong, fast, context


def _schemas(model: ScriptedChatModel) -> set[str]:
    return {name for name, _ in model.calls}


@pytest.mark.parametrize(
    ("roles", "strong_calls", "fast_calls"),
    [
        (
            "paper",
            {"NextAction"},
            {
                "ReleasedQueries",
                "StateCheck",
                "StateAnswer",
                "EvidenceAnswer",
                "BehaviorSummary",
                "ConceptKeyword",
                "ConceptUpdate",
            },
        ),
        (
            "released",
            {
                "NextAction",
                "ReleasedQueries",
                "BehaviorSummary",
                "ConceptKeyword",
                "ConceptUpdate",
                "ChunkProfile",
                "UpdatedProfile",
            },
            {"StateCheck", "StateAnswer", "EvidenceAnswer"},
        ),
    ],
)
async def test_role_presets_put_each_call_on_its_model(
    roles: str, strong_calls: set[str], fast_calls: set[str], tmp_path: Path
) -> None:
    strong, fast, context = _roles_world(roles, tmp_path)
    graph = build_graph()
    try:
        await graph.ainvoke({"character": "Haruhi", "position": 40}, context=context)
        await graph.ainvoke({"character": "Haruhi", "position": 43}, context=context)
    finally:
        forget_resources()
    assert _schemas(strong) == strong_calls | ({"Relation", "DerivedAnswer"} & _schemas(strong))
    assert _schemas(fast) - {"Relation", "DerivedAnswer"} == fast_calls
    matched = (
        "Relation" in _schemas(strong) if roles == "released" else "Relation" in _schemas(fast)
    )
    assert matched  # the second step matches its questions to the first's bookmarks
    proposer = prompt_text(
        [*strong.calls_for("ReleasedQueries"), *fast.calls_for("ReleasedQueries")][-1]
    )
    actor_prompt = prompt_text(strong.calls_for("NextAction")[-1])
    if roles == "released":
        assert "# Profile of Haruhi\n" in proposer and "Search history:\n# Query: " in proposer
        assert actor_prompt.split("# Background Summary\n", 1)[1].startswith("profiled through")
    else:
        assert "# Profile of" not in proposer and "Search history" not in proposer
        assert "in the history" not in proposer  # no rule about a history it never sees
        assert "- Keep the question simple and concise.\n- Don't focus" in proposer
        assert "# Background Summary\n# Query: " in actor_prompt  # the released report format


def _calls(messages: Sequence[BaseMessage]) -> str:
    return prompt_text(messages)
