"""ARCANE probe generation, Stage i: decision variable (T19), life stages (T20), era-free axis (T21).

Each is one call per arc; the answer schemas are built for the arc's N phases and state the
counts the prompts demand (exactly N-1 adjacent contrasts, exactly N life stages and abstract
phases), and the phase indices are the code's (the i-th contrast is (i, i+1), the i-th stage
is phase i), so the model is not asked for them. Also here: the shared CHARACTER ARC CONTEXT
block and the era menu with its SHA-1 walk (App. B), pure code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal, TypeVar, cast

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, create_model
from pydantic.json_schema import SkipJsonSchema

from personae.agents.answer_schemas import exactly, list_of, numbered, per_call_schema
from personae.memory.arcane.records import ArcRecord

LifeStage = Literal["child", "adolescent", "young_adult", "adult", "older_adult"]

ERA_MENU: tuple[tuple[str, str], ...] = (
    (
        "modern_urban",
        "A present-day city: smartphones, group chats, open-plan offices, rented flats, "
        "public transport, social media, job interviews and schools with standardized tests.",
    ),
    (
        "industrial_early_20th_century",
        "An industrial town around 1910: factories and shifts, trade unions, telegrams and "
        "letters, trams, boarding houses, rigid class lines and the first motor cars.",
    ),
    (
        "mid_century",
        "A 1950s suburb or city: landline telephones, typewriters, television in the living "
        "room, company men, diners, conscription memories and strict social conventions.",
    ),
    (
        "pre_industrial_agrarian",
        "A farming village before machines: harvests and seasons, the village elder and the "
        "priest, markets on feast days, hand tools, oil lamps, debts paid in kind.",
    ),
    (
        "speculative_near_future",
        "A near-future city a few decades on: ubiquitous assistants, automated work, climate "
        "migration, platform co-ops, biometric IDs; human choices unchanged underneath.",
    ),
    (
        "pre_modern_imperial",
        "A pre-modern imperial capital: court ranks and examinations, tribute and petitions, "
        "scribes and seals, guild workshops, and a household bound by duty to its lord.",
    ),
    (
        "diasporic_contemporary",
        "A present-day immigrant community abroad: two languages at home, remittances, "
        "visa paperwork, family businesses, community halls and video calls across time zones.",
    ),
)
"""App. B's seven-slot era menu; descriptions are ours (the paper does not print them)."""


def era_offset(novel: str, character: str, axis_id: str) -> int:
    """int(sha1("novel/character/axis_id")) mod 7 (spec default 19)."""
    digest = hashlib.sha1(f"{novel}/{character}/{axis_id}".encode()).hexdigest()
    return int(digest, 16) % len(ERA_MENU)


def era_walk(novel: str, character: str, axis_id: str, phases: int) -> list[tuple[str, str]]:
    """The era of each phase: a cyclic walk through the menu from the SHA-1 offset."""
    start = era_offset(novel, character, axis_id)
    return [ERA_MENU[(start + k) % len(ERA_MENU)] for k in range(phases)]


def arc_context_block(
    arc: ArcRecord, novel_title: str, life_stages: Sequence[LifeStageTag] | None = None
) -> str:
    """The CHARACTER ARC CONTEXT block (T19): novel, character, axis, poles, phases."""
    lines = [
        "CHARACTER ARC CONTEXT",
        f"Novel: {novel_title}",
        f"Character: {arc.character}",
        f"Axis: {arc.axis_name}",
        f"Dimension: {arc.dimension_label}",
        f"Pole start: {arc.pole_start}",
        f"Pole end: {arc.pole_end}",
    ]
    if arc.relational_target:
        lines.append(f"Relational target: {arc.relational_target}")
    lines.append("Trajectory phases:")
    for k, phase in enumerate(arc.trajectory):
        a, b = phase.chapter_range
        line = f'  Phase {k} (idx={k}) "{phase.phase}" (chs. {a}-{b}): {phase.position_description}'
        if life_stages is not None:
            tag = life_stages[k]
            line += f" [life-stage: {tag.life_stage}, ~{tag.approx_age}]"
        lines.append(line)
    return "\n".join(lines)


