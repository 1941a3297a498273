"""ARCANE arc construction: axis induction (Table 14), reconciliation (Table 15), critics (Table 16).

Axis induction runs once per stream; reconciliation compares the two sets and merges them;
three critics with different perspectives rate every merged axis. Every later stage trusts the
chapter ranges as story positions: the answer schemas are built for the novel, so each range's
chapters are within 1..C (:func:`induction_schema`, :func:`reconciliation_schema`), and the
code puts each range's ends and the phases in chronological order (:func:`in_order`). The
final axis ids are the code's too (``final_intra_01``..., ``final_rel_01``..., by position:
:func:`number_final_axes`), so none is malformed or repeated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from personae.agents.answer_schemas import bounded, list_of, per_call_schema
from personae.memory.arcane.records import (
    ArcDirection,
    AxisBase,
    AxisSource,
    AxisType,
    Citation,
    CriticVerdict,
    PhaseBase,
    TrajectoryPhase,
)

# Table 14 (ARCANE App. P.1): Stage i axis-induction prompt, verbatim (evidence_summary placed
# inside each axis: spec default 5). Its example still shows "axis_type"; the answer schema
# leaves it out, because the list an axis sits in decides its type (:func:`in_order`).
INDUCTION_SYSTEM = (
    "You are a literary analyst specializing in character psychology and narrative structure. "
    "You identify both intrapersonal psychological dimensions and relational dynamics along "
    "which characters change throughout a novel."
)
INDUCTION_USER = """Below is a chronological list of psychologically impactful events for {character} across {novel}.

{stream_json}

Based on these events, identify TWO types of character arc axes:

## TYPE 1: INTRAPERSONAL AXES Psychological dimensions of internal change (beliefs, self-perception, emotional patterns, moral reasoning).
- Identify 3-5 axes for characters with rich arcs, fewer for flat characters.
- REQUIRED: The first axis (intra_01) MUST be an Agency-Communion axis (Bakan 1966). Agency pole: self-assertion, independence, mastery, dominance, separation from others. Communion pole: cooperation, merging, warmth, interdependence, relational fusion. Track where {character} starts and ends on this motivational dimension.

## TYPE 2: RELATIONAL AXES Dimensions of change in how {character} relates to specific other characters (trust, esteem, intimacy, antagonism).
- Only include relationships with meaningful, trackable change (1-2 axes per significant relationship).
- Do NOT force relational axes for minor or static relationships.

For EVERY axis:
1. Name it clearly and specifically (not generic like "personal growth").
2. Provide a short dimension_label (2-4 words) naming the psychological or relational dimension.
3. Define the two poles (where the character starts vs. where they end on this dimension).
4. Trace the trajectory with specific chapter ranges and key events.
5. Rate confidence (high/medium/low).

If {character} shows little meaningful change (flat arc), state this explicitly and keep axes minimal.

Return JSON only:
{{
  "character": "{character}",
  "arc_richness": "rich/moderate/flat",
  "intrapersonal_axes": [
    {{
      "axis_type": "intrapersonal",
      "axis_id": "intra_01",
      "dimension_label": "2-4 word dimension name",
      "axis_name": "From X to Y (descriptive arc name)",
      "pole_start": "Starting position description",
      "pole_end": "Ending position description",
      "confidence": "high/medium/low",
      "trajectory": [
        {{
          "phase": "Phase label",
          "chapter_range": [start, end],
          "position_description": "Where on the axis and why",
          "key_events": ["event descriptions"]
        }}
      ],
      "evidence_summary": "Brief justification"
    }}
  ],
  "relational_axes": [
    {{
      "axis_type": "relational",
      "axis_id": "rel_01",
      "source_character": "{character}",
      "target_character": "Other Character",
      "dimension_label": "...",
      "axis_name": "...",
      "pole_start": "...",
      "pole_end": "...",
      "confidence": "high/medium/low",
      "trajectory": [ ... same shape as above ... ],
      "evidence_summary": "..."
    }}
  ]
}}"""
STATE_STREAM_LEAD = "Below is a chronological list of psychologically impactful events for"
"""The state-stream variant swaps events_json for psych_summaries_json (Table 14 caption)."""

# Table 15 (ARCANE App. P.1): Stage ii cross-stream reconciliation prompt, verbatim.
RECONCILE_SYSTEM = (
    "You are a literary analyst performing cross-validation of character arc analyses. You "
    "compare independently generated axis sets and produce a merged, high-confidence result."
)
RECONCILE_USER = """Below are two independently generated sets of character arc axes for {character} in {novel}. Each set contains INTRAPERSONAL axes (internal psychological change) and RELATIONAL axes (interpersonal dynamics change).

