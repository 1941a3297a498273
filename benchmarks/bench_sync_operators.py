"""Sync operator figures: reads saved by incremental sync, concept scan time at 100k, memory.

Run: uv run python benchmarks/bench_sync_operators.py [--actions 100000] [--every 16]
     [--until 991] [--keyword "SOS Brigade"] [--character Kyon]

Prints, not asserts, with a deterministic scripted model (no sleeps, no network):
1. the incremental schedule on the shared haruhi storyline (synthetic text when ../shared is
   absent): one bookmark of each type synced every ``--every`` actions up to ``--until``, the
   actions its operator read against what a from-scratch sync would read at each step
   (:func:`actions_from_scratch`), with LLM calls (from-scratch calls estimated); an
   ``--until`` beyond the storyline runs the schedule on haruhi repeated to that length;
2. the concept operator over a ``--actions``-action storyline (haruhi repeated, chapters
   renumbered): the index build time, then one ``sync_concept`` from 0 to the end;
3. peak RSS of the process.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from personae.graphs.bookmarks.sync import SyncSettings, actions_from_scratch, sync_bookmark
from personae.llm import LLMUsage
from personae.memory.bookmarks.bookmark import Bookmark, BookmarkType
from personae.memory.bookmarks.storyline import StoryAction, Storyline, load_storyline
from personae.testing import ScriptedChatModel, prompt_text
from personae.tools.bookmarks.storyline_index import StorylineIndex

HARUHI = (
    Path(__file__).resolve().parents[1].parent
    / "shared/data/bookmarks/title2action_series.haruhi.json"
)
QUESTIONS = {
    BookmarkType.STATE: "Where is {c} right now and who is with them?",
    BookmarkType.BEHAVIORAL: "How does {c} react when Haruhi drags everyone into a plan?",
    BookmarkType.CONCEPT: "What is the {k}?",
}


def scripted_model() -> ScriptedChatModel:
    """Answers every sync schema; evidence: every third marked action supports the pattern."""

    def verdicts(messages: list[BaseMessage]) -> dict[str, Any]:
        text = prompt_text(messages)
        ids = re.findall(r"^(A\d+):", text, re.MULTILINE)
        marked = [int(p) for p in re.findall(r"^>>> \[(\d+)\]", text, re.MULTILINE)]
        return {
            "verdicts": [
                {"id": i, "supports": p % 3 == 0} for i, p in zip(ids, marked, strict=True)
            ]
        }

    return ScriptedChatModel(
        responders={
            "StateUpdate": lambda m: {"operation": "update", "answer": "The situation now."},
            "EvidenceVerdicts": verdicts,
            "BehaviorSummary": lambda m: {"answer": "The pattern so far."},
            "ConceptAnswer": lambda m: {"answer": "What the story says about it."},
        }
    )


def synthetic_haruhi(size: int) -> Storyline:
    """Text that looks like a storyline when the shared data is absent."""
    names = ["Kyon", "Haruhi", "Nagato", "Koizumi", "Asahina"]
    places = ["club room", "station", "SOS Brigade meeting", "classroom", "hill", "cafe"]
    actions = tuple(
        StoryAction(
            i,
            f"chapter {i // 40}",
            f"{names[i % 5]} talks about the {places[(i * 7) % 6]} ({i}).",
            (names[i % 5],),
        )
        for i in range(size)
    )
    return Storyline("synthetic", actions, tuple(dict.fromkeys(a.chapter for a in actions)))


def base_storyline() -> Storyline:
    return load_storyline(HARUHI) if HARUHI.is_file() else synthetic_haruhi(991)


def repeated(storyline: Storyline, size: int) -> Storyline:
    """``storyline`` repeated to ``size`` actions, chapters renumbered per repetition."""
    base = storyline.actions
    actions = tuple(
        StoryAction(
            i, f"{base[i % len(base)].chapter} #{i // len(base)}", base[i % len(base)].text,
            base[i % len(base)].characters,
        )
        for i in range(size)
    )  # fmt: skip
    return Storyline(
        f"{storyline.name}x{size}", actions, tuple(dict.fromkeys(a.chapter for a in actions))
    )


def new_bookmark(kind: BookmarkType, character: str, keyword: str) -> Bookmark:
    question = QUESTIONS[kind].format(c=character, k=keyword)
    return Bookmark(
        id=f"bm-{kind.value}",
        question=question,
        type=kind,
        character=character,
        keyword=keyword if kind is BookmarkType.CONCEPT else None,
    )


def scratch_calls(
    mark: Bookmark, target: int, storyline: Storyline, index: StorylineIndex, settings: SyncSettings
) -> int:
    """LLM calls a from-scratch sync would make (estimate: a summary whenever there is input)."""
    if mark.type is BookmarkType.STATE:
        chunks: int = -(-target // settings.state_chunk)
        return chunks
    if mark.type is BookmarkType.BEHAVIORAL:
        checked = sum(1 for p in storyline.positions_of(mark.character) if p < target)
        batches: int = -(-checked // settings.behavior_batch)
        return batches + (1 if checked else 0)
    return 1 if index.positions(mark.keyword or "", 0, target) else 0


async def schedule(storyline: Storyline, index: StorylineIndex, args: argparse.Namespace) -> None:
    until = min(args.until, len(storyline))
    settings = SyncSettings(prompts="personae")  # the figures in the README are ours
    print(
        f"\n== Incremental schedule on {storyline.name} ({len(storyline)} actions): "
        f"sync every {args.every} actions up to {until} =="
    )
    print(f"{'type':<11} {'steps':>5} {'read':>8} {'from scratch':>13} {'share':>7} "
          f"{'saved':>7} {'LLM calls':>9} {'scratch calls':>13} {'future reads':>12} {'time':>8}")  # fmt: skip
    for kind in BookmarkType:
        model = scripted_model()
        mark = new_bookmark(kind, args.character, args.keyword)
        read = scratch = steps = future = calls_scratch = 0
        usage = LLMUsage()
        started = time.perf_counter()
        for target in range(args.every, until + 1, args.every):
            result = await sync_bookmark(
                mark, target, storyline=storyline, index=index, fast_model=model, model=model,
                settings=settings,
            )  # fmt: skip
            scratch += actions_from_scratch(
                mark, target, storyline=storyline, index=index, settings=settings
            )
            calls_scratch += scratch_calls(mark, target, storyline, index, settings)
            mark, read, usage, steps = result.bookmark, read + result.actions_read, usage + result.usage, steps + 1  # fmt: skip
            future += sum(
                1
                for _, messages in model.calls
                for p in re.findall(r"\[(\d+)\]", prompt_text(messages))
                if int(p) >= target
            )
            model.calls.clear()
        elapsed = time.perf_counter() - started
        share = read / scratch if scratch else 0.0
        print(
            f"{kind.value:<11} {steps:>5} {read:>8,} {scratch:>13,} {share:>7.1%} "
            f"{1 - share:>7.1%} {usage.calls:>9,} {calls_scratch:>13,} {future:>12} {elapsed:>7.2f}s"
        )


async def concept_scan(base: Storyline, args: argparse.Namespace) -> None:
    started = time.perf_counter()
    storyline = repeated(base, args.actions)
    built = time.perf_counter()
    index = StorylineIndex(storyline)
    indexed = time.perf_counter()
    print(
        f"\n== Concept operator over {len(storyline):,} actions ({storyline.name}) ==\n"
        f"storyline built in {built - started:.2f}s; index build {indexed - built:.2f}s"
    )
    model = scripted_model()
    mark = new_bookmark(BookmarkType.CONCEPT, args.character, args.keyword)
    hits = len(index.positions(args.keyword, 0, len(storyline)))
    timings = []
    results = []
    for _ in range(3):
        model.calls.clear()
        start = time.perf_counter()
        results.append(
            await sync_bookmark(
                mark,
                len(storyline),
                storyline=storyline,
                index=index,
                fast_model=model,
                model=model,
            )
        )
        timings.append(time.perf_counter() - start)
    result = results[-1]
    print(
        f"sync_concept 0 -> {len(storyline):,} for {args.keyword!r}: {hits:,} hits, "
        f"best of 3 {min(timings) * 1000:.1f} ms (incl. one scripted summary call), "
        f"{result.actions_read} actions read, {result.usage.calls} LLM call"
    )
    tail = len(storyline) - args.every
    start = time.perf_counter()
    last = await sync_bookmark(
        mark.model_copy(update={"position": tail}), len(storyline), storyline=storyline,
        index=index, fast_model=model, model=model,
    )  # fmt: skip
    print(
        f"incremental step {tail:,} -> {len(storyline):,}: "
        f"{(time.perf_counter() - start) * 1000:.1f} ms, {last.actions_read} actions read"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--actions", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=16)
    parser.add_argument("--until", type=int, default=991)
    parser.add_argument("--keyword", default="SOS Brigade")
    parser.add_argument("--character", default="Kyon")
    args = parser.parse_args()
    base = base_storyline()
    print(f"python {sys.version.split()[0]}; storyline {base.name} ({len(base)} actions)")
    scheduled = base if args.until <= len(base) else repeated(base, args.until)
    await schedule(scheduled, StorylineIndex(scheduled), args)
    await concept_scan(base, args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    asyncio.run(main())
