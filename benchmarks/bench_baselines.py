"""What the three baselines cost without LLM latency, and RICL retrieval at storyline scale.

Run: uv run python benchmarks/bench_baselines.py [--size 100000]

1. Story-order runs of the vanilla, RICL and ETA graphs over every major character's test
   instances of ../shared/data/bookmarks/title2action_series.haruhi.json, with a scripted model
   (so the figures are the framework's own overhead: Chroma, storyline slicing, profile store),
   LLM calls per instance and, for ETA, the actions its recurrent profile updates read as a
   share of profiling from scratch at every instance. Skipped when ../shared is absent.
2. RICL's scene->action pair index over a generated storyline of ``--size`` actions: build time
   and query latency (p50 / max) for the 8 most similar past pairs, asserting that no retrieved
   pair sits at or after its target.
Prints figures; asserts only correctness (the no-future invariant).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from personae.evals.bookmarks.instances import build_instances
from personae.graphs.bookmarks import baseline_eta, baseline_ricl, baseline_vanilla
from personae.graphs.bookmarks.baseline_eta import ETAContext
from personae.graphs.bookmarks.baseline_ricl import RICLContext
from personae.graphs.bookmarks.baseline_vanilla import VanillaContext
from personae.memory.bookmarks.scene_pairs import ScenePairStore
from personae.memory.bookmarks.storyline import load_storyline
from personae.testing import ScriptedChatModel, override_models

HARUHI = (
    Path(__file__).resolve().parents[1].parent
    / "shared/data/bookmarks/title2action_series.haruhi.json"
)
IGNORED_STATS = (
    "llm_calls",
    "input_tokens",
    "output_tokens",
    "rebuild_point",
    "profile_from",
)


def scripted_model() -> ScriptedChatModel:
    """Fixed answers for every structured call the baselines make."""
    return ScriptedChatModel(
        responders={
            "NextAction": lambda m: {"action": "X does something."},
            "ChunkProfile": lambda m: {"profile": "X is profiled from this chunk."},
            "UpdatedProfile": lambda m: {"profile": "X is summarised."},
        }
    )


async def story_order(method: str, graph: Any, context_type: Any, memory: str) -> None:
    """Every test instance in one global story order, one memory shared by all of them."""
    override_models(scripted_model())
    story = load_storyline(HARUHI)
    context = context_type(
        storyline_path=str(HARUHI),
        model="openai:scripted",
        fast_model="openai:scripted",
        memory_dir=memory,
    )
    totals: dict[str, int] = {}
    count = 0
    start = time.perf_counter()
    for instance in build_instances([story])[story.name]:  # the bench's global story order
        out = await graph.ainvoke(
            {"character": instance.character, "position": instance.position}, context=context
        )
        count += 1
        for key, value in out["stats"].items():
            totals[key] = totals.get(key, 0) + value
    wall = time.perf_counter() - start
    print(
        f"{method}: {count} instances, {wall / count * 1000:.1f} ms/instance overhead "
        f"(no LLM latency), LLM calls {totals['llm_calls']} ({totals['llm_calls'] / count:.2f}/instance)"
    )
    extra = {k: v for k, v in totals.items() if k not in IGNORED_STATS}
    if extra:
        print("   ", extra)
    if totals.get("actions_from_scratch"):
        share = 100 * totals["actions_read"] / totals["actions_from_scratch"]
        print(
            f"    ETA actions read {totals['actions_read']} vs from scratch "
            f"{totals['actions_from_scratch']} = {share:.1f}%"
        )


def ricl_scale(size: int) -> None:
    """Index a generated storyline's pairs for one character and time the retrieval."""
    tmp = Path(tempfile.mkdtemp())
    topics = ["rain", "cake", "cards", "boat", "road", "moon"]
    rows = [
        {
            "character": "Alice" if i % 5 == 0 else "Other",
            "action": f"step {i} of the {topics[i // 37 % 6]} story",
        }
        for i in range(size)
    ]
    (tmp / "big.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    story = load_storyline(tmp / "big.jsonl")
    store = ScenePairStore.open(story, "Alice", tmp / "memory")
    start = time.perf_counter()
    added = store.extend(size)
    built = time.perf_counter() - start
    rate = f"{built / added * 1e3:.2f} ms/pair" if added else "no pair: storyline too short"
    print(f"RICL index: {added} pairs of a {size}-action storyline in {built:.1f} s ({rate})")
    late = range(max(1, size - 2000), size, 20)
    early = range(max(1, min(1000, size // 4)), max(2, min(3000, size // 2)), 20)
    for label, targets in (("late targets", late), ("early targets (selective filter)", early)):
        times = []
        for target in targets:
            begin = time.perf_counter()
            pairs = store.similar(story.scene(target), target, 8)
            times.append(time.perf_counter() - begin)
            assert all(p.position < target for p in pairs), "a pair from the future"
            # every target gets its k pairs, or all there are before it on a short storyline
            assert len(pairs) == min(8, store.eligible(target)), "pairs missing"
        print(
            f"RICL query, {label}: p50 {statistics.median(times) * 1e3:.1f} ms, "
            f"max {max(times) * 1e3:.1f} ms"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="actions in the RICL storyline")
    args = parser.parse_args()
    if args.size < 2:
        parser.error(f"--size {args.size} leaves no target: use 2 or more actions")
    if HARUHI.is_file():
        with tempfile.TemporaryDirectory() as tmp:
            for method, graph, context_type in (
                ("vanilla", baseline_vanilla.graph, VanillaContext),
                ("ricl", baseline_ricl.graph, RICLContext),
                ("eta", baseline_eta.graph, ETAContext),
            ):
                await story_order(method, graph, context_type, f"{tmp}/{method}")
    else:
        print(f"{HARUHI} is absent: story-order runs skipped")
    ricl_scale(args.size)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    asyncio.run(main())
