"""ARCANE's ``results.jsonl``: the shape of one line and its one reader.

Why one place: the evaluation appends these lines, and a rerun, the report, the perturbation
and POV ablations and the benchmarks read them back. Personae wrote the file, but a kill can tear
its last line, and a hand edit or another version may have changed a record; every reader goes
through :func:`read_results`, so each meets the same records and a bad line is one message
naming it, never a ``KeyError`` half-way through a report.
"""

# No ``from __future__ import annotations`` here: TypedDict tells NotRequired fields apart only
# from evaluated annotations, and the reader's check is derived from them.
from pathlib import Path
from typing import Any, NotRequired, get_type_hints

from typing_extensions import TypedDict

from personae.errors import InputError
from personae.files import read_jsonl

RESULTS = "results.jsonl"


class PhaseResult(TypedDict):
    """One phase of a unit's record: the answer as of its chapter and its T35 scores."""

    phase_idx: int
    """The probe's phase."""
    query_chapter: int
    """The chapter the character answered at."""
    response: str
    """The role-play answer."""
    context_chapters: list[int]
    """The chapter of every context segment shown."""
    hint: str | None
    """The TimeChara hint, if any."""
    scores: dict[str, int] | None
    """T35 scores (None: the judgment is missing)."""


class UnitRecord(TypedDict):
    """One line of results.jsonl: a (probe, mode, model) unit, role-played and judged.

    The evaluation writes every field. The required ones are what every reader groups by; a
    record may lack the others (an older version wrote fewer), and readers default them.
    """

    probe_id: str
    """The probe."""
    probe_type: str
    """in_scenario, in_world or out_of_world."""
    mode: str
    """Context mode."""
    model: str
    """Role-play model."""
    novel: NotRequired[str]
    """Novel slug."""
    character: NotRequired[str]
    """Who was played."""
    axis_id: NotRequired[str]
    """The probe's arc axis."""
    judge: NotRequired[str]
    """Judge model."""
    judge_include_thought: NotRequired[bool]
    """False: the no-thought judge (App. F)."""
    settings: NotRequired[dict[str, Any]]
    """The run's sampling and judge settings, recorded beside the paper's."""
    phases: NotRequired[list[PhaseResult]]
    """Each available phase's answer and scores."""
    unavailable_phases: NotRequired[list[int]]
    """Phases the probe could not offer."""
    ptf: NotRequired[dict[str, Any] | None]
    """T36 trajectory scores (None: fewer than two phases, or missing)."""
    usage: NotRequired[dict[str, int]]
    """LLM usage of the unit (role-play and judges)."""


TEXT_FIELDS = tuple(name for name, hint in get_type_hints(UnitRecord).items() if hint is str)
"""The record's text fields (``probe_id``, ``mode``, ...: what the report groups by)."""


def result_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with one results.jsonl record, or ``None``.

    A required text field must be there; any other text field, when present, must be text;
    phases need their index, present scores every T35 metric, a present ptf its number.
    """
    from personae.evals.arcane.metrics import PHASE_METRICS

    required = UnitRecord.__required_keys__
    bad = [
        k
        for k in TEXT_FIELDS
        if (k in record or k in required) and not isinstance(record.get(k), str)
    ]
    if bad:
        return f"lacks the text field {bad[0]!r}"
    phases = record.get("phases", [])
    if not isinstance(phases, list) or not all(
        isinstance(p, dict) and _is_number(p.get("phase_idx")) for p in phases
    ):
        return "has a 'phases' list whose phases lack a phase_idx"
    for phase in phases:
        scores = phase.get("scores")
        if scores and not (
            isinstance(scores, dict) and all(_is_number(scores.get(m)) for m in PHASE_METRICS)
        ):
            return f"has a phase whose scores lack one of {', '.join(PHASE_METRICS)}"
    ptf = record.get("ptf")
    if ptf is not None and not (isinstance(ptf, dict) and _is_number(ptf.get("ptf"))):
        return "has a 'ptf' without its number"
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def read_results(out: Path, *, missing_ok: bool = False) -> list[dict[str, Any]]:
    """Every record of ``out/results.jsonl``, each checked (a line torn by a kill is skipped).

    ``missing_ok``: a run not started yet has no results (an empty list); otherwise a missing
    or empty file, and a bad record, are one-line errors naming the fix.
    """
    path = out / RESULTS
    if not path.is_file():
        if missing_ok:
            return []
        raise InputError(
            f"no {RESULTS} in {out}", f"run personae arcane eval BOOK... --out {out} first"
        )
    records = read_jsonl(path)  # a torn line is skipped: the next run redoes that unit
    for number, record in enumerate(records, start=1):
        problem = result_problem(record)
        if problem:
            raise InputError(
                f"{path}: result {number} ({str(record.get('probe_id'))[:60]}) {problem}",
                "fix or delete that line; personae arcane eval then runs that unit again",
            )
    if not records and not missing_ok:
        raise InputError(
            f"{path} holds no results", f"run personae arcane eval BOOK... --out {out}"
        )
    return records
