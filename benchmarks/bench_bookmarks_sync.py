"""How much reading incremental sync saves: the BOOKMARKS agent over a shared storyline.

Run: uv run python benchmarks/bench_bookmarks_sync.py [--characters Haruhi] [--limit 60]
     [--preload 100000] [--method bookmarks|bookmarks-personae]

Runs the real graph (real sync operators, real Chroma bank in a temporary folder) with a
deterministic scripted model on ../shared/data/bookmarks/title2action_series.haruhi.json, over
the characters' test instances in story order (one memory shared by all of them, as in the
benchmark). Prints, not asserts: actions read by sync as a share of what from-scratch syncs of
the same bookmarks would read (the paper saves 70-80 %), reuse / derive / new rates, LLM calls
and tokens, prompts that showed a position at or after their target (must be 0), wall time per
step, the match node's latency per step and peak RSS. ``--preload N`` first fills the bank with
N generated bookmarks about the same characters (positions before the first target), so the
match node's latency is measured at that bank size; the reuse/derive figures then include
matches to those synthetic bookmarks. The bank's own candidate latency at 100,000 bookmarks and
the concept scan time over a 100,000-action storyline are in benchmarks/bench_bank.py.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from personae.graphs.bookmarks.graph import BookmarksContext, graph
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType
from personae.memory.bookmarks.lexical import content_tokens
from personae.memory.bookmarks.storyline import Storyline, open_storyline
from personae.testing import ScriptedChatModel, override_models, prompt_text

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bookmarks"
STORYLINE = SHARED / "title2action_series.haruhi.json"
MARKER = re.compile(r"\[(\d+)\]")
SCENE_LINE = re.compile(r"^\[(\d+)\] \(([^)]*)\) (.*)$", re.M)


PLAIN: dict[str, tuple[str, str]] = {}
"""Action text -> (position, characters) of its first occurrence: the paper's method shows
plain texts (as the released runner), so the scripted model and the audit look lines up here."""


def remember_texts(storyline: Storyline) -> None:
    """Fill :data:`PLAIN` from the storyline (first occurrence of a repeated text wins)."""
    for action in storyline.actions:
        PLAIN.setdefault(action.text, (str(action.position), ", ".join(action.characters)))


def scene_lines(text: str) -> list[tuple[str, str, str]]:
    """``(position, characters, text)`` of each action line: ``[p] (who) text`` or plain."""
    found = SCENE_LINE.findall(text)
    if found:
        return found
    return [(*PLAIN[line], line) for line in text.splitlines() if line in PLAIN]


def _last_user(messages: Sequence[BaseMessage]) -> str:
    return str(messages[-1].content)


def _latest(text: str) -> int:
    shown = [int(m) for m in MARKER.findall(text)] + [int(p) for p, _, _ in scene_lines(text)]
    return max(shown, default=-1)


def _propose(messages: list[BaseMessage]) -> dict[str, Any]:
    """Questions from the scene: the character's habit towards whoever is most present, their
    situation, and who the other named people of the scene are (up to 5 in all)."""
    text = _last_user(messages)
    found = re.search(r"questions for (.+)'s next action", text)
    me = found.group(1) if found else "the character"
    seen = re.search(r"## Characters seen so far\n(.*)\n", text)
    known = seen.group(1).split(", ") if seen else []
    present = Counter(
        name
        for _, who, _ in scene_lines(text)
        for name in who.split(", ")
        if name in known and name != me
    )
    questions = [{"type": "state", "question": f"Where is {me} now and what is {me} doing?"}]
    if present:
        other = present.most_common(1)[0][0]
        questions.append(
            {"type": "behavioral", "question": f"How does {me} usually treat {other}?"}
        )
    for name, _ in present.most_common(3):
        questions.append({"type": "concept", "question": f"Who is {name}?", "keyword": name})
    return {"questions": questions[:5]}


def _match(messages: list[BaseMessage]) -> dict[str, Any]:
    """Derive from a candidate about the same people, else start anew."""
    text = _last_user(messages)
    wanted = content_tokens(text.split("\n")[1])
    for short_id, question in re.findall(r"^(B\d+): Q: (.*?) \| A:", text, re.M):
        if len(wanted & content_tokens(question)) >= 2:
            return {"choice": f"derive {short_id}"}
    return {"choice": "none"}


def _released_propose(messages: list[BaseMessage]) -> dict[str, Any]:
    """The same questions as :func:`_propose`, as the released prompt asks for them."""
    text = _last_user(messages)
    found = re.search(r"it's (.+)'s turn to make the next", text)
    me = found.group(1) if found else "the character"
    scene = text.split("# Scene\n", 1)[-1].split("\n\n", 1)[0]
    present = Counter(
        name
        for _, who, _ in scene_lines(scene)
        for name in who.split(", ")
        if name not in (me, "Other", "Environment")
    )
    queries = [{"tag": "state", "query": f"Where is {me} now and what is {me} doing?"}]
    if present:
        other = present.most_common(1)[0][0]
        queries.append({"tag": "behavioral", "query": f"How does {me} usually treat {other}?"})
    queries += [{"tag": "concept", "query": f"Who is {n}?"} for n, _ in present.most_common(3)]
    return {"queries": queries[:5]}


def _relation(messages: list[BaseMessage]) -> dict[str, Any]:
    """The released matcher: derive from a candidate about the same people, else none."""
    text = _last_user(messages)
    old = text.split("Existing bookmark query:\n", 1)[1].split("\n", 1)[0]
    new = text.split("New bookmark query:\n", 1)[1].split("\n", 1)[0]
    if old == new:
        return {"relation": "reuse"}
    return {"relation": "derive" if len(content_tokens(old) & content_tokens(new)) >= 2 else "none"}


def _check(messages: list[BaseMessage]) -> dict[str, Any]:
    chunk = _last_user(messages).split("After the following scene:\n", 1)[-1]
    return {"decision": "update" if scene_lines(chunk) else "none"}


def _state_answer(messages: list[BaseMessage]) -> dict[str, Any]:
    lines = scene_lines(_last_user(messages).split("After the following scene:\n")[-1])
    position, _, action = lines[-1] if lines else ("?", "", "nothing yet")
    return {"answer": f"Latest ([{position}]): {action[:120]}"}


def _evidence(messages: list[BaseMessage]) -> dict[str, Any]:
    text = _last_user(messages)
    action = text.split("\n# Action by ", 1)[1].split("\n", 2)[1]
    query = text.split("# Query\n", 1)[1].split("\n", 1)[0]
    return {"answer": "yes" if content_tokens(query) & content_tokens(action) else "no"}


def _keyword(messages: list[BaseMessage]) -> dict[str, Any]:
    found = re.search(r"Who is (.+?)\?", _last_user(messages))
    return {"keyword": found.group(1) if found else "Haruhi"}


def _state(messages: list[BaseMessage]) -> dict[str, Any]:
    lines = scene_lines(_last_user(messages).split("## New chunk")[-1])
    if not lines:
        return {"operation": "no_change", "answer": ""}
    position, _, action = lines[-1]
    return {"operation": "update", "answer": f"Latest ([{position}]): {action[:120]}"}


def _verdicts(messages: list[BaseMessage]) -> dict[str, Any]:
    text = _last_user(messages)
    pattern = content_tokens(text.split("\n")[1])
    items = re.findall(r"^(A\d+):\n(?:    .*\n)*>>> (.*)$", text, re.M)
    return {i: bool(pattern & content_tokens(a)) for i, a in items}  # keyed by the ids shown


def _summary(messages: list[BaseMessage]) -> dict[str, Any]:
    lines = scene_lines(_last_user(messages))
    last = lines[-1][2][:160] if lines else "nothing yet"
    return {"answer": f"Most recently ([{_latest(_last_user(messages))}]): {last}"}


def _act(messages: list[BaseMessage]) -> dict[str, Any]:
    found = re.search(r"\) of (.+) in the following scene", _last_user(messages))
    return {"action": f"{found.group(1) if found else 'Someone'} reacts to the scene."}


def _derive(messages: list[BaseMessage]) -> dict[str, Any]:
    parent = _last_user(messages).split("# Existing bookmark answer\n")[-1].split("\n")[0]
    return {"answer": f"Starting from: {parent[:160]}"}


def _judge(messages: list[BaseMessage]) -> dict[str, Any]:
    """Key move matched when response and truth share two content words (a stand-in)."""
    text = _last_user(messages)
    response = text.split("Your Response:")[-1].split("\n")[0]
    truth = text.split("Ground Truth:")[-1].split("\n")[0]
    shared = content_tokens(response) & content_tokens(truth)
    return {"reasoning": "scripted", "score": "A" if len(shared) >= 2 else "C"}


def scripted_model() -> ScriptedChatModel:
    """Deterministic answers for every role of the graph."""
    return ScriptedChatModel(
        responders={
            "ProposedQuestions": _propose,
            "MatchChoice": _match,
            "StateUpdate": _state,
            "EvidenceVerdicts": _verdicts,
            "BehaviorSummary": _summary,
            "ConceptAnswer": _summary,
            "NextAction": _act,
            "DerivedAnswer": _derive,
            "KeyMoveVerdict": _judge,
            "ReleasedQueries": _released_propose,
            "Relation": _relation,
            "StateCheck": _check,
            "StateAnswer": _state_answer,
            "EvidenceAnswer": _evidence,
            "ConceptKeyword": _keyword,
            "ConceptUpdate": _summary,
        }
    )


def instances(storyline_path: Path, characters: list[str], limit: int) -> list[tuple[int, str]]:
    """The characters' test instances (second half of their actions), in story order."""
    storyline = open_storyline(storyline_path)
    remember_texts(storyline)
    chosen = characters or list(storyline.major_characters[:1]) or storyline.characters[:1]
    todo = [(p, c) for c in chosen for p in storyline.test_split(c)[1]]
    return sorted(todo)[:limit]


