"""The bookmark bank at 100,000 and 300,000 bookmarks: build, open in a new process, search, act.

Run: uv run python benchmarks/bench_bank_scale.py [--sizes 100000 300000] [--queries 200]
     [--rebuild] [--act]

Every measurement that concerns a process runs in a fresh child process (this script with
``--child``), so its memory and start-up are its own:

1. build: a bank of N generated bookmarks (streamed, never held as a list), written with
   ``import_bookmarks``: wall, CPU and bookmarks per CPU second (a progress line per tenth),
   peak RSS (goal <= 600 MiB at 100,000) and the bank's disk, Chroma's SQLite file and the index
   files beside it (goal <= 450 MiB at 100,000, <= 1.35 GB at 300,000).
2. open: a fresh process opens the bank and runs a first ``candidates()`` in every scope (all
   the vectors are then resident): wall and CPU (goal <= 5 s wall on a quiet machine), RSS after
   (goal <= 300 MiB at 100,000) beside the RSS of the same process before opening.
3. search, in that process after its RSS is read: ``candidates()`` p50/p95 over ``--queries``
   random targets and story-order targets against the same-run lower bound, a per-scope,
   position-sorted numpy search with the same filter and lexical step and no store at all
   (goal: p50 <= 2x, p95 <= 3x at random targets); identical candidates counted.
4. ``--rebuild``: the open again with the index files deleted (what every process paid before
   the files existed: every vector read back from Chroma).
5. ``--act``: one ``personae bookmarks act`` step (CLI child process, scripted model on a loopback
   server) on an empty memory and on the first size's bank: wall, CPU, peak RSS (goal: <= 2x).

Growth from the first size to the last is printed as ratios (goal: linear). Each line carries
the load average: the machine is shared, so CPU times are the figures to compare.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from measure import (  # noqa: E402
    cpu_seconds,
    load,
    peak_rss_mib,
    percentile,
    rss_mib,
    timed,
)

NAMES = ("Haruhi", "Kyon", "Nagato", "Mikuru", "Itsuki", "Tsuruya", "Taniguchi", "Kunikida")
TOPICS = [
    "club", "movie", "baseball", "book", "tea", "computer", "festival", "island", "snow",
    "song", "time", "alien", "esper", "plan", "school", "costume", "camera", "cat", "game",
    "summer", "mystery", "letter", "teacher", "hill", "station", "library", "concert",
]  # fmt: skip
TEMPLATES = {
    "behavioral": "How does {c} usually react to {t} and {u}?",
    "state": "What is happening with the {t} and the {u} now?",
    "concept": "What is the {t} {u} that {c} mentioned?",
}
KINDS = ("behavioral", "state", "concept")
DISK_GOALS = {100_000: 450 * 2**20, 300_000: 1.35e9}
"""Issue 30's bounds on a bank's whole folder (Chroma and the index files)."""
ACTIONS = 2000
"""Storyline length: bookmark positions and targets fall in [0, ACTIONS)."""


def generated(count: int, seed: int = 7) -> Iterator[tuple[int, str, str, str, int]]:
    """``(number, kind, character, question, position)`` of each generated bookmark."""
    rng = random.Random(seed)
    for number in range(count):
        kind = KINDS[number % 3]
        character = rng.choice(NAMES)
        t, u = rng.sample(TOPICS, 2)
        question = TEMPLATES[kind].format(c=character, t=t, u=f"{u} {number % 997}")
        yield number, kind, character, question, rng.randrange(ACTIONS)


def bookmarks(count: int) -> Iterator[Any]:
    from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType

    for number, kind, character, question, position in generated(count):
        answer = f"{character}: answer {number}"
        yield Bookmark(
            id=f"bm-{number}",
            question=question,
            type=BookmarkType(kind),
            character=character,
            answer=answer,
            position=position,
            keyword=question.split()[3] if kind == "concept" else None,
            history=[
                AnswerVersion(position=0, answer=""),
                AnswerVersion(position=position, answer=answer),
            ],
        )


def write_story(path: Path) -> Path:
    """A storyline of :data:`ACTIONS` actions by the generated bookmarks' characters."""
    lines = []
    for position in range(ACTIONS):
        who, other = NAMES[position % 4], NAMES[(position + 1) % 4]
        text = f"{who} talks to {other} about the club in scene {position}."
        lines.append(json.dumps({"action": text, "character": who, "chapter": "Chapter 1"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (path.parent / "all_characters.json").write_text(json.dumps({path.stem: {"major": NAMES[:4]}}))
    return path


def open_bank(memory: Path, story: Path) -> Any:
    from personae.memory.bookmarks.bank import BookmarkBank
    from personae.memory.bookmarks.storyline import load_storyline

    storyline = load_storyline(story)
    return BookmarkBank.open(storyline.name, memory, scope=storyline.scope)


def child_build(memory: Path, story: Path, count: int) -> dict[str, Any]:
    bank = open_bank(memory, story)
    step = max(1000, count // 10)
    rates: list[float] = []
    marks = [(0, cpu_seconds())]

    def progress(stored: int) -> None:
        """One line per tenth (to stderr: the parent reads stdout): CPU rate of that tenth."""
        if stored == marks[-1][0] or (stored - marks[-1][0] < step and stored < count):
            return
        done, spent = stored - marks[-1][0], cpu_seconds() - marks[-1][1]
        marks.append((stored, cpu_seconds()))
        rates.append(done / max(spent, 1e-9))
        print(
            f"  build: {stored:,} of {count:,} stored, {rates[-1]:,.0f} bookmarks/s CPU "
            f"over the last {done:,}; {load()}",
            file=sys.stderr,
            flush=True,
        )

    with timed() as span:
        bank.import_bookmarks(bookmarks(count), progress=progress)
    files = sum(f.stat().st_size for f in (memory / "bank-index").iterdir())
    return {
        "wall": span.wall,
        "cpu": span.cpu,
        "peak": peak_rss_mib(),
        "files": files,
        "disk": disk_bytes(memory),
        "sqlite": (memory / "chroma.sqlite3").stat().st_size,
        "last_rate": rates[-1] if rates else 0.0,
    }


def disk_bytes(folder: Path) -> int:
    """Bytes a folder takes on disk (allocated blocks, as ``du`` counts them)."""
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())


def first_step(bank: Any) -> None:
    """One ``candidates()`` in every scope: each behavioral character's, state, concept."""
    from personae.memory.bookmarks.bookmark import BookmarkType

    for character in NAMES:
        bank.candidates(
            f"How does {character} react to the club?",
            type=BookmarkType.BEHAVIORAL,
            character=character,
            synced_by=ACTIONS,
        )
    for kind in (BookmarkType.STATE, BookmarkType.CONCEPT):
        bank.candidates(
            "What is the club plan now?", type=kind, character="Kyon", synced_by=ACTIONS
        )


def child_open(memory: Path, story: Path, count: int, queries: int) -> dict[str, Any]:
    from personae.memory.bookmarks import bank as _bank  # noqa: F401  (imports before the clock)

    before = rss_mib()
    with timed() as span:
        bank = open_bank(memory, story)
        first_step(bank)
    figures: dict[str, Any] = {
        "wall": span.wall,
        "cpu": span.cpu,
        "rss_before": before,
        "rss": rss_mib(),
        "peak": peak_rss_mib(),
        "rows": len(bank._index()),
    }
    if queries:
        figures["search"] = search(bank, count, queries)
    return figures


class LowerBound:
    """The same candidates with no store: per scope, rows sorted by position, one contiguous
    matrix, the "synced by" filter a prefix; the exact top of the pool (ties in creation
    order), then the same lexical filter. No Chroma, no locks, no reading back the winners."""

    def __init__(self, count: int) -> None:
        import numpy as np

        from personae.memory.embeddings import open_embedding

        rows = list(generated(count))
        self.questions = [row[3] for row in rows]
        embedding = self.embedding = open_embedding("hashing")
        groups: dict[str, list[int]] = {}
        for number, kind, character, _, _ in rows:
            groups.setdefault(_scope(kind, character), []).append(number)
        self.scopes = {}
        for scope, members in groups.items():
            ordered = sorted(members, key=lambda n: (rows[n][4], n))
            self.scopes[scope] = (
                np.array(ordered),
                embedding.embed([self.questions[n] for n in ordered]),
                np.array([rows[n][4] for n in ordered]),
            )

    def candidates(self, question: str, kind: str, character: str, synced_by: int) -> list[str]:
        import numpy as np

        from personae.memory.blas import one_blas_thread
        from personae.memory.bookmarks.lexical import lexical_filter

        numbers, vectors, positions = self.scopes[_scope(kind, character)]
        prefix = int(np.searchsorted(positions, synced_by, side="right"))
        query = self.embedding.embed([question])[0]  # as the bank embeds (an LRU of vectors)
        with one_blas_thread():  # as the bank searches: OpenBLAS's threads spin under load
            distances = 1.0 - vectors[:prefix] @ query
        slots = np.arange(prefix)
        if prefix > 50:
            kth = np.partition(distances, 49)[49]
            inside, tied = np.flatnonzero(distances < kth), np.flatnonzero(distances == kth)
            slots = np.concatenate([inside, tied[: 50 - len(inside)]])  # slots: creation order
        order = slots[np.lexsort((numbers[slots], distances[slots]))]
        pool = [(int(numbers[i]), float(distances[i])) for i in order]
        kept = lexical_filter(
            question, pool, lambda row: self.questions[row[0]], k=5, distance_of=lambda r: r[1]
        )
        return [f"bm-{n}" for n, _ in kept]


def _scope(kind: str, character: str) -> str:
    return f"{kind}|{character}" if kind == "behavioral" else kind


def search(bank: Any, count: int, queries: int) -> dict[str, Any]:
    from personae.memory.bookmarks.bookmark import BookmarkType

    bound = LowerBound(count)
    rng = random.Random(11)
    figures = {}
    for label, low in (("random targets", ACTIONS // 10), ("story order", ACTIONS)):
        bank_ms, bound_ms, same, ordered = [], [], 0, 0
        for number in range(queries):
            kind = KINDS[number % 3]
            character = rng.choice(NAMES)
            t, u = rng.sample(TOPICS, 2)
            question = TEMPLATES[kind].format(c=character, t=t, u=u)
            synced_by = rng.randrange(low, ACTIONS + 1)

            def in_bank(
                q: str = question, k: str = kind, c: str = character, by: int = synced_by
            ) -> list[str]:
                found = bank.candidates(q, type=BookmarkType(k), character=c, synced_by=by)
                return [b.id for b in found]

            def in_bound(
                q: str = question, k: str = kind, c: str = character, by: int = synced_by
            ) -> list[str]:
                return bound.candidates(q, k, c, by)

            runs = [in_bank, in_bound]
            found = {}
            for which in (number % 2, 1 - number % 2):  # alternate who goes first
                start = time.perf_counter()
                found[which] = runs[which]()
                (bank_ms if which == 0 else bound_ms).append((time.perf_counter() - start) * 1e3)
            same += set(found[0]) == set(found[1])
            ordered += found[0] == found[1]
        figures[label] = {
            "p50": percentile(bank_ms, 0.5),
            "p95": percentile(bank_ms, 0.95),
            "floor_p50": percentile(bound_ms, 0.5),
            "floor_p95": percentile(bound_ms, 0.95),
            "same": same,
            "ordered": ordered,
        }
    return figures


def run_child(*argv: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *argv], stdout=subprocess.PIPE, text=True, check=False
    )  # the child's stderr (build progress, errors) goes straight to ours
    if done.returncode != 0:
        raise SystemExit(f"child {argv} failed (its error above)")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_act(memory: Path, story: Path) -> dict[str, Any]:
    """One ``personae bookmarks act`` step in a child process against the loopback scripted model."""
    from kill_world import HeldChat, cli_env

    from personae.loopback import LoopbackWebServer

    code = (
        "import atexit, json, resource, sys, time\n"
        "start = time.perf_counter()\n"
        "def report():\n"
        "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "    print(json.dumps({'wall': time.perf_counter() - start, 'cpu': u.ru_utime + u.ru_stime,"
        " 'peak': u.ru_maxrss / 1024}), file=sys.stderr)\n"
        "atexit.register(report)\n"
        "from personae.cli import run\n"
        "sys.argv[0] = 'personae'\n"
        "run()\n"
    )
    argv = [
        "bookmarks",
        "act",
        "--method",
        "bookmarks-personae",
        str(story),
        "--character",
        "Haruhi",
        "--at",
        str(ACTIONS // 2),
        "--json",
    ]
    chat = HeldChat()
    with LoopbackWebServer(chat) as server:
        done = subprocess.run(
            [sys.executable, "-c", code, *argv, "--memory", str(memory)],
            env=cli_env(server.url),
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"act failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stderr.strip().splitlines()[-1])
    figures["calls"] = len(chat.answered)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rebuild", action="store_true", help="also open without index files")
    parser.add_argument("--act", action="store_true", help="also time one act step")
    parser.add_argument(
        "--keep", type=Path, help="build the banks in this folder and keep them (reused if there)"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, memory, story, count, queries = args.child
        if mode == "build":
            result = child_build(Path(memory), Path(story), int(count))
        else:
            result = child_open(Path(memory), Path(story), int(count), int(queries))
        print(json.dumps(result))
        return
    print("$ " + " ".join(["python", *sys.argv]))
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        tmp = str(args.keep or scratch)
        Path(tmp).mkdir(parents=True, exist_ok=True)
        story = write_story(Path(tmp) / "club.jsonl")
        for number, size in enumerate(args.sizes):
            memory = Path(tmp) / f"m{size}"
            if args.keep and (memory / "bank-index").is_dir():
                built = json.loads((memory / "built.json").read_text())
                print(f"bank scale: reusing the {size:,} bank in {memory} (built earlier)")
            else:
                built = run_child("build", str(memory), str(story), str(size), "0")
                (memory / "built.json").write_text(json.dumps(built))
            goal = DISK_GOALS.get(size)
            print(
                f"bank scale: built {size:,} bookmarks in {built['wall']:.0f} s wall, "
                f"{built['cpu']:.0f} s CPU ({size / built['cpu']:,.0f} bookmarks/s CPU; last "
                f"tenth {built.get('last_rate', 0):,.0f}/s), peak RSS {built['peak']:.0f} MiB "
                f"(goal <= 600 MiB at 100,000); disk {built.get('disk', 0) / 2**20:,.0f} MiB"
                + (f" (goal <= {goal / 2**20:,.0f} MiB)" if goal else "")
                + f": chroma.sqlite3 {built.get('sqlite', 0) / 2**20:,.0f} MiB, index files "
                f"{built['files'] / 2**20:.0f} MiB; {load()}"
            )
            queries = args.queries if number == 0 else 0
            opened = run_child("open", str(memory), str(story), str(size), str(queries))
            print(
                f"bank scale: fresh process opens the {size:,} bank and runs a first "
                f"candidates() in all 10 scopes: {opened['wall']:.2f} s wall, "
                f"{opened['cpu']:.2f} s CPU (goal <= 5 s wall); RSS after {opened['rss']:.0f} MiB "
                f"(goal <= 300 MiB at 100,000; {opened['rss_before']:.0f} MiB before opening), "
                f"peak {opened['peak']:.0f} MiB; {load()}"
            )
            rows.append((size, built, opened))
            for label, f in opened.get("search", {}).items():
                print(
                    f"bank: candidates() at {size:,} bookmarks, {args.queries} queries, {label}: "
                    f"p50 {f['p50']:.2f} ms, p95 {f['p95']:.2f} ms; lower bound (same run) p50 "
                    f"{f['floor_p50']:.2f} ms, p95 {f['floor_p95']:.2f} ms: "
                    f"{f['p50'] / f['floor_p50']:.2f}x / {f['p95'] / f['floor_p95']:.2f}x "
                    f"(goal <= 2x / 3x at random targets); identical candidates "
                    f"{f['same']}/{args.queries} ({f['ordered']} in the same order); {load()}"
                )
            if args.rebuild:
                shutil.copytree(memory / "bank-index", memory / "bank-index.kept")
                shutil.rmtree(memory / "bank-index")
                again = run_child("open", str(memory), str(story), str(size), "0")
                print(
                    f"bank scale: the same open with the index files deleted (rebuilt from "
                    f"Chroma, as every process did before): {again['wall']:.1f} s wall, "
                    f"{again['cpu']:.1f} s CPU, RSS after {again['rss']:.0f} MiB, peak "
                    f"{again['peak']:.0f} MiB; {load()}"
                )
                shutil.rmtree(memory / "bank-index")
                (memory / "bank-index.kept").rename(memory / "bank-index")
            if args.act and number == 0:
                # Fresh copies: a step writes its memory, and a second run at the same
                # position would resume that step instead of running it (--keep).
                acted = Path(tempfile.mkdtemp(prefix="act-", dir=tmp))
                empty = run_act(acted / "empty", story)
                full = run_act(Path(shutil.copytree(memory, acted / "full")), story)
                shutil.rmtree(acted)
                print(
                    f"act: one step in a fresh CLI process, empty bank: {empty['wall']:.1f} s "
                    f"wall, {empty['cpu']:.1f} s CPU, peak {empty['peak']:.0f} MiB, "
                    f"{empty['calls']} model calls; {size:,}-bookmark bank: {full['wall']:.1f} s "
                    f"wall, {full['cpu']:.1f} s CPU, peak {full['peak']:.0f} MiB, "
                    f"{full['calls']} model calls: {full['cpu'] / empty['cpu']:.2f}x CPU, "
                    f"{full['peak'] / empty['peak']:.2f}x memory (goal <= 2x); {load()}"
                )
            if number and not args.keep:
                shutil.rmtree(memory, ignore_errors=True)  # disk: the first size stays for act
    if len(rows) > 1:
        (small, b0, o0), (large, b1, o1) = rows[0], rows[-1]
        scale = large / small
        print(
            f"bank scale: {small:,} -> {large:,} ({scale:.0f}x rows): RSS after open "
            f"{o0['rss'] - o0['rss_before']:.0f} -> {o1['rss'] - o1['rss_before']:.0f} MiB above "
            f"the interpreter ({(o1['rss'] - o1['rss_before']) / (o0['rss'] - o0['rss_before']):.2f}x)"
            f", build peak {b0['peak']:.0f} -> {b1['peak']:.0f} MiB, open CPU "
            f"{o0['cpu']:.2f} -> {o1['cpu']:.2f} s ({o1['cpu'] / o0['cpu']:.2f}x), build CPU "
            f"{b0['cpu']:.0f} -> {b1['cpu']:.0f} s ({b1['cpu'] / b0['cpu']:.2f}x) (goal: linear); "
            f"bookmarks/s CPU {small / b0['cpu']:,.0f} -> {large / b1['cpu']:,.0f} "
            f"({(large / b1['cpu']) / (small / b0['cpu']):.2f}x; goal >= 0.90x), disk "
            f"{b0.get('disk', 0) / 2**20:,.0f} -> {b1.get('disk', 0) / 2**20:,.0f} MiB"
        )


if __name__ == "__main__":
    main()