SET A (from event graph analysis):
{axes_events}

SET B (from psychological summary analysis):
{axes_psych}

Compare these two sets and produce a merged result. Compare intrapersonal axes with intrapersonal axes, and relational axes with relational axes separately.

For each category:
1. MATCHED: Axes that appear in both sets (possibly different names but same concept). HIGH CONFIDENCE.
2. UNIQUE TO A: Axes only in Set A. Assess: valid_missed / artifact / borderline.
3. UNIQUE TO B: Axes only in Set B. Same assessment.
4. MERGED FINAL SET: Your recommended final axes, combining the best from both.

For each final axis, synthesize trajectory information from both sources. Every final axis MUST include: axis_type, dimension_label (2-4 words), axis_name, pole_start, pole_end, confidence, source, arc_direction, trajectory, evidence_summary. Relational axes must also include source_character and target_character.

arc_direction classifies the overall trajectory shape of this axis:
- "positive": character moves from a flawed position toward a healthier / wiser one
- "negative": character entrenches or deepens a flaw
- "flat": character's position on this axis remains essentially stable
- "disillusionment": character loses a positive belief without gaining a replacement
- "ambivalent": trajectory is non-linear with no clear net direction

Return JSON only:
{{
  "character": "{character}",
  "comparison": {{
    "intrapersonal": {{
      "matched": [
        {{"set_a_axis": "...", "set_b_axis": "...",
         "overlap_description": "How they correspond"}}
      ],
      "unique_to_a": [{{"axis": "name",
                       "assessment": "valid_missed/artifact/borderline"}}],
      "unique_to_b": [{{"axis": "name",
                       "assessment": "valid_missed/artifact/borderline"}}]
    }},
    "relational": {{ ... same shape ... }}
  }},
  "intrapersonal_axes": [
    {{
      "axis_type": "intrapersonal",
      "axis_id": "final_intra_01",
      "dimension_label": "...",
      "axis_name": "Merged descriptive name",
      "pole_start": "...",
      "pole_end": "...",
      "confidence": "high/medium/low",
      "source": "both/event_only/psych_only",
      "arc_direction": "positive/negative/flat/disillusionment/ambivalent",
      "trajectory": [
        {{"phase": "...", "chapter_range": [0, 0],
         "position_description": "...",
         "key_moments": ["descriptions"]}}
      ],
      "evidence_summary": "..."
    }}
  ],
  "relational_axes": [ ... same shape with source_character / target_character added ... ]
}}"""

# Table 16 (ARCANE App. P.1): Stage iii LLM-critic prompts, verbatim: three systems, one user.
CRITIC_SYSTEMS: dict[str, str] = {
    "structuralist": (
        "You are a structuralist literary critic with expertise in narratology and character "
        "function. You evaluate character arc claims by consulting your knowledge of published "
        "narratological and structuralist analyses. You must cite specific, real, verifiable "
        "works. For each citation include the direct URL to the work if you know it (e.g. JSTOR, "
        "Google Books, publisher page, Academia.edu), otherwise null. If you cannot recall any "
        "real published citation for this axis, set verdict=false and leave citations as an "
        "empty list."
    ),
    "psychological": (
        "You are a psychological literary critic specializing in depth psychology, ego "
        "development, and psychoanalytic approaches to character. You evaluate character arc "
        "claims using your knowledge of published psychological criticism of the novel. You must "
        "cite specific, real, verifiable works. For each citation include the direct URL to the "
        "work if you know it, otherwise null. If you cannot recall any real published citation "
        "for this axis, set verdict=false and leave citations as an empty list."
    ),
    "historical": (
        "You are a historical and cultural literary critic. You evaluate character arc claims "
        "using your knowledge of published cultural, historical, and reception-oriented "
        "scholarship on the novel. You must cite specific, real, verifiable works. For each "
        "citation include the direct URL to the work if you know it, otherwise null. If you "
        "cannot recall any real published citation for this axis, set verdict=false and leave "
        "citations as an empty list."
    ),
}
CRITICS = tuple(CRITIC_SYSTEMS)
CRITIC_USER = """Novel: {novel}
Character: {character}