# Table 19 (ARCANE App. P.2): decision-variable extractor.
DECISION_SYSTEM = (
    "You are a personality construct analyst. Given a Character Arc -- a labeled trajectory of "
    "phases with chapter ranges and positions -- you name the SINGLE behavioral decision "
    "variable whose answer flips between phases. You think in terms of observable behavior and "
    "concrete choices, not abstract personality language."
)
DECISION_USER = """{context}

TASK:
1. Identify the SINGLE decision variable that captures what flips between phases. State it as a BINARY behavioral contrast that the character would be answering THROUGH ACTION. It must:
  - be answerable through behavior/choice
  - be specific enough that different phases give different answers
  - be phrased neutrally (no preferred pole)
  - be ONE dimension with two contrasting poles
2. For each adjacent phase pair, describe in one sentence how the decision-variable answer shifts. Produce EXACTLY ({n_minus_1}) entries -- one per adjacent pair, in order -- with 0-indexed from/to indices.

Return JSON: {{decision_variable, phase_contrasts: [{{from_phase_idx, to_phase_idx, contrast}}]}}."""

# Table 20 (ARCANE App. P.2): life-stage tagger.
LIFE_STAGE_SYSTEM = (
    "You are a literary-age analyst. Given a character's arc trajectory with chapter ranges and "
    "position descriptions, you assign each phase a developmental life-stage tag from a fixed "
    "taxonomy and a brief age estimate. You read chapter ranges and developmental cues in the "
    "position descriptions (school grade, marriage, retirement, parenting, etc.) rather than "
    "guessing."
)
LIFE_STAGE_USER = """{context}

TASK: For EACH phase, assign:
  - life_stage: one of {{child, adolescent, young_adult, adult, older_adult}}
      child = roughly 0-12
      adolescent = roughly 13-17
      young_adult = roughly 18-30
      adult = roughly 31-50
      older_adult = roughly 51+
  - approx_age: a brief age estimate
  - rationale: one sentence linking your tag to the phase's position_description and chapter range

PHASES:
{phases}

Produce EXACTLY {n} entries, in phase_idx order 0..{n_minus_1}.
  - If the source story spans many years, phases will progress through stages.
  - If multiple phases share the same stage, that is fine -- assign honestly.
  - For unusual chronologies (allegory, dream sequences), pick the stage that best fits the position_description rather than a literal age.

Return JSON: {{phases: [{{phase_idx, life_stage, approx_age, rationale}}]}}."""

# Table 21 (ARCANE App. P.2): era-agnostic axis re-expression (Out-of-World only).
ABSTRACT_SYSTEM = (
    "You are an abstract psychometric analyst. Given a Character Arc framed in a specific "
    "novel's setting, you re-express the arc in era-agnostic behavioral terms -- abstract "
    "psychological vocabulary that could apply to any time and place. You strip the "
    "era-specific scaffolding but preserve the trait dynamics."
)
ABSTRACT_USER = """{context}

Re-express the Character Arc above in ERA-AGNOSTIC abstract psychological terms.

TASK:
1. abstract_axis: 1 sentence naming the abstract dimension (e.g. "agency vs communion under pressure"). No novel-specific terminology.
2. abstract_phases: EXACTLY {n} entries, one per trajectory phase in order. Each is a short phrase summarizing that phase's position on the abstract axis in era-agnostic terms.

Return JSON: {{abstract_axis, abstract_phases: ["...", "..."]}}."""


class PhaseContrast(BaseModel):
    """How the decision variable shifts between two adjacent phases."""

    from_phase_idx: SkipJsonSchema[int] = 0
    """Phase k of the k-th contrast (filled by the code)."""
    to_phase_idx: SkipJsonSchema[int] = 0
    """Phase k + 1 (filled by the code)."""
    contrast: str


