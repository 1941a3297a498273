"""ARCANE training data (App. D): SFT chat rows and DPO preference pairs from probes.

Why here: the rows are built from the same role-play prompts the benchmark sends (T31 with a
mode's context, truncated at the query chapter and audited for later chapters), so a model
trained on them sees exactly the evaluation's input format. Only arcs of the chosen split
(``train`` by default; spec default 39) are exported: training on evaluation novels would leak.

- **SFT** (App. D.1): "for each (probe, phase, mode) triplet, we sample three completions from
  each of two models ... with T = 0.9 and a 800-token cap", Arc and Summary modes only. Every
  available phase of a probe gets its prompt at its own query chapter; each teacher is sampled
  ``samples`` times (its answers are cached per sample index, so a rerun pays nothing twice).
  Row: ``{"messages": [system, user, assistant], "metadata": {...}}`` (chat format).
- **DPO** (App. D.1): "For each probe, we designate the anchor phase response as chosen and a
  response from an adjacent phase as rejected, with both sides sharing the same scenario and
  question." The prompt is the anchor phase's role-play prompt (its query chapter, the mode's
  context); chosen = the anchor phase's reference response, rejected = each available adjacent
  phase's (k-1, k+1). ``pairs="every-phase"`` treats every available phase as the anchor of its
  own prompt: the paper's 14,671 pairs over 2,516 probes (5.8 per probe) fit that reading
  better than the anchor-only one (at most 2 per probe and mode). Row: ``{"prompt": [system,
  user], "chosen": [assistant], "rejected": [assistant], "metadata": {...}}`` (the
  conversational preference format of TRL).
- A reference response (``gt_action``, ``gt_speech``, ``gt_thought``) is rendered as text by
  ``reference_text`` (our format; the paper does not print its own): ``Thought: ...``,
  ``Action: ...`` and, when there is speech, ``Speech: "..."``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage

from personae.agents.arcane.roleplayer import render_system, render_user
from personae.errors import InputError
from personae.fanout import gather_all
from personae.graphs.arcane.roleplay import (
    FutureLeakError,
    NovelResources,
    RoleplayContext,
    build_block,
    load_resources,
    resolve_task,
)
from personae.llm import call_text, with_sampling
from personae.memory.arcane.records import PhaseResponse, ProbeRecord
from personae.memory.embeddings import TextEmbedding
from personae.settings import Settings

EXPORT_MODES = ("vanilla", "summary", "rag", "lifechoice", "arc")
"""Modes whose prompt needs no model call (TimeChara's hint comes from its experts)."""
SFT_MODES = ("arc", "summary")
"""App. D.1: SFT covers "only the two trajectory-aware context modes, Arc and Summary"."""
SFT_TEMPERATURE = 0.9
SFT_MAX_TOKENS = 800
Format = Literal["sft", "dpo"]
Pairs = Literal["anchor", "every-phase"]


def reference_text(phase: PhaseResponse) -> str:
    """A reference response as one assistant message (our rendering; see the module doc)."""
    lines = [f"Thought: {phase.gt_thought}", f"Action: {phase.gt_action}"]
    if phase.gt_speech:
        lines.append(f'Speech: "{phase.gt_speech}"')
    return "\n".join(lines)


@dataclass
class Prompt:
    """A rendered T31 prompt for one (probe, phase, mode)."""

    system: str
    user: str
    query_chapter: int

    def messages(self) -> list[dict[str, str]]:
        """Chat-format messages."""
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]


def render_prompt(
    res: NovelResources, probe: ProbeRecord, phase_idx: int, mode: str, context: RoleplayContext
) -> Prompt:
    """The prompt the benchmark sends for (probe, phase, mode), audited (blocking)."""
    request: Any = {"novel": res.novel.slug, "mode": mode}
    request |= {"probe_id": probe.probe_id, "phase_idx": phase_idx}
    task = resolve_task(res, request, context.arc_scope)
    block, chapters = build_block(res, task, mode, context)
    qc = task["query_chapter"]
    late = sorted({c for c in chapters if c > qc})
    if late:
        raise FutureLeakError(f"context holds chapters {late} after query chapter {qc}")
    system = render_system(
        character=task["character"],
        novel=task["title"],
        query_chapter=qc,
        target=task["target"],
        context=block,
    )
    user = render_user(scenario=task["scenario"], question=task["question"], hint=None)
    return Prompt(system, user, qc)


@dataclass
class Export:
    """The rows and what was left out."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    probes: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    llm_calls: int = 0
    cache_hits: int = 0
    """Completions the answer cache gave (a rerun of the same export is free)."""

    def skip(self, reason: str) -> None:
        """Count a left-out item by reason."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _metadata(probe: ProbeRecord, **extra: Any) -> dict[str, Any]:
    return {
        "novel": probe.novel,
        "character": probe.character,
        "axis_id": probe.axis_id,
        "probe_id": probe.probe_id,
        "probe_type": probe.probe_type,
        **extra,
    }