AXIS UNDER EVALUATION
ID      : {axis_id} Dimension : {dimension_label} Name      : {axis_name} Pole start : {pole_start} Pole end :
{pole_end} Confidence : {confidence}

{axis_type_block}

YOUR TASK Assess whether this axis is grounded in published literary scholarship on "{novel}".

Rules:
1. Cite only real, verifiable published works. Never invent citations.
2. Each citation MUST include: author, title, year. Include the direct URL (JSTOR, Google Books, publisher page, Academia.edu, etc.) if you know it; otherwise set url to null.
3. {rule_3}
4. If you cannot recall any real published work supporting this axis, set "verdict": false and "citations": [].

Return JSON only:
{{
  "verdict": true or false,
  "reasoning": "2-3 sentences from your critical perspective",
  "citations": [
    {{
      "author": "Surname, Firstname (or just Surname)",
      "title": "Full work title",
      "year": 1990,
      "publication": "Journal name / book publisher / essay collection",
      "url": "direct URL or null",
      "relevance": "one sentence: how this work supports the axis"
    }}
  ]
}}"""
INTRAPERSONAL_BLOCK = (
    "AXIS TYPE: INTRAPERSONAL This axis tracks an internal psychological change in {character} "
    "(beliefs, self-perception, moral reasoning, emotional patterns). Relevant scholarship "
    "includes: psychological criticism, character development studies, ego/identity analysis, "
    "or psychoanalytic readings."
)
INTRAPERSONAL_RULE_3 = (
    "For intrapersonal axes, a work supports the axis if it discusses the same internal "
    "dimension of {character} -- even under different terminology (e.g. 'pride' vs "
    "'arrogance', 'humility' vs 'self-knowledge')."
)
RELATIONAL_BLOCK = (
    "AXIS TYPE: RELATIONAL -- This axis tracks how {character}'s relationship with {target} "
    "changes ..."
)
RELATIONAL_RULE_3 = (
    "For relational axes, a work supports the axis if it discusses the evolving dynamic between "
    "{character} and {target} -- even if it uses different terms (e.g. 'power struggle', "
    "'romantic tension', 'class conflict')."
)


class InducedPhase(PhaseBase):
    """A trajectory phase as T14 returns it."""

    key_events: list[str] = Field(default_factory=list)


class InducedAxis(AxisBase):
    """One axis of a stream (T14)."""

    axis_type: SkipJsonSchema[AxisType] = "intrapersonal"
    """The list the axis sits in decides it (:func:`in_order`): the model is not asked."""
    trajectory: list[InducedPhase]
    evidence_summary: str = ""
    source_character: str | None = None
    target_character: str | None = None


class AxisInduction(BaseModel):
    """T14's answer for one stream."""

    character: str
    arc_richness: Literal["rich", "moderate", "flat"]
    intrapersonal_axes: list[InducedAxis] = Field(default_factory=list)
    relational_axes: list[InducedAxis] = Field(default_factory=list)


class MatchedAxis(BaseModel):
    """Axes both streams found."""

    set_a_axis: str
    set_b_axis: str
    overlap_description: str = ""


