"""The main jobs under a model that follows the schema but is otherwise random.

Run: uv run python benchmarks/bench_any_model.py [--seeds 3] [--malformed 0.2] [--job NAME ...]

Prints, per command, how many runs completed (exit 0), the items they degraded (their
``degraded:`` line: a claim kept unchecked, a verdict batch split, a bench instance recorded as
failed...) and how many runs failed, with the first failure's message. The model is
:class:`personae.testing.ScriptedChatModel` in random mode: schema-valid answers with random
content (random enum members, ids the schema allows but the prompt never showed, empty lists
where allowed, minimum-length strings), one seed per run. The inputs are the test fixtures
(``tests/any_model_world.py``): a loopback wiki and Tavily, a small storyline, a persona, the
synthetic six-chapter novel with a fixture arc and probe. ``--malformed 0.2`` makes a fifth of
the structured answers ignore the schema (plain text), as a model without constrained decoding
sometimes does: then items degrade instead of runs failing.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

# The job world is a test fixture (tests/), not part of the shipped package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from any_model_world import JOBS, Outcome, run_job  # noqa: E402

from personae.testing import block_remote_network  # noqa: E402


def _row(name: str, outcomes: list[Outcome], seconds: float) -> str:
    completed = sum(o.exit_code == 0 for o in outcomes)
    failed = [o for o in outcomes if o.exit_code != 0]
    degraded = sum(o.degraded for o in outcomes)
    first = failed[0].err.strip().splitlines()[-1][:110] if failed else ""
    return (
        f"| {name} | {completed}/{len(outcomes)} | {degraded} | {len(failed)} | "
        f"{seconds:.1f} | {first} |"
    )


def main() -> None:
    """Run every job (or the ones named) once per seed and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="runs per job (seeds 0..N-1)")
    parser.add_argument("--job", action="append", help="only this job (repeatable)")
    parser.add_argument(
        "--malformed", type=float, default=0.0, help="share of answers ignoring the schema"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    jobs = [j for j in JOBS if not args.job or j.name in args.job]
    print("| command | completed | degraded items | failed | s | first failure |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as root, block_remote_network():
        os.environ.update(
            PERSONAE_CACHE_DIR=str(Path(root) / "cache"),
            PERSONAE_LLM_RETRY_SECONDS="0",
            ANONYMIZED_TELEMETRY="False",
            LANGSMITH_TRACING="false",
        )
        for job in jobs:
            started = time.perf_counter()
            outcomes = []
            for seed in range(args.seeds):
                folder = Path(root) / f"{job.name.replace(' ', '_')}-{seed}"
                folder.mkdir()
                os.environ["PERSONAE_CACHE_DIR"] = str(folder / "cache")
                outcomes.append(run_job(job, folder, seed, args.malformed))
            print(_row(job.name, outcomes, time.perf_counter() - started), flush=True)


if __name__ == "__main__":
    main()
