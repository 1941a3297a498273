"""Bookmark bank and storyline index figures: matching latency, concept scan time, memory.

Run: uv run python benchmarks/bench_bank.py [--bookmarks 100000] [--actions 100000] [--queries 100]

Prints (not asserts) figures (the bank's issue-19 figures, each in a fresh process, are
``bench_bank_scale.py``'s): bulk insert rate of N generated bookmarks into an on-disk Chroma
bank, ``candidates()`` latency p50/p95 at that size, the storyline index build time over a
synthetic storyline of M actions (real action texts from ../shared when present), keyword scan
+ context-window time against a naive linear scan, and peak memory.
"""

from __future__ import annotations

import argparse
import functools
import random
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from personae.memory.bookmarks.bank import BookmarkBank, _scope
from personae.memory.bookmarks.bank_index import forget_bank_indexes
from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType
from personae.memory.bookmarks.lexical import content_tokens, lexical_filter, tokens
from personae.memory.bookmarks.storyline import StoryAction, Storyline, load_storyline
from personae.memory.embeddings import embed_text, open_embedding
from personae.tools.bookmarks.storyline_index import StorylineIndex, context_windows

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bookmarks"
CHARACTERS = ["Kyon", "Haruhi", "Yuki", "Mikuru", "Itsuki", "Tsuruya", "Taniguchi", "Kunikida"]
TOPICS = [
    "club", "movie", "baseball", "book", "tea", "computer", "festival", "island", "snow",
    "song", "time", "alien", "esper", "plan", "school", "costume", "camera", "cat", "game",
    "summer", "mystery", "letter", "teacher", "hill", "station", "library", "concert",
]  # fmt: skip
TEMPLATES = {
    BookmarkType.BEHAVIORAL: "How does {c} usually react to {t} and {u}?",
    BookmarkType.STATE: "What is happening with the {t} and the {u} now?",
    BookmarkType.CONCEPT: "What is the {t} {u} that {c} mentioned?",
}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def best_of(repeats: int, run: Callable[[], object]) -> float:
    """Fastest of ``repeats`` runs in ms (hides a GC pause landing in one run)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def generated_bookmarks(count: int, horizon: int, rng: random.Random) -> list[Bookmark]:
    kinds = list(BookmarkType)
    out = []
    for number in range(count):
        kind = kinds[number % 3]
        character = rng.choice(CHARACTERS)
        t, u = rng.sample(TOPICS, 2)
        question = TEMPLATES[kind].format(c=character, t=t, u=f"{u} {number % 997}")
        position = rng.randrange(horizon)
        answer = f"{character} and the {t}: answer {number}"
        out.append(
            Bookmark(
                id=f"bm-{number}",
                question=question,
                type=kind,
                character=character,
                answer=answer,
                position=position,
                keyword=t if kind is BookmarkType.CONCEPT else None,
                history=[
                    AnswerVersion(position=0, answer=""),
                    AnswerVersion(position=position, answer=answer),
                ],
            )
        )
    return out


def ranks(question: str, questions: list[str]) -> list[tuple[int, float]]:
    """The (shared words, distance) of each kept candidate, sorted: equal lists mean the two
    searches kept equally ranked candidates, differing at most by which of a tie they took."""
    vector = embed_text(question).astype(np.float64)
    wanted = content_tokens(question)
    return sorted(
        (
            -len(wanted & content_tokens(other)),
            round(1.0 - float(vector @ embed_text(other).astype(np.float64)), 5),
        )
        for other in questions
    )


class InMemoryLowerBound:
    """The same candidate semantics with no store at all: the floor the bank is measured against.

    Per scope, the vectors in one contiguous numpy matrix with the positions beside them:
    exact cosine search over the rows that pass, then the same lexical filter. No Chroma, no
    JSON, no locks, no reading back the winners.
    """

    def __init__(self, records: list[Bookmark]) -> None:
        self.records = records
        vectors = open_embedding("hashing").embed([r.question for r in records])
        groups: dict[str, list[int]] = {}
        for number, record in enumerate(records):
            groups.setdefault(_scope(record.type, record.character), []).append(number)
        self.scopes = {
            scope: (
                np.array(members),
                np.ascontiguousarray(vectors[members]),
                np.array([records[i].position for i in members]),
            )
            for scope, members in groups.items()
        }

    def question(self, bookmark_id: str) -> str:
        return self.records[int(bookmark_id.removeprefix("bm-"))].question

    def candidates(
        self, question: str, *, type: BookmarkType, character: str, synced_by: int, k: int = 5
    ) -> list[str]:
        members, vectors, positions = self.scopes[_scope(type, character)]
        distances = 1.0 - vectors @ embed_text(question)
        passing = np.flatnonzero(positions <= synced_by)
        distances = distances[passing]
        size = max(50, 10 * k)
        if len(passing) > size:
            keep = np.argpartition(distances, size - 1)[:size]
            passing, distances = passing[keep], distances[keep]
        order = np.lexsort((passing, distances))
        pool = [(int(members[passing[i]]), float(distances[i])) for i in order]
        kept = lexical_filter(
            question,
            pool,
            lambda row: self.records[row[0]].question,
            k=k,
            distance_of=lambda row: row[1],
        )
        return [self.records[i].id for i, _ in kept]


def bench_matching(count: int, queries: int, path: Path | None) -> None:
    rng = random.Random(7)
    bank = BookmarkBank.open("bench-bank", path)
    records = generated_bookmarks(count, 100_000, rng)
    start = time.perf_counter()
    bank.import_bookmarks(records)
    insert = time.perf_counter() - start
    print(f"bank: inserted {len(bank):,} bookmarks in {insert:.1f} s ({len(bank) / insert:,.0f}/s)")
    del bank
    forget_bank_indexes()  # the first query of a fresh process: the index files are loaded
    reopened = BookmarkBank.open("bench-bank", path)
    start = time.perf_counter()
    reopened.candidates("warm up the index", type=BookmarkType.STATE, character="Kyon", synced_by=1)
    print(
        f"bank: reopened, in-process index loaded from its files in {time.perf_counter() - start:.1f} s"
    )
    bank = reopened
    floor = InMemoryLowerBound(records)
    kinds = list(BookmarkType)
    for label, low in [
        ("story order: target after every bookmark", 100_000),
        ("random targets", 10_000),
    ]:
        timings, floors, sizes, same, ordered, tied = [], [], [], 0, 0, 0
        for number in range(queries):
            kind = kinds[number % 3]
            character = rng.choice(CHARACTERS)
            t, u = rng.sample(TOPICS, 2)
            question = TEMPLATES[kind].format(c=character, t=t, u=u)
            synced_by = rng.randrange(low, 100_001)
            start = time.perf_counter()
            found = bank.candidates(question, type=kind, character=character, synced_by=synced_by)
            timings.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            expected = floor.candidates(
                question, type=kind, character=character, synced_by=synced_by
            )
            floors.append((time.perf_counter() - start) * 1000)
            sizes.append(len(found))
            same += {b.id for b in found} == set(expected)
            ordered += [b.id for b in found] == expected
            tied += {b.id for b in found} != set(expected) and ranks(
                question, [b.question for b in found]
            ) == ranks(question, [floor.question(i) for i in expected])
        print(
            f"bank: candidates() at {len(bank):,} bookmarks, {queries} queries, {label}: "
            f"p50 {percentile(timings, 0.5):.1f} ms, p95 {percentile(timings, 0.95):.1f} ms, "
            f"mean kept {statistics.mean(sizes):.1f}; in-memory lower bound (same run) "
            f"p50 {percentile(floors, 0.5):.1f} ms, p95 {percentile(floors, 0.95):.1f} ms; "
            f"identical candidates {same}/{queries} ({ordered}/{queries} in the same order); "
            f"of the {queries - same} others, {tied} differ only by swapping ties (same shared "
            f"words, distance equal to 1e-5)"
        )
    near_times = []
    for target in rng.sample(range(100_000), 20):
        start = time.perf_counter()
        bank.near(target, character="Kyon", window=5)
        near_times.append((time.perf_counter() - start) * 1000)
    print(f"bank: near(target, window=5) over 20 targets: p50 {percentile(near_times, 0.5):.1f} ms")


def source_texts() -> list[tuple[str, tuple[str, ...]]]:
    if SHARED.is_dir():
        texts = []
        for path in sorted(SHARED.glob("title2action_series.*.json")):
            texts += [(a.text, a.characters) for a in load_storyline(path).actions]
        print(f"storyline: reusing {len(texts):,} real action texts from {SHARED}")
        return texts
    print("storyline: ../shared absent, generating action texts")
    rng = random.Random(3)
    return [
        (
            f"{rng.choice(CHARACTERS)} talks about the {rng.choice(TOPICS)} near the {rng.choice(TOPICS)}",
            ("Other",),
        )
        for _ in range(5000)
    ]


def synthetic_storyline(size: int) -> Storyline:
    texts = source_texts()
    actions = tuple(
        StoryAction(i, f"chapter {i // 500}", texts[i % len(texts)][0], texts[i % len(texts)][1])
        for i in range(size)
    )
    return Storyline("synthetic", actions, tuple(dict.fromkeys(a.chapter for a in actions)))


def naive_positions(storyline: Storyline, keyword: str, start: int, end: int) -> list[int]:
    phrase = tokens(keyword)
    size = len(phrase)
    hits = []
    for action in storyline.before(end, start):
        words = tokens(action.text)
        if any(words[i : i + size] == phrase for i in range(len(words) - size + 1)):
            hits.append(action.position)
    return hits


def scan_with_windows(index: StorylineIndex, keyword: str, size: int) -> list[tuple[int, int]]:
    windows: list[tuple[int, int]] = context_windows(index.positions(keyword, 0, size), 8, end=size)
    return windows


def bench_scan(size: int) -> None:
    storyline = synthetic_storyline(size)
    tracemalloc.start()
    start = time.perf_counter()
    index = StorylineIndex(storyline)
    build = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"index: built over {len(storyline):,} actions in {build:.2f} s, traced peak {peak / 2**20:.0f} MiB"
    )
    for keyword in ["Haruhi", "Kyon", "SOS Brigade", "guitar", "Alphonse", "zeppelin"]:
        indexed = best_of(3, functools.partial(scan_with_windows, index, keyword, size))
        hits = index.positions(keyword, 0, size)
        windows = context_windows(hits, 8, end=size)
        start = time.perf_counter()
        naive = naive_positions(storyline, keyword, 0, size)
        linear = (time.perf_counter() - start) * 1000
        # the index also matches who acts, so it finds a superset of the text-only scan
        agree = "index covers linear" if set(naive) <= set(hits) else "MISSED HITS"
        print(
            f"scan: {keyword!r:>14}: {len(hits):>6,} hits, {len(windows):>5,} windows, "
            f"index best of 3 {indexed:8.2f} ms vs linear scan {linear:8.1f} ms ({agree})"
        )
    rng = random.Random(5)
    timings = []
    for _ in range(1000):
        target = rng.randrange(min(1000, size - 1), size)
        start = time.perf_counter()
        context_windows(index.positions("Kyon", target - 64, target), 8, end=target)
        timings.append((time.perf_counter() - start) * 1e6)
    print(
        f"scan: 64-action suffix scans (1000 random targets): p50 {percentile(timings, 0.5):.0f} us, p95 {percentile(timings, 0.95):.0f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bookmarks", type=int, default=100_000)
    parser.add_argument("--actions", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--in-memory", action="store_true", help="ephemeral Chroma, not on disk")
    args = parser.parse_args()
    print("$ " + " ".join(["python", *sys.argv]))
    bench_scan(args.actions)
    with tempfile.TemporaryDirectory() as tmp:
        bench_matching(args.bookmarks, args.queries, None if args.in_memory else Path(tmp))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"memory: peak RSS {rss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
