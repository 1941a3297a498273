"""What a rerun redoes after a kill -9 in the middle of a `personae bookmarks act` step.

Run: uv run python benchmarks/bench_act_kill.py [--at 40,120] [--evidence 5]

For each target position: a cold `bookmarks act` run (never killed) on a fresh memory; then a run killed
with SIGKILL in its sync fan-out (the state sync finished, ``--evidence`` evidence checks of the
behavioral sync answered and the rest in flight, the concept sync in flight); then the rerun
that resumes it from the step's checkpoint and answer journal; and, for comparison, a rerun
with ``--fresh`` after the same kill (no checkpoint or journal: what a rerun paid before step
checkpoints, when only the bank kept the syncs that had finished).

Prints LLM calls (each one a paid request to the loopback model server, the real OpenAI client
and CLI in child processes): made before the kill, made by the resuming rerun, made by the
fresh rerun, and made by the cold run. Resume + before == cold means no call was paid twice;
the resuming rerun's calls are the ones in flight at the kill plus those not yet started.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

# The loopback model world is a test fixture (tests/), not part of the shipped package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bookmarks_world import write_storyline  # noqa: E402
from kill_world import HeldChat, finish, hold_after, kill_when_held, start_cli  # noqa: E402

from personae.loopback import LoopbackWebServer  # noqa: E402


def act_argv(story: Path, position: int, memory: Path, *extra: str) -> list[str]:
    return ["bookmarks", "act", "--method", "bookmarks-personae", str(story), "--character", "Haruhi", "--at", str(position), "--json",
            "--memory", str(memory), *extra]  # fmt: skip


def measure(server: LoopbackWebServer, story: Path, root: Path, at: int, evidence: int) -> dict:
    """Calls of the cold run, the killed run, the resuming rerun and a fresh rerun at ``at``."""
    server.route = cold = HeldChat()
    cold_out, _ = finish(start_cli(act_argv(story, at, root / "cold"), server.url))
    figures: dict = {"cold": len(cold.answered)}
    for mode in ("resume", "fresh"):
        memory = root / mode
        server.route = killed = HeldChat(hold_after(evidence))
        child = start_cli(act_argv(story, at, memory), server.url)
        try:
            kill_when_held(child, killed, memory, answered=1, held=1, quiet=1.5)
        finally:
            killed.release()
        extra = ("--fresh",) if mode == "fresh" else ()
        server.route = rerun = HeldChat()
        out, _ = finish(start_cli(act_argv(story, at, memory, *extra), server.url))
        figures[mode] = len(rerun.answered)
        figures["before_kill"] = len(killed.answered)
        figures["in_flight"] = len(killed.in_flight)
        if mode == "resume":
            same = json.loads(out)["action"] == json.loads(cold_out)["action"]
            figures["same_action"] = same
            figures["paid_twice"] = len(set(killed.answered) & set(rerun.answered))
    return figures


def main() -> None:
    """Measure each requested position; print one row each."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--at", default="40,120", help="target positions (comma-separated)")
    parser.add_argument("--evidence", type=int, default=5, help="evidence checks answered")
    args = parser.parse_args()
    header = (
        f"{'target':>6} {'cold':>5} {'before kill':>11} {'in flight':>9} "
        f"{'rerun (resume)':>14} {'paid twice':>10} {'rerun --fresh':>13} {'same action':>11}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp, LoopbackWebServer(HeldChat()) as server:
        story = write_storyline(Path(tmp) / "club.jsonl")
        for at in (int(part) for part in args.at.split(",")):
            f = measure(server, story, Path(tmp) / str(at), at, args.evidence)
            print(
                f"{at:>6} {f['cold']:>5} {f['before_kill']:>11} {f['in_flight']:>9} "
                f"{f['resume']:>14} {f['paid_twice']:>10} {f['fresh']:>13} "
                f"{'yes' if f['same_action'] else 'no':>11}",
                flush=True,
            )


if __name__ == "__main__":
    main()