TOPICS = "club movie baseball book tea computer festival island snow song alien plan".split()
TEMPLATES = {
    BookmarkType.BEHAVIORAL: "How does {c} usually react to the {t} {n}?",
    BookmarkType.STATE: "What is {c} doing with the {t} {n} now?",
    BookmarkType.CONCEPT: "Who is {c} in the {t} {n}?",
}


def preload(storyline: Storyline, memory: str, count: int, horizon: int) -> float:
    """Fill the bank with ``count`` generated bookmarks synced before ``horizon``; seconds."""
    rng = random.Random(7)
    names = storyline.characters[:12]
    kinds = list(BookmarkType)
    records = []
    for number in range(count):
        kind, name, topic = kinds[number % 3], rng.choice(names), rng.choice(TOPICS)
        position = rng.randrange(max(1, horizon))
        answer = f"{name} and the {topic} ({number})"
        records.append(
            Bookmark(
                id=f"bm-{number}",
                question=TEMPLATES[kind].format(c=name, t=topic, n=number % 997),
                type=kind,
                character=name,
                answer=answer,
                position=position,
                keyword=name if kind is BookmarkType.CONCEPT else None,
                history=[AnswerVersion(position=position, answer=answer)],
            )
        )
    start = time.perf_counter()
    BookmarkBank.open(storyline.name, Path(memory), scope=storyline.scope).import_bookmarks(records)
    return time.perf_counter() - start


