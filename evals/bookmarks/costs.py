"""What a BOOKMARKS step, and so ``personae bookmarks act`` and ``personae bookmarks bench``, will cost.

A step's calls are known from the storyline before any is made, once the bank says where the
character's bookmarks were last synced (:func:`estimate_step`): the proposal and the actor, one
call each; then each of the three proposed bookmarks (behavioral, state, and concept once
another character has acted) synced from there to the target by its operator
(``graphs/bookmarks/sync.py``): the behavioral check reads each of the character's own actions
in the unseen span (one call each, the released code's classifier) and one summary; the state
operator one call per ``state_chunk`` actions (the released prompts: a check, then an update);
the concept one its keyword windows' summary (the released prompts extract the keyword once,
one more call). The released matcher asks once per candidate when the bank has bookmarks; ours
reuses a question asked again verbatim without a call. On a fresh bank the behavioral check
is what grows with the target: `bookmarks act` at position 903 of a four-character story reads ~200 of
the character's actions, one call each.

Baselines cost about the same at every instance (:data:`PER_INSTANCE`), and the benchmark adds
one judge call per prediction. ``benchmarks/bench_estimates.py`` prints each estimate beside the
calls of a scripted run (goal 0.85-1.15).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from personae.agents.costs import Estimate

if TYPE_CHECKING:
    from personae.evals.bookmarks.instances import BenchInstance
    from personae.memory.bookmarks.storyline import Storyline

PER_INSTANCE = {"vanilla": (1.0, 310), "ricl": (1.0, 1950), "eta": (7.4, 4450)}
"""Calls and tokens a baseline spends per instance."""
STATE_CHUNK = 64
"""Actions per state-operator call (``SyncSettings.state_chunk``'s default)."""
TOKENS_PER_CALL = 600
"""A step's calls, prompt and answer, on average: the behavioral checks (a 10-action scene)
dominate their number; the proposal and the actor are longer."""
JUDGE_TOKENS = 425
"""One judge call: the scene, the truth, the prediction and the rubric."""
SPECIAL = frozenset({"Other"})


def estimate_step(
    storyline: Storyline,
    character: str,
    target: int,
    synced_to: int | None,
    *,
    released: bool = True,
    incremental_behavior: bool = False,
) -> Estimate:
    """Calls and tokens of one step of ``character`` at ``target``.

    ``synced_to`` is where the bank last synced the character's bookmarks (``None``: none yet,
    every bookmark starts at 0).
    """
    start = min(synced_to or 0, target)
    fresh = synced_to is None
    own = storyline.positions_of(character)
    own_unseen = bisect_left(own, target) - bisect_left(own, start)
    others = any(
        bisect_left(storyline.positions_of(name), target) > 0
        for name in storyline.characters
        if name != character and name not in SPECIAL
    )
    chunks = math.ceil((target - start) / STATE_CHUNK)
    per_chunk = 2 if released else 1
    calls = 2  # the proposal and the actor
    calls += chunks * per_chunk  # state
    if incremental_behavior:  # the IBU ablation: behavioral synced like state
        calls += chunks * per_chunk
    else:
        calls += own_unseen + (1 if own_unseen else 0)  # checks, then one summary
    if others:
        calls += (1 if target > start else 0) + (1 if released and fresh else 0)  # concept
    if released and not fresh:
        calls += 2 + others  # one matcher call per proposed question (its own bookmark first)
    return Estimate(calls, calls * TOKENS_PER_CALL, f"a step at {target}")


def _method_flags(label: str) -> tuple[str, bool, bool]:
    """The method of a bench label, whether it runs the released prompts, and IBU."""
    method, *ablations = label.split("+")
    return method, method == "bookmarks", "ibu" in ablations


def estimate_bench(
    work: Sequence[tuple[str, Sequence[BenchInstance]]],
    storylines: Mapping[str, Storyline] | None = None,
) -> Estimate:
    """Calls and tokens of running each ``(method label, pending instances of one artifact)``.

    A BOOKMARKS label's steps are estimated on their storyline (``storylines`` by artifact
    name), each character's first from a fresh bank, the next from the previous target.
    Labels such as ``bookmarks+no-derive`` cost as their method; judge calls are included.
    """
    calls = tokens = 0.0
    total = 0
    for label, pending in work:
        method, released, ibu = _method_flags(label)
        total += len(pending)
        calls += len(pending)  # the judge
        tokens += len(pending) * JUDGE_TOKENS
        if method not in ("bookmarks", "bookmarks-personae"):
            per_calls, per_tokens = PER_INSTANCE.get(method, (1.0, 310))
            calls += per_calls * len(pending)
            tokens += per_tokens * len(pending)
            continue
        last: dict[str, int] = {}
        for instance in sorted(pending, key=lambda i: i.position):
            storyline = (storylines or {}).get(instance.artifact)
            if storyline is None:
                continue
            step = estimate_step(
                storyline,
                instance.character,
                instance.position,
                last.get(instance.character),
                released=released,
                incremental_behavior=ibu,
            )
            calls += step.calls
            tokens += step.tokens
            last[instance.character] = instance.position
    detail = f"{total:,} instance runs, one judge call each"
    return Estimate(round(calls), round(tokens), detail)
