"""``--method bookmarks`` against the released runner's own functions, on a fixed bank.

The runner (KomeijiForce/BOOKMARKS_Koishiday_2026) is not a dependency: the few functions that
decide what the paper's method sends are re-implemented below from its source, each named by
file and function, and our code must give what they give: the matcher's candidates and their
order (src/bookmarks/bookmarks.py, ``find_supporting_bookmark``), the concept windows
(``build_merge_rank_spans`` and ``update_concept_bookmark``), plain action texts, and the
profile update schedule (src/bookmarks/benchmark.py, ``maybe_update_profile``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bookmarks_world import scripted_model_as, stored_bank
from langchain_core.messages import BaseMessage
from released_runner import (
    overlap_rate,
    runner_appearance,
    runner_candidates,
)

from personae.agents.bookmarks.matcher import overlap_rate as ours_overlap_rate
from personae.cli import main
from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType
from personae.testing import ScriptedChatModel, prompt_text


def llm_check_prompt(chunk: str, query: str, answer: str) -> str:
    """bookmarks.py, ``llm_check``: the prompt."""
    return f"""Before the following scene,
Current answer to "{query}": "{answer}"

After the following scene:
{chunk}

Considering this scene, how should we treat the current answer to "{query}"?

Please answer with exactly one of:
- "reset"  -> the current answer is now outdated or contradicted and should be set to "unknown"
- "update" -> the scene triggers state transition or provides more accurate information so the answer should be updated
- "none"   -> the scene does not contain relevant update or information to affect the current answer
"""  # noqa: E501


def bookmark_relation_prompt(new: dict[str, Any], old: dict[str, Any]) -> str:
    """bookmarks.py, ``bookmark_relation``: the prompt."""
    return f"""You are checking whether an existing bookmark can support a new bookmark.

Tag: {new["tag"]}

Existing bookmark query:
{old["query"]}

Existing bookmark answer:
{old["answer"]}

New bookmark query:
{new["query"]}

Decide the relation from the existing bookmark to the new bookmark.

Return exactly one word:

reuse
- The two queries should share the same maintained bookmark slot.
- They ask for essentially the same information over time.

derive
- The existing bookmark should not be reused as the same slot.
- But its current synchronized answer can be used to initialize the new bookmark.

none
- The existing bookmark is not sufficiently relevant.

Be conservative:
- Use "reuse" only for near-equivalent maintained memory targets.
- Use "derive" for closely related but non-identical queries.
- Use "none" otherwise.

Directly output one word: reuse, derive, or none.
"""


def behavior_check_prompt(
    action_seq: list[dict[str, Any]], idx: int, character: str, query: str
) -> str:
    """bookmarks.py, ``update_behavioral_bookmark``: the yes / no prompt for action ``idx``."""
    scene = "\n".join(_item["action"] for _item in action_seq[max(0, idx - 10) : idx])
    action = action_seq[idx]["action"]
    return f"""# Scene
{scene}
# Action by {character}
{action}

We are using the following behavioral query as a filter over past scenes:

# Query
{query}

Question:
Does THIS specific action by {character} in THIS scene provide direct evidence
for the behavior that the query is asking about?

Answer "yes" ONLY if BOTH of the following are true:
- The situation described in the query (characters, conditions, emotional state,
  context, etc.) actually holds in this scene.
- {character}'s action shown above is a concrete example of that behavior in
  this situation (not just vaguely related or partially matching).

If any required condition in the query is missing, unclear, or only weakly
related, answer "no".