async def one_step(
    context: BookmarksContext, character: str, position: int
) -> tuple[dict[str, int], float]:
    """Run one step; its stats and the match node's wall time in ms."""
    marks: dict[str, float] = {}
    stats: dict[str, int] = {}
    async for update in graph.astream(
        {"character": character, "position": position}, context=context, stream_mode="updates"
    ):
        for node, value in update.items():
            marks[node] = time.perf_counter()
            if node == "act_in_character":
                stats = dict(value["stats"])
    return stats, (marks["match_bookmarks"] - marks["propose_questions"]) * 1000


async def run(args: argparse.Namespace) -> None:
    model = scripted_model()
    override_models(model)
    todo = instances(args.storyline, args.characters, args.limit)
    totals: Counter[str] = Counter()
    leaks, match_ms = 0, []
    first_step: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as memory:
        if args.preload:
            storyline = open_storyline(args.storyline)
            took = preload(storyline, memory, args.preload, todo[0][0])
            print(f"preload: {args.preload:,} bookmarks imported in {took:.1f} s")
        context = BookmarksContext(
            storyline_path=str(args.storyline),
            memory_dir=memory,
            model="openai:scripted",
            fast_model="openai:scripted",
            prompts="released" if args.method == "bookmarks" else "personae",
        )
        start = time.perf_counter()
        for position, character in todo:
            before = len(model.calls)
            stats, match_time = await one_step(context, character, position)
            leaks += sum(_latest(prompt_text(m)) >= position for _, m in model.calls[before:])
            first_step = first_step or stats
            totals.update(stats)
            match_ms.append(match_time)
        wall = time.perf_counter() - start
    report(todo, totals, first_step, leaks, wall)
    size = f"{args.preload:,}+" if args.preload else "the agent's own"
    print(
        f"match node: p50 {statistics.median(match_ms):.1f} ms, p95 "
        f"{sorted(match_ms)[int(0.95 * (len(match_ms) - 1))]:.1f} ms, max {max(match_ms):.0f} ms per "
        f"step (K=5 questions, {size} bookmarks, scripted matcher)"
    )


