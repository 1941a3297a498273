"""The benchmark's schedule: instances, reading saved, and wall time at concurrency 1 vs 4.

Run: uv run python benchmarks/bench_bookmarks_schedule.py [--limit N] [--latency 0.005]
     [--artifacts haruhi "Poppin'Party"]   (default: the whole artifacts; --limit N takes each
     character's first N instances in the global order, for a quick look)

Runs the real ``bookmarks bench`` runner (``run_bench_config``: real BOOKMARKS graph, real Chroma bank
in a temporary folder) with the deterministic scripted model of ``bench_bookmarks_sync.py`` on
two artifacts of ../shared/data/bookmarks, twice: ``--concurrency 1`` and ``--concurrency 4``.
One artifact is one shared bank whose targets (every major character's) run in one global story
order; only artifacts run in parallel. Prints, not asserts:

- instances per artifact as the released runner counts them (every major character of a
  multi-speaker line) beside the per-character count, and how many this run takes (``--limit``
  per character, in global order);
- sync reads vs from-scratch reads and the hit rate of the run;
- wall time of the whole run at concurrency 1 and 4 (the scripted model sleeps ``--latency``
  seconds per call, standing in for a remote LLM), and whether the two results.jsonl files hold
  the same records (they must: results do not depend on concurrency).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bookmarks_sync import SHARED, scripted_model  # noqa: E402

from personae.evals.bookmarks.bench import BenchConfig, result_key, run_bench_config  # noqa: E402
from personae.evals.bookmarks.instances import build_instances, instances_for  # noqa: E402
from personae.graphs.bookmarks.resources import forget_resources  # noqa: E402
from personae.memory.bookmarks.storyline import open_storyline  # noqa: E402
from personae.testing import override_models  # noqa: E402

METHOD = "bookmarks-personae"
"""The method measured (ours: the figures in the README; ``bookmarks`` for the paper's)."""


def counts(path: Path) -> tuple[int, int]:
    """(released-runner instances, per-character-half instances) of a storyline."""
    storyline = open_storyline(path)
    schedule = sum(len(v) for v in build_instances([storyline]).values())
    halves = sum(len(instances_for(storyline, c)) for c in storyline.major_characters)
    return schedule, halves


async def one_run(paths: list[Path], limit: int | None, concurrency: int, latency: float) -> Any:
    """Run the bench once; (records sorted by key, wall seconds, summary)."""
    model = scripted_model()
    model.latency = latency
    forget_resources()
    with override_models(model), tempfile.TemporaryDirectory() as out:
        config = BenchConfig(
            storylines=tuple(str(p) for p in paths),
            methods=(METHOD,),
            out_dir=Path(out),
            model="openai:scripted",
            fast_model="openai:scripted",
            judge_model="openai:scripted",
            limit=limit,
            concurrency=concurrency,
        )
        start = time.perf_counter()
        outcome = await run_bench_config(config)
        wall = time.perf_counter() - start
        lines = (Path(out) / "results.jsonl").read_text().splitlines()
    records = sorted((json.loads(line) for line in lines), key=result_key)
    for record in records:
        record.pop("judge_usage")  # which of two identical judge prompts paid is order-dependent
    return records, wall, outcome.summary


async def run(args: argparse.Namespace) -> None:
    paths = [SHARED / f"title2action_series.{name}.json" for name in args.artifacts]
    for path in paths:
        schedule, halves = counts(path)
        print(
            f"{open_storyline(path).name}: {schedule} instances as the released runner "
            f"schedules them ({halves} from the characters' own halves)"
        )
    one, wall_one, summary = await one_run(paths, args.limit, 1, args.latency)
    four, wall_four, _ = await one_run(paths, args.limit, 4, args.latency)
    method = summary["methods"][METHOD]
    read, scratch = method["actions_read"], method["actions_from_scratch"]
    taken = f"--limit {args.limit} per character" if args.limit else "whole artifacts"
    print(f"this run: {len(one)} instances ({taken}), one global order per artifact")
    for artifact, figures in summary["artifacts"].items():
        mine = figures[METHOD]
        print(
            f"  {artifact}: {mine['n']} instances, read {mine['actions_read']:,} vs "
            f"{mine['actions_from_scratch']:,} from scratch (saves {mine['saved']:.1%}), hit "
            f"rate {mine['hit_rate']:.1%}"
        )
    print(
        f"sync: read {read:,} actions vs {scratch:,} from scratch = {read / scratch:.1%} "
        f"(saves {1 - read / scratch:.1%}); hit rate {method['hit_rate']:.1%}"
    )
    print(
        f"wall time, both artifacts (scripted model, {args.latency * 1000:.0f} ms per call): "
        f"concurrency 1 {wall_one:.1f} s, concurrency 4 {wall_four:.1f} s "
        f"({wall_one / wall_four:.2f}x)"
    )
    print(f"results.jsonl identical at concurrency 1 and 4: {one == four}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--artifacts", nargs=2, default=["haruhi", "Poppin'Party"])
    parser.add_argument("--limit", type=int, default=None, help="instances per character")
    parser.add_argument("--latency", type=float, default=0.005, help="seconds per model call")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"{SHARED} is absent (../shared only exists on developer machines); skipped")
        return
    print("$ " + " ".join(["python", *sys.argv]))
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
