"""The pure rules of ARCANE arc construction (beside the graph that applies them): reconciliation tags, drift flags, the two gates.

App. A's post-processing is done in code, not trusted to the model: ``artifact`` axes are
dropped, ``borderline`` kept and flagged, ``valid_missed`` kept; a merged axis is traced back to
the reconciliation tag of the stream axis it came from, and one that traces only to an artifact
is dropped. The train gate is a 2-of-3 critic majority, the eval gate a 2-of-3 human validity
majority (critics are then reference only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from personae.agents.arcane.axes import AxisInduction, MergedAxis, Reconciliation
from personae.memory.arcane.records import AnnotatorVote, ArcRecord, CriticVerdict

Tag = Literal["matched", "valid_missed", "borderline", "artifact"]
TRACE_THRESHOLD = 0.5
"""Name similarity needed to trace a merged axis to a stream-unique axis of the comparison."""


@dataclass(frozen=True)
class TaggedAxis:
    """A merged axis with its reconciliation tag and any flags."""

    axis: MergedAxis
    tag: Tag
    flags: tuple[str, ...] = ()


def _similarity(a: str, b: str) -> float:
    return SequenceMatcher(None, a.lower(), b.lower()).ratio()


def trace_tag(axis: MergedAxis, reconciliation: Reconciliation) -> tuple[Tag, str | None]:
    """The tag of the stream axis ``axis`` came from; ``(borderline, flag)`` if untraceable."""
    if axis.source == "both":
        return "matched", None
    category = (
        reconciliation.comparison.intrapersonal
        if axis.axis_type == "intrapersonal"
        else reconciliation.comparison.relational
    )
    pool = category.unique_to_a if axis.source == "event_only" else category.unique_to_b
    scored = [
        (max(_similarity(u.axis, axis.axis_name), _similarity(u.axis, axis.dimension_label)), u)
        for u in pool
    ]
    best = max(scored, key=lambda pair: pair[0], default=None)
    if best is None or best[0] < TRACE_THRESHOLD:
        return "borderline", f"{axis.axis_id}: not traceable to the comparison, kept as borderline"
    return best[1].assessment, None


def is_agency_communion(label: str) -> bool:
    """Whether an axis label or name is about agency / communion (Bakan)."""
    text = label.lower()
    return "agency" in text or "communion" in text


def drift_flags(name: str, induction: AxisInduction) -> list[str]:
    """App. A: a stream whose first intrapersonal axis is not Agency-Communion is drifting."""
    first = induction.intrapersonal_axes[0] if induction.intrapersonal_axes else None
    if first is None or not is_agency_communion(f"{first.dimension_label} {first.axis_name}"):
        return [f"{name} stream: first intrapersonal axis is not Agency-Communion (drift)"]
    return []


def apply_tags(reconciliation: Reconciliation) -> tuple[list[TaggedAxis], list[str], list[str]]:
    """``(kept axes, dropped notes, flags)``: artifacts dropped, borderline flagged, N < 2 flagged."""
    kept: list[TaggedAxis] = []
    dropped: list[str] = []
    flags: list[str] = []
    for axis in [*reconciliation.intrapersonal_axes, *reconciliation.relational_axes]:
        tag, flag = trace_tag(axis, reconciliation)
        notes = [flag] if flag else []
        if tag == "artifact":
            dropped.append(f"{axis.axis_id}: reconciliation tagged it an artifact")
            continue
        if tag == "borderline":
            notes.append(f"{axis.axis_id}: borderline (kept, flagged for downstream filtering)")
        if len(axis.trajectory) < 2:
            notes.append(f"{axis.axis_id}: fewer than 2 phases, no probes can be built")
        kept.append(TaggedAxis(axis, tag, tuple(notes)))
        flags.extend(notes)
    return kept, dropped, flags


def critic_majority(verdicts: Mapping[str, CriticVerdict]) -> bool:
    """Train / unvalidated gate: at least 2 of the 3 critics say the axis is valid."""
    return sum(1 for v in verdicts.values() if v.verdict) >= 2


def human_majority(votes: Sequence[AnnotatorVote]) -> bool:
    """Eval gate: at least 2 annotators (of 3) rate the axis valid."""
    return sum(1 for v in votes if v.validity) >= 2


def to_arc_record(
    tagged: TaggedAxis,
    *,
    novel: str,
    character: str,
    split: Literal["train", "eval", "unvalidated"],
    critiques: Mapping[str, CriticVerdict],
    votes: Sequence[AnnotatorVote],
    richness: Literal["rich", "moderate", "flat"],
) -> ArcRecord:
    """The App. C record of a kept axis (``matched``/``valid_missed``/``borderline``)."""
    axis = tagged.axis
    validated_by: Literal["critics", "humans", "none"] = (
        "humans" if votes else ("critics" if split != "eval" else "none")
    )
    tag = "matched" if tagged.tag == "artifact" else tagged.tag
    return ArcRecord(
        **axis.model_dump(exclude={"source_character"}),  # the merged axis as App. C keeps it
        novel=novel,
        character=character,
        literary_validation=dict(critiques),
        annotation=list(votes),
        reconciliation_tag=tag,
        split=split,
        validated_by=validated_by,
        arc_richness=richness,
    )