class UniqueAxis(BaseModel):
    """An axis one stream found, with its assessment."""

    axis: str
    assessment: Literal["valid_missed", "artifact", "borderline"]


class CategoryComparison(BaseModel):
    """T15's comparison for one category."""

    matched: list[MatchedAxis] = Field(default_factory=list)
    unique_to_a: list[UniqueAxis] = Field(default_factory=list)
    unique_to_b: list[UniqueAxis] = Field(default_factory=list)


class Comparison(BaseModel):
    """T15's comparison for both categories."""

    intrapersonal: CategoryComparison = Field(default_factory=CategoryComparison)
    relational: CategoryComparison = Field(default_factory=CategoryComparison)


class MergedPhase(TrajectoryPhase):
    """A merged trajectory phase (T15)."""


class MergedAxis(AxisBase):
    """One axis of the merged final set (T15)."""

    axis_type: SkipJsonSchema[AxisType] = "intrapersonal"
    """The list the axis sits in decides it (:func:`in_order`): the model is not asked."""
    axis_id: SkipJsonSchema[str] = ""
    """``final_intra_NN`` / ``final_rel_NN``, numbered by the code (:func:`number_final_axes`)."""
    source: AxisSource
    arc_direction: ArcDirection
    trajectory: list[MergedPhase]
    evidence_summary: str = ""
    source_character: str | None = None
    target_character: str | None = None


class Reconciliation(BaseModel):
    """T15's answer."""

    character: str
    comparison: Comparison
    intrapersonal_axes: list[MergedAxis] = Field(default_factory=list)
    relational_axes: list[MergedAxis] = Field(default_factory=list)


class CriticAnswer(BaseModel):
    """T16's answer."""

    verdict: bool
    reasoning: str
    citations: list[Citation] = Field(default_factory=list)

    def as_verdict(self) -> CriticVerdict:
        """Stored form; citations marked unverified (spec default 34)."""
        cites = [c.model_copy(update={"verified": False}) for c in self.citations]
        return CriticVerdict(verdict=self.verdict, reasoning=self.reasoning, citations=cites)


PhaseT = TypeVar("PhaseT", InducedPhase, MergedPhase)


def _bounded_phase(base: type[PhaseT], chapters: int) -> type[PhaseT]:
    """``base`` whose ``chapter_range`` holds two chapters of 1..``chapters``."""
    chapter = Annotated[int, bounded(1, chapters)]
    return create_model(
        base.__name__,
        __base__=base,
        chapter_range=(
            tuple[chapter, chapter],
            Field(description=f"[start, end] in 1..{chapters}"),
        ),
    )


def _with_axes(base: type[Any], axis: type[BaseModel]) -> Any:
    """``base`` whose two axis lists hold ``axis``."""
    return create_model(
        base.__name__,
        __base__=base,
        intrapersonal_axes=(list_of(axis), Field(default_factory=list)),
        relational_axes=(list_of(axis), Field(default_factory=list)),
    )


@per_call_schema(maxsize=16)
def induction_schema(chapters: int) -> type[AxisInduction]:
    """T14's answer for a novel of ``chapters`` chapters (ranges within 1..C)."""
    phase = _bounded_phase(InducedPhase, chapters)
    axis = create_model("InducedAxis", __base__=InducedAxis, trajectory=(list_of(phase), ...))
    found: type[AxisInduction] = _with_axes(AxisInduction, axis)
    return found


@per_call_schema(maxsize=16)
def reconciliation_schema(chapters: int) -> type[Reconciliation]:
    """T15's answer for a novel of ``chapters`` chapters (ranges within 1..C)."""
    phase = _bounded_phase(MergedPhase, chapters)
    axis = create_model("MergedAxis", __base__=MergedAxis, trajectory=(list_of(phase), ...))
    merged: type[Reconciliation] = _with_axes(Reconciliation, axis)
    return merged