def split_probes(res: NovelResources, split: str) -> list[ProbeRecord]:
    """The novel's probes whose arc is in ``split`` ("any": all), sorted by id."""
    splits = {(a.character, a.axis_id): a.split for a in res.arcs}
    return sorted(
        (
            p
            for p in res.probes.values()
            if split == "any" or splits.get((p.character, p.axis_id)) == split
        ),
        key=lambda p: p.probe_id,
    )


def load_books(
    data_dir: str,
    books: Sequence[str],
    split: str,
    embedding: TextEmbedding | None = None,
    chroma: Settings | None = None,
) -> list[NovelResources]:
    """Each book's resources; one-line errors for a book without probes or split arcs.

    ``embedding`` and ``chroma`` are the run context's chunk store (None: hashing, embedded).
    """
    loaded = []
    for book in books:
        res = load_resources(data_dir, book, embedding, chroma)
        if not res.probes:
            raise InputError(
                f"no probes for {res.novel.slug}",
                f"run personae arcane build-probes {res.novel.slug}",
            )
        if not split_probes(res, split):
            raise InputError(
                f"no probes of {split}-split arcs in {res.novel.slug}",
                "mark the novel's arcs with personae arcane build-arcs --split train, or pass --split any",
            )
        loaded.append(res)
    return loaded


def dpo_rows(
    books: Sequence[NovelResources],
    *,
    modes: Sequence[str],
    split: str,
    pairs: Pairs,
    context: RoleplayContext,
) -> Export:
    """Preference pairs: anchor (or every) phase's reference vs each adjacent phase's."""
    export = Export()
    for res in books:
        for probe in split_probes(res, split):
            export.probes += 1
            phases = {p.phase_idx: p for p in probe.phase_responses if not p.unavailable}
            anchors = sorted(phases) if pairs == "every-phase" else [probe.anchor_phase_idx]
            for k in anchors:
                if k not in phases:
                    export.skip("anchor phase unavailable")
                    continue
                rivals = [j for j in (k - 1, k + 1) if j in phases]
                if not rivals:
                    export.skip("no available adjacent phase")
                    continue
                for mode in modes:
                    prompt = render_prompt(res, probe, k, mode, context)
                    for j in rivals:
                        export.rows.append(
                            {
                                "prompt": prompt.messages(),
                                "chosen": [
                                    {"role": "assistant", "content": reference_text(phases[k])}
                                ],
                                "rejected": [
                                    {"role": "assistant", "content": reference_text(phases[j])}
                                ],
                                "metadata": _metadata(
                                    probe,
                                    mode=mode,
                                    chosen_phase=k,
                                    rejected_phase=j,
                                    query_chapter=prompt.query_chapter,
                                ),
                            }
                        )
    return export


async def sft_rows(
    books: Sequence[NovelResources],
    *,
    modes: Sequence[str],
    split: str,
    teachers: Sequence[str],
    samples: int,
    context: RoleplayContext,
    concurrency: int = 8,
) -> Export:
    """Teacher completions (T = 0.9, 800 tokens) for every (probe, available phase, mode)."""
    export = Export()
    gate = asyncio.Semaphore(max(1, concurrency))
    jobs = []

    async def sample_one(
        probe: ProbeRecord, phase: PhaseResponse, mode: str, prompt: Prompt, teacher: str, i: int
    ) -> dict[str, Any] | None:
        model, name = context.model_for(teacher)
        model = with_sampling(model, {"temperature": SFT_TEMPERATURE, "max_tokens": SFT_MAX_TOKENS})
        cache_name = f"{name}|T={SFT_TEMPERATURE}|max={SFT_MAX_TOKENS}#sample{i}"
        messages = [SystemMessage(content=prompt.system), HumanMessage(content=prompt.user)]
        async with gate:
            store = context.cache().scoped(f"sft:{mode}")  # modes' prompts may coincide
            answer, usage = await call_text(model, messages, store=store, model_name=cache_name)
        export.llm_calls += usage.calls
        export.cache_hits += usage.cache_hits
        if not answer.strip():
            return None
        return {
            "messages": [*prompt.messages(), {"role": "assistant", "content": answer.strip()}],
            "metadata": _metadata(
                probe,
                phase_idx=phase.phase_idx,
                mode=mode,
                teacher=teacher,
                sample=i,
                query_chapter=prompt.query_chapter,
            ),
        }

    for res in books:
        for probe in split_probes(res, split):
            export.probes += 1
            for phase in probe.phase_responses:
                if phase.unavailable:
                    export.skip("phase unavailable")
                    continue
                for mode in modes:
                    prompt = await asyncio.to_thread(
                        render_prompt, res, probe, phase.phase_idx, mode, context
                    )
                    for teacher in teachers:
                        jobs += [
                            sample_one(probe, phase, mode, prompt, teacher, i)
                            for i in range(samples)
                        ]
    for row in await gather_all(jobs):
        if row is None:
            export.skip("empty teacher answer")
        else:
            export.rows.append(row)
    return export
