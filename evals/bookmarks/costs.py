"""What ``personae bench bookmarks`` will cost, printed before its first instance runs.

Per pending instance and method, from the instances the run will take: one judge call per
prediction, and the method's own calls. The baselines cost about the same at every instance
(one actor call for vanilla and RICL; ETA's recurrent profile updates). BOOKMARKS pays most at
each character's first instance, whose new bookmarks are synced from the start of the story up
to the target: that catch-up grows with the target's position; later steps sync only what
happened since. The per-action and per-step figures below are those of the scripted bench world
(``benchmarks/bench_estimates.py`` prints the estimate beside the usage of such a run), for our
prompts (``bookmarks-personae``); the paper's method costs :data:`RELEASED_CATCHUP` and
:data:`RELEASED_STEP` times as much. Prompts dominate, and a real model's longer answers add to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from personae.agents.costs import Estimate

if TYPE_CHECKING:
    from personae.evals.bookmarks.instances import BenchInstance

PER_INSTANCE = {"vanilla": (1.0, 310), "ricl": (1.0, 1950), "eta": (7.4, 4450)}
"""Calls and tokens a baseline spends per instance."""
CATCHUP_CALLS_PER_ACTION = 0.19
CATCHUP_TOKENS_PER_ACTION = 112
"""What BOOKMARKS spends at a character's first instance, per action before its target."""
STEP_CALLS = 5.6
STEP_TOKENS = 4050
"""What a later BOOKMARKS step spends (a proposal, matching, a short sync, the actor)."""
RELEASED_CATCHUP = (1.08, 1.07)
RELEASED_STEP = (1.86, 1.51)
"""Calls and tokens of the paper's method (the released prompts: a state check then an update,
one matcher call per candidate, a keyword call per concept bookmark) over ours, at a character's
first instance and at a later step, fitted to the scripted bench of haruhi + Poppin'Party at 3
and 8 instances per character (``benchmarks/bench_estimates.py --only bench``): the checks of a
catch-up cost about the same, a later step's matching about twice as many calls."""
JUDGE_TOKENS = 425
"""One judge call: the scene, the truth, the prediction and the rubric."""


def estimate_bench(work: Sequence[tuple[str, Sequence[BenchInstance]]]) -> Estimate:
    """Calls and tokens of running each ``(method label, pending instances of one artifact)``.

    Labels such as ``bookmarks+no-derive`` cost as their method; judge calls are included.
    """
    calls = tokens = 0.0
    total = 0
    for label, pending in work:
        method = label.split("+", 1)[0]
        total += len(pending)
        calls += len(pending)  # the judge
        tokens += len(pending) * JUDGE_TOKENS
        if method in ("bookmarks", "bookmarks-personae"):
            first: dict[str, int] = {}
            for instance in pending:
                first.setdefault(instance.character, instance.position)
            later = len(pending) - len(first)
            paper = method == "bookmarks"
            catch_calls, catch_tokens = RELEASED_CATCHUP if paper else (1.0, 1.0)
            step_calls, step_tokens = RELEASED_STEP if paper else (1.0, 1.0)
            behind = sum(first.values())
            calls += catch_calls * CATCHUP_CALLS_PER_ACTION * behind
            calls += step_calls * STEP_CALLS * later
            tokens += catch_tokens * CATCHUP_TOKENS_PER_ACTION * behind
            tokens += step_tokens * STEP_TOKENS * later
        else:
            per_calls, per_tokens = PER_INSTANCE.get(method, (1.0, 310))
            calls += per_calls * len(pending)
            tokens += per_tokens * len(pending)
    detail = f"{total:,} instance runs, one judge call each"
    return Estimate(round(calls), round(tokens), detail)