class DecisionVariable(BaseModel):
    """T19's answer."""

    decision_variable: str
    phase_contrasts: list[PhaseContrast]


class LifeStageTag(BaseModel):
    """One phase's life stage (T20)."""

    phase_idx: SkipJsonSchema[int] = 0
    """The phase, by position (filled by the code)."""
    life_stage: LifeStage
    approx_age: str
    rationale: str = ""


class LifeStages(BaseModel):
    """T20's answer."""

    phases: list[LifeStageTag]


class Abstraction(BaseModel):
    """T21's answer."""

    abstract_axis: str
    abstract_phases: list[str]


@per_call_schema(maxsize=16)
def decision_schema(n: int) -> type[DecisionVariable]:
    """T19's answer for N phases: exactly N-1 contrasts, (0,1), (1,2), ... by position."""
    return create_model(
        "DecisionVariable",
        __base__=DecisionVariable,
        phase_contrasts=(list_of(PhaseContrast), exactly(n - 1, "(0,1), (1,2), ... in order")),
    )


@per_call_schema(maxsize=16)
def life_stages_schema(n: int) -> type[LifeStages]:
    """T20's answer for N phases: exactly N tags, phase 0..N-1 by position."""
    return create_model(
        "LifeStages",
        __base__=LifeStages,
        phases=(list_of(LifeStageTag), exactly(n, "one per phase, in phase order")),
    )


@per_call_schema(maxsize=16)
def abstraction_schema(n: int) -> type[Abstraction]:
    """T21's answer for N phases: exactly N abstract phases."""
    return create_model(
        "Abstraction",
        __base__=Abstraction,
        abstract_phases=(list[str], exactly(n, "one per phase, in phase order")),
    )


ElementT = TypeVar("ElementT", bound=BaseModel)


def with_phase_indices(answer: ElementT) -> ElementT:
    """T19 / T20 answers with the phase indices the code knows filled in (others unchanged)."""
    if isinstance(answer, DecisionVariable):
        contrasts = [
            c.model_copy(update={"from_phase_idx": k, "to_phase_idx": k + 1})
            for k, c in enumerate(answer.phase_contrasts)
        ]
        return cast(ElementT, answer.model_copy(update={"phase_contrasts": contrasts}))
    if isinstance(answer, LifeStages):
        return cast(
            ElementT, answer.model_copy(update={"phases": numbered(answer.phases, "phase_idx")})
        )
    return answer


def decision_messages(arc: ArcRecord, novel_title: str) -> list[BaseMessage]:
    """The T19 call."""
    user = DECISION_USER.format(
        context=arc_context_block(arc, novel_title), n_minus_1=len(arc.trajectory) - 1
    )
    return [SystemMessage(content=DECISION_SYSTEM), HumanMessage(content=user)]


def life_stage_messages(arc: ArcRecord, novel_title: str) -> list[BaseMessage]:
    """The T20 call."""
    n = len(arc.trajectory)
    phases = "\n".join(
        f'Phase {k} (idx={k}) "{p.phase}" (chs. {p.chapter_range[0]}-{p.chapter_range[1]}): '
        f"{p.position_description}"
        for k, p in enumerate(arc.trajectory)
    )
    user = LIFE_STAGE_USER.format(
        context=arc_context_block(arc, novel_title), phases=phases, n=n, n_minus_1=n - 1
    )
    return [SystemMessage(content=LIFE_STAGE_SYSTEM), HumanMessage(content=user)]


def abstract_messages(arc: ArcRecord, novel_title: str) -> list[BaseMessage]:
    """The T21 call."""
    user = ABSTRACT_USER.format(context=arc_context_block(arc, novel_title), n=len(arc.trajectory))
    return [SystemMessage(content=ABSTRACT_SYSTEM), HumanMessage(content=user)]
