"""How closely ``--method bookmarks`` follows the released runner: candidates and concept windows.

Run: uv run python benchmarks/bench_released_runner.py [--bank 300] [--questions 200]
     [--keyword "SOS Brigade"]

Prints, not asserts (no model, no network):
1. matcher candidates: a bank of ``--bank`` state bookmarks (questions from templates over the
   haruhi cast, synced to positions before the target) and ``--questions`` new state questions;
   for each, the candidates our ``find_candidates`` (paper's method, K' = 5) hands the matcher
   against those of the released runner's ``find_supporting_bookmark`` (re-implemented below
   from src/bookmarks/bookmarks.py: ``normalize_query``, ``overlap_rate``, the ``(score, idx)``
   sort): how often the first candidate is the same, and the ordered top 5;
2. concept windows: the actions of context the concept sync of ``--keyword`` reads on the
   whole haruhi storyline synced from the start (ours, by ``actions_from_scratch``), against
   the released ``build_merge_rank_spans`` over the runner's substring hits, top 8 spans.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from released_runner import build_merge_rank_spans, overlap_rate  # noqa: E402

from personae.graphs.bookmarks.resources import BookmarkResources, UnknownQuestions
from personae.graphs.bookmarks.step import BookmarkStepSettings, Question, find_candidates
from personae.graphs.bookmarks.sync import SyncSettings, actions_from_scratch
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType
from personae.memory.bookmarks.storyline import open_storyline
from personae.tools.bookmarks.storyline_index import StorylineIndex

HARUHI = (
    Path(__file__).resolve().parents[1].parent
    / "shared/data/bookmarks/title2action_series.haruhi.json"
)
CAST = ("Haruhi", "Kyon", "Nagato", "Mikuru", "Koizumi", "Tsuruya", "Taniguchi", "Asakura")
PLACES = ("the club room", "the classroom", "the station", "the hill", "the cafe")
TEMPLATES = (
    "Where is {a} right now?",
    "Where is {a} now and who is with {a}?",
    "What is {a} doing in {p} now?",
    "How does {a} feel about {b} currently?",
    "What does {a} want from {b} right now?",
    "Is {a} still angry with {b}?",
    "Who is with {a} in {p}?",
    "What is the current plan of the SOS Brigade for {a}?",
    "What is {a} holding now?",
    "Why is {a} in {p}?",
)


def runner_top(question: str, bank: list[tuple[str, int]], k: int = 5) -> list[int]:
    """``find_supporting_bookmark``'s order over ``(query, index)`` rows (state: any character)."""
    scored = [(overlap_rate(question, q), idx) for idx, (q, index) in enumerate(bank) if index]
    scored.sort(reverse=True)
    return [idx for _, idx in scored[:k]]


def question(rng: random.Random) -> str:
    a, b = rng.sample(CAST, 2)
    return rng.choice(TEMPLATES).format(a=a, b=b, p=rng.choice(PLACES))


def candidates(bank_size: int, questions: int) -> None:
    rng = random.Random(7)
    storyline = open_storyline(HARUHI)
    target = len(storyline)
    rows = [(question(rng), rng.randrange(1, target)) for _ in range(bank_size)]
    with tempfile.TemporaryDirectory() as folder:
        bank = BookmarkBank.open(storyline.name, Path(folder), scope=storyline.scope)
        bank.import_bookmarks(
            Bookmark(
                id=f"bm-{n + 1}",
                question=q,
                type=BookmarkType.STATE,
                character=rng.choice(CAST),
                answer="known",
                position=position,
                history=[AnswerVersion(position=position, answer="known")],
            )
            for n, (q, position) in enumerate(rows)
        )
        resources = BookmarkResources(
            storyline, StorylineIndex(storyline), bank, UnknownQuestions.load(None)
        )
        settings = BookmarkStepSettings(k_candidates=5, sync=SyncSettings(prompts="released"))
        first = whole = 0
        for _ in range(questions):
            asked = question(rng)
            [ours] = find_candidates(
                resources,
                [Question(type="state", question=asked, keyword=None)],
                character=rng.choice(CAST),
                target=target,
                settings=settings,
            )
            theirs = [f"bm-{i + 1}" for i in runner_top(asked, rows)]
            mine = [b.id for b in ours]
            first += bool(mine) and mine[0] == theirs[0]
            whole += mine == theirs
    print(f"matcher candidates, bank of {bank_size} state bookmarks, {questions} new questions:")
    print(f"  same first candidate as the runner: {first}/{questions}")
    print(f"  same ordered top 5 as the runner:   {whole}/{questions}")


def concept_windows(keyword: str) -> None:
    storyline = open_storyline(HARUHI)
    index = StorylineIndex(storyline)
    end = len(storyline)
    concept = Bookmark(
        id="bm-1", question=f'What is "{keyword}"?', type=BookmarkType.CONCEPT, character="Kyon"
    )
    concept.keyword = keyword
    ours = actions_from_scratch(
        concept, end, storyline=storyline, index=index, settings=SyncSettings(prompts="released")
    )
    hits = [a.position for a in storyline.actions if keyword.lower() in a.text.lower()]
    spans = build_merge_rank_spans(hits, 8)[:8]
    runner = sum(min(stop, end) - start for start, stop in spans)
    print(f'concept windows for "{keyword}" on haruhi synced from 0 to {end}:')
    print(f"  ours (--method bookmarks): {ours} actions; the runner: {runner} actions")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--bank", type=int, default=300)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--keyword", default="SOS Brigade")
    args = parser.parse_args()
    candidates(args.bank, args.questions)
    concept_windows(args.keyword)


if __name__ == "__main__":
    main()