Directly answer with a single word: yes or no.
"""


# --- a fixed storyline and bank -----------------------------------------------------------------

NAMES = ("Haruhi", "Kyon", "Nagato", "Mikuru")
BRIGADE_AT = {3, 5, *range(21, 37), 61, 78, 104, 121}
"""Where "SOS Brigade" is named: a dense run (one merged span of 45 actions, longer than our
34-action pieces), single hits whose spans tie on count (the runner ranks the latest first),
hits 17 apart (61 / 78: their windows touch, which the runner does not merge), and a hit whose
window reaches past the target (121)."""
TARGET = 130


def write_story(path: Path) -> list[dict[str, Any]]:
    rows = []
    for position in range(160):
        who = NAMES[position % 4]
        club = " about the SOS Brigade" if position in BRIGADE_AT else ""
        text = f"{who} talks to {NAMES[(position + 1) % 4]}{club} in scene {position}."
        rows.append({"action": text, "character": who, "chapter": f"Chapter {position // 40}"})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    (path.parent / "all_characters.json").write_text(json.dumps({path.stem: {"major": NAMES}}))
    return rows


BANK: list[tuple[str, str, str, int]] = [
    # (tag, character, query, index): the runner's list order is creation order (bm-1, ...)
    ("state", "Kyon", "Where is Haruhi now?", 40),
    ("state", "Haruhi", "Where is Haruhi right now?", 0),  # never synced: not a candidate
    ("state", "Nagato", "What is Nagato reading?", 55),
    ("state", "Mikuru", "Where is Haruhi sitting in the club room?", 60),
    ("state", "Kyon", "Who is with Mikuru in the club room now?", 70),
    ("state", "Kyon", "Where is Kyon now?", 80),
    ("state", "Haruhi", "Where is Haruhi?", 90),  # ties with bm-1 and bm-4: the newer first
    ("state", "Kyon", "What is Kyon planning for the SOS Brigade?", 100),
    ("behavioral", "Kyon", "How does Kyon usually treat Haruhi?", 50),  # another character
    ("behavioral", "Haruhi", "How does Haruhi react when Kyon refuses?", 60),
    ("behavioral", "Haruhi", "How does Haruhi usually treat Kyon?", 65),
    ("behavioral", "Haruhi", "How does Haruhi treat the brigade members?", 75),
    ("concept", "Kyon", 'What is "SOS Brigade"?', 0),  # never synced
    ("concept", "Kyon", "Who is Tsuruya?", 30),
]
QUERIES = [
    {"tag": "state", "query": "Where is Haruhi sitting right now?"},
    {"tag": "behavioral", "query": "How does Haruhi usually treat Kyon?"},
    {"tag": "concept", "query": 'What is "SOS Brigade"?'},
]
"""What the scripted proposer asks at the target (for Haruhi)."""


def bank_records() -> list[Bookmark]:
    return [
        Bookmark(
            id=f"bm-{n}",
            question=query,
            type=BookmarkType(tag),
            character=character,
            answer=f"answer {n}" if index else "",
            position=index,
            history=[AnswerVersion(position=index, answer=f"answer {n}")] if index else [],
        )
        for n, (tag, character, query, index) in enumerate(BANK, start=1)
    ]


def released_world(**overrides: Any) -> dict[str, Any]:
    """Answers for the released prompts: fixed queries, every relation "none"."""

    def relation(messages: list[BaseMessage]) -> dict[str, Any]:
        return {"relation": "none"}

    return {
        "ReleasedQueries": lambda m: {"queries": QUERIES},
        "Relation": relation,
        "StateCheck": lambda m: {"decision": "none"},
        "EvidenceAnswer": lambda m: {"answer": "no"},
        "ConceptKeyword": lambda m: {"keyword": "SOS Brigade"},
        "ConceptUpdate": lambda m: {"answer": "Haruhi's club."},
        "ChunkProfile": lambda m: {"profile": "a profile"},
        "UpdatedProfile": lambda m: {"profile": "a profile"},
        "NextAction": lambda m: {"action": "Haruhi: Let's go!"},
        **overrides,
    }


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    with scripted_model_as("rr") as scripted:
        scripted.responders.update(released_world())
        yield scripted


def _asked(calls: list[list[BaseMessage]]) -> dict[str, list[str]]:
    """Per new query, the existing queries the matcher asked about, in the order asked."""
    asked: dict[str, list[str]] = {}
    for messages in calls:
        text = prompt_text(messages)
        old = text.split("Existing bookmark query:\n", 1)[1].split("\n", 1)[0]
        new = text.split("New bookmark query:\n", 1)[1].split("\n", 1)[0]
        asked.setdefault(new, []).append(old)
    return asked


def test_act_with_the_paper_method_sends_the_runners_candidates_and_concept_windows(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    story = tmp_path / "club.jsonl"
    rows = write_story(story)
    memory = tmp_path / "mem"
    stored_bank(story, memory).import_bookmarks(bank_records())
    argv = ["bookmarks", "act", str(story), "--character", "Haruhi", "--at", str(TARGET)]
    argv += ["--memory", str(memory), "--method", "bookmarks", "--roles", "released"]
    assert main([*argv, "--model", "openai:rr", "--fast-model", "openai:rr"]) == 0

    runner_bank = [
        {"tag": tag, "character": who, "query": query, "index": index}
        for tag, who, query, index in BANK
    ]
    expected = {
        q["query"]: [
            runner_bank[i]["query"]
            for i in runner_candidates({**q, "character": "Haruhi"}, runner_bank)
        ]
        for q in QUERIES
    }
    assert expected["Where is Haruhi sitting right now?"] == [  # ties: newest first, zeros asked
        "Where is Haruhi?",
        "Where is Haruhi sitting in the club room?",
        "Where is Haruhi now?",
        "What is Kyon planning for the SOS Brigade?",
        "Where is Kyon now?",
    ]
    assert _asked(model.calls_for("Relation")) == expected
    for n, row in enumerate(runner_bank, start=1):
        row["answer"] = f"answer {n}"
    relations = sorted(
        bookmark_relation_prompt(q, runner_bank[i])
        for q in QUERIES
        for i in runner_candidates({**q, "character": "Haruhi"}, runner_bank)
    )
    assert sorted(prompt_text(m) for m in model.calls_for("Relation")) == relations

    # Whole prompts, exactly: every state check and evidence check the step sent.
    history = rows[:TARGET]
    state_query, behavior_query = QUERIES[0]["query"], QUERIES[1]["query"]
    chunks = ["\n".join(r["action"] for r in history[i : i + 64]) for i in range(0, TARGET, 64)]
    checks = sorted(prompt_text(m) for m in model.calls_for("StateCheck"))
    assert checks == sorted(llm_check_prompt(c, state_query, "unknown") for c in chunks)
    haruhi = [i for i, r in enumerate(history) if r["character"] == "Haruhi"]
    evidence = sorted(prompt_text(m) for m in model.calls_for("EvidenceAnswer"))
    runner = [behavior_check_prompt(history, i, "Haruhi", behavior_query) for i in haruhi]
    assert evidence == sorted(runner)

    [update] = model.calls_for("ConceptUpdate")
    appearance = prompt_text(update).split('\n\nBased on the appearance of "SOS Brigade"')[0]
    assert appearance == runner_appearance(rows[:TARGET], "SOS Brigade")
    assert len(appearance.split("\n---\n")[0].splitlines()) == 45  # the dense span kept whole

    for name in ("ReleasedQueries", "StateCheck", "EvidenceAnswer", "ConceptUpdate", "NextAction"):
        for messages in model.calls_for(name):
            assert not re.search(r"\[\d+\] \(", prompt_text(messages)), name  # plain texts
    [proposer] = model.calls_for("ReleasedQueries")
    scene = "\n".join(r["action"] for r in rows[TARGET - 10 : TARGET])  # data.py, scene_before
    assert prompt_text(proposer).startswith(f"# Scene\n{scene}\n\n# Profile of Haruhi\n")
    # The profile on the runner's schedule (benchmark.py, maybe_update_profile): updated at the
    # target itself, 130 actions after 0, in 64-action chunks, every chunk read.
    extracted = [prompt_text(m) for m in model.calls_for("ChunkProfile")]
    assert [p.count("\n---\n") + 1 for p in extracted] == [64, 64, 2]


def test_before_the_first_update_the_released_grounding_shows_the_empty_profile(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    """The runner grounds on ``profiles[character] + "\\n\\n" + report``, "[empty]" at first."""
    story = tmp_path / "club.jsonl"
    write_story(story)
    argv = [
        "bookmarks",
        "act",
        str(story),
        "--character",
        "Haruhi",
        "--at",
        "12",
        "--method",
        "bookmarks",
    ]
    argv += ["--roles", "released", "--model", "openai:rr", "--fast-model", "openai:rr"]
    assert main(argv) == 0
    assert model.calls_for("ChunkProfile") == []  # 12 actions: not due yet
    [actor] = model.calls_for("NextAction")
    assert prompt_text(actor).startswith("# Background Summary\n[empty]\n\n# Query: ")
    [proposer] = model.calls_for("ReleasedQueries")
    assert "# Profile of Haruhi\n[empty]\n\n" in prompt_text(proposer)


def test_the_bank_ranks_a_whole_scope_and_never_hands_a_bookmark_synced_past_the_target(
    tmp_path: Path,
) -> None:
    story = tmp_path / "club.jsonl"
    write_story(story)
    bank = stored_bank(story, tmp_path / "mem")
    bank.import_bookmarks(bank_records())
    ask = [("Where is Haruhi sitting right now?", BookmarkType.STATE, "Haruhi")]

    def ids(synced_by: int, k: int = 5) -> list[str]:
        [found] = bank.ranked_candidates_many(
            ask, synced_by=synced_by, k=k, score=ours_overlap_rate
        )
        return [b.id for b in found]

    assert ids(130) == ["bm-7", "bm-4", "bm-1", "bm-8", "bm-6"]
    assert ids(85) == ["bm-4", "bm-1", "bm-6", "bm-5", "bm-3"]  # bm-7 (90), bm-8 (100): later
    assert ids(130, k=0) == [] and ids(39) == []  # K' = 0; nothing synced by 39 but bm-2 at 0
    other = [("How does Mikuru usually hum?", BookmarkType.BEHAVIORAL, "Mikuru")]
    assert bank.ranked_candidates_many(other, synced_by=130, k=5, score=ours_overlap_rate) == [[]]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("What is Kyon's plan?", "What is Kyon's sister doing?"),  # "s" is a runner token
        ("Where is Haruhi right now?", "Where is Haruhi?"),
        ("Why doesn't Kyon refuse Haruhi?", "Does Kyon refuse?"),  # "doesn", "t"
        ("What is it?", "Where is Nagato?"),  # only stop words on one side: 0
    ],
)
def test_our_overlap_rate_is_the_runners(a: str, b: str) -> None:
    assert ours_overlap_rate(a, b) == overlap_rate(a, b)