def report(
    todo: list[tuple[int, str]],
    totals: Counter[str],
    first: dict[str, int],
    leaks: int,
    wall: float,
) -> None:
    steps = len(todo)
    read, scratch = totals["actions_read"], totals["actions_from_scratch"]
    later_read = read - first.get("actions_read", 0)
    later_scratch = scratch - first.get("actions_from_scratch", 0)
    matched = totals["reuse"] + totals["derive"] + totals["new"]
    who = ", ".join(sorted({c for _, c in todo}))
    print(f"steps: {steps} test instances of {who}, positions {todo[0][0]}..{todo[-1][0]}")
    print(
        f"sync: read {read:,} actions vs {scratch:,} from scratch = {read / scratch:.1%} "
        f"(saves {1 - read / scratch:.1%}; paper: 70-80 %)"
    )
    if later_scratch:
        print(
            f"sync after the first step: {later_read:,} vs {later_scratch:,} = "
            f"{later_read / later_scratch:.1%} (saves {1 - later_read / later_scratch:.1%})"
        )
    print(
        f"match: {matched} questions, reuse {totals['reuse'] / matched:.1%}, derive "
        f"{totals['derive'] / matched:.1%}, new {totals['new'] / matched:.1%} "
        f"(hit rate {(totals['reuse'] + totals['derive']) / matched:.1%})"
    )
    print(
        f"llm: {totals['llm_calls']:,} calls ({totals['llm_calls'] / steps:.1f}/step), "
        f"{totals['input_tokens']:,} input + {totals['output_tokens']:,} output tokens"
    )
    print(f"invariant: {leaks} prompts showed a position at or after their target")
    print(f"time: {wall:.1f} s wall, {wall / steps * 1000:.0f} ms/step (scripted model)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"memory: peak RSS {rss / 1024:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--storyline", type=Path, default=STORYLINE)
    parser.add_argument("--characters", nargs="*", default=[])
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument(
        "--method",
        choices=("bookmarks", "bookmarks-personae"),
        default="bookmarks",
        help="the paper's method (the released prompts) or ours",
    )
    parser.add_argument("--preload", type=int, default=0, help="generated bookmarks first")
    args = parser.parse_args()
    if not args.storyline.is_file():
        print(f"{args.storyline} is absent (../shared only exists on developer machines); skipped")
        return
    print("$ " + " ".join(["python", *sys.argv]))
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