def _ordered(trajectory: Sequence[InducedPhase | MergedPhase]) -> list[InducedPhase | MergedPhase]:
    """Each range's ends in order, the phases by start (stable: ties keep the model's order).

    Typed over both phase kinds, not a type variable: :func:`in_order` walks an answer's two
    axis lists in one loop, so a checker sees either kind's list there.
    """
    fixed = [
        p.model_copy(update={"chapter_range": (min(p.chapter_range), max(p.chapter_range))})
        for p in trajectory
    ]
    return sorted(fixed, key=lambda p: p.chapter_range[0])


AnswerT = TypeVar("AnswerT", AxisInduction, Reconciliation)


def in_order(answer: AnswerT) -> AnswerT:
    """``answer`` with every axis's phases in chronological order (what the stages assume).

    Each axis also takes the type of the list it sits in: the code knows it, so the schema
    does not ask, and a model's ``axis_type`` that contradicts its list (a relational type on
    ``final_intra_01``) cannot survive.
    """
    update = {
        key: [
            a.model_copy(update={"trajectory": _ordered(a.trajectory), "axis_type": kind})
            for a in axes
        ]
        for key, kind, axes in (
            ("intrapersonal_axes", "intrapersonal", answer.intrapersonal_axes),
            ("relational_axes", "relational", answer.relational_axes),
        )
    }
    return answer.model_copy(update=update)


def number_final_axes(answer: Reconciliation) -> Reconciliation:
    """The merged axes numbered ``final_intra_01``.. and ``final_rel_01``.. in their order."""
    intra = [
        a.model_copy(update={"axis_id": f"final_intra_{n:02d}"})
        for n, a in enumerate(answer.intrapersonal_axes, start=1)
    ]
    relational = [
        a.model_copy(update={"axis_id": f"final_rel_{n:02d}"})
        for n, a in enumerate(answer.relational_axes, start=1)
    ]
    return answer.model_copy(update={"intrapersonal_axes": intra, "relational_axes": relational})


def induction_messages(
    *, novel: str, character: str, stream_json: list[object], state_stream: bool
) -> list[BaseMessage]:
    """T14 on one stream (chronological events, or the state stream's summaries)."""
    user = INDUCTION_USER.format(
        character=character, novel=novel, stream_json=json.dumps(stream_json, ensure_ascii=False)
    )
    del state_stream  # the same template: only the inserted JSON differs (Table 14 caption)
    return [SystemMessage(content=INDUCTION_SYSTEM), HumanMessage(content=user)]


def reconcile_messages(
    *, novel: str, character: str, axes_events: AxisInduction, axes_psych: AxisInduction
) -> list[BaseMessage]:
    """T15 over the two streams' axis sets."""
    user = RECONCILE_USER.format(
        character=character,
        novel=novel,
        axes_events=axes_events.model_dump_json(indent=2),
        axes_psych=axes_psych.model_dump_json(indent=2),
    )
    return [SystemMessage(content=RECONCILE_SYSTEM), HumanMessage(content=user)]


def critic_messages(
    critic: str, *, novel: str, character: str, axis: MergedAxis
) -> list[BaseMessage]:
    """T16 for one critic perspective and one axis (intrapersonal or relational variant)."""
    target = axis.target_character or "the other character"
    relational = axis.axis_type == "relational"
    block = (RELATIONAL_BLOCK if relational else INTRAPERSONAL_BLOCK).format(
        character=character, target=target
    )
    rule = (RELATIONAL_RULE_3 if relational else INTRAPERSONAL_RULE_3).format(
        character=character, target=target
    )
    user = CRITIC_USER.format(
        novel=novel,
        character=character,
        axis_id=axis.axis_id,
        dimension_label=axis.dimension_label,
        axis_name=axis.axis_name,
        pole_start=axis.pole_start,
        pole_end=axis.pole_end,
        confidence=axis.confidence,
        axis_type_block=block,
        rule_3=rule,
    )
    return [SystemMessage(content=CRITIC_SYSTEMS[critic]), HumanMessage(content=user)]
