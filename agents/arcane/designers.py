"""ARCANE probe generation, Stage ii: scene grounding (T25) and the three designers (T22-T24).

The designers inline the shared style guideline (T17) and phase-response instructions (T18)
verbatim. The answer schemas are built per call and state what the prompts demand: exactly N
phase responses (the i-th is phase i: the code fills the index), a locator event that is one of
those offered, or null (the code knows its chapter); a passage that is not a verbatim
substring of the chapter is rejected by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from personae.agents.answer_schemas import exactly, list_of, numbered, one_of, per_call_schema
from personae.agents.arcane.probe_prep import LifeStageTag, arc_context_block
from personae.memory.arcane.records import ArcRecord, ProbeType, phase_query_chapter

# Table 17 (ARCANE App. P.2): shared style guideline (_style_block), verbatim.
STYLE_BLOCK = """STYLE GUIDELINES -- apply to scenario, question, and every phase response:

- LENGTH: scenario <= 2 sentences (<=60 words). question <= 1 sentence.
Per phase response:
  gt_action: <= 30 words (35 for In-Scenario).
  gt_speech: <= 25 words or null.
  gt_thought: 1-2 sentences (<= 50 words). Captures HOW this phase construes/processes/ruminates on the situation.
- DICTION: plain, vivid, era- and age-appropriate language for {character} at THIS phase. Avoid academic vocabulary ("orchestrate", "operationalize", "strategically prepared", "in alignment with.."). Prefer concrete verbs over abstract nouns.
- SPEECH (optional): include gt_speech ONLY when {character} would naturally speak in this beat. Silence/action-only is fine. Awkward dialogue is worse than no dialogue.
- THOUGHT: first-person psychological framing OR observer voice that names the character's interpretation. Examples (Harry/Snape arc):
  - early phase thought: "Snape's just being unfair again, like always."
  - later phase thought: "He's pushing me on purpose -- maybe this is a test, or he wants me angry enough to slip. Either way, react less."
  The thought is where adjacent phases differentiate most when action is constrained by the scene.

SCENARIO STYLE: set the tension with minimum detail. Don't write background paragraphs. The SCENARIO is what activates the decision variable -- give it real pull. Crucially, the scenario should be SOMETHING ALL PHASES COULD PLAUSIBLY ENCOUNTER. Don't bind it to one phase's specific life-situation (e.g., a cupboard scene if only one phase lives in a cupboard).

QUESTION STYLE: pose an OPEN-ENDED question focused on the moment.
Hard rules:
- DO NOT enumerate options ("Should X do A or B?", "Is it X's place to ___?", "Whose side ___?"). Binary forks collapse phase variation into two buckets AND reveal the decision variable -- both bad.
- DO NOT be flat ("What does X do?" with no situational focus).
- DO NOT directly name the decision variable. The axis is activated by the SCENARIO; the QUESTION only opens space for {character} to respond.
- Good shapes: "How does {character} respond when ___?" / "What is {character}'s next move?" / "Where does {character}'s attention go?" / "How does {character} take in what just happened?"

RESPONSE STYLE -- typicality matters:
- The response is the MODAL behavior + thought for THIS phase's trait state. Not maximally distinctive; typical.
- ONE verb / ONE beat in action. Don't stack multiple distinct actions.
- BANNED CUES -- distinctiveness markers. AVOID unless absolutely natural: "immediately", "at once", "decisively", "deliberately", "without hesitation", "instinctively", "swiftly", "instantly".
- When the response is a partial / silent / awkward reaction, write THAT.
- THE THOUGHT FIELD CARRIES PHASE VARIANCE. Adjacent phases may have nearly identical action+speech but differ in HOW they interpret. Use this.
- gt_typicality:
  "typical" -- modal behavior for this state distribution.
  "plausible_tail" -- in distribution but not the mode. Use when the situation pulls slightly off-phase, or when honoring the breadth of the state distribution is more honest than always writing the cleanest exemplar.
- COMPACT-TIME ARCS: if multiple phases share the same life-stage, phase differences may live ONLY in stance/thought, not in action-level changes."""

# Table 18 (ARCANE App. P.2): shared phase-response instructions, verbatim.
PHASE_BLOCK = """PHASE RESPONSES -- produce EXACTLY {n} entries, one per trajectory phase, in phase_idx order 0..{n_minus_1}.

For each entry:
- phase_idx: 0..{n_minus_1} (matches the trajectory order)
- gt_action: <= 30 words (35 for In-Scenario). {character}'s action AT THIS PHASE, drawing ONLY on what this phase's character knows (events up to its query_chapter, NOT later events).
- gt_speech: <= 25 words spoken naturally, or null.
- gt_thought: 1-2 sentences. How THIS phase's character construes, interprets, or ruminates on the situation. THIS IS WHERE ADJACENT PHASES DIFFERENTIATE most when action is constrained.
- gt_typicality: "typical" (default) or "plausible_tail".

Phase list (each phase responds AS IF asked at its own query_chapter):
{phase_lines}

CRITICAL CONSTRAINTS:
- Adjacent phases that differ on the decision variable should differ in KIND (different verbs OR different thought-framings) -- not just intensity adverbs. If the scene's action affordance is narrow, put the variance in gt_thought.
- A phase that has not yet encountered a piece of information (because it comes from a later chapter) must NOT reference it.
- {character} stays in their established voice. No fourth-wall narration."""

# Table 22 (ARCANE App. P.2): In-Scenario designer.
IS_SYSTEM = (
    "You are a narrative psychologist building a behavioral probe from a verbatim source "
    "passage. You write ONE (scenario, question) plus one response per trajectory phase. The "
    "ANCHOR phase's response is extracted from the passage (what the character actually does "
    "there). Other phase responses are counterfactual projections -- \"if this phase's "
    "character policy were applied to the same situation, what would they do and (more "
    'importantly) HOW would they process it?". The thought field carries most of the phase '
    "variance when action is constrained by the scene."
)
IS_USER = """{context}
DECISION VARIABLE: {decision_variable}

PROBE TYPE: (1) In-Scenario (multi-phase)
ANCHOR PHASE: idx={k} "{label}" (chs {a}-{b})
ANCHOR QUERY CHAPTER: {qc}
{relational}
SOURCE PASSAGE (verbatim -- contains the ANCHOR phase's canonical response):
\"\"\"
{passage}
\"\"\"

TASK: Assemble ONE probe from this passage with N phase responses.

1. SCENARIO: paraphrase the SETUP from the passage -- location, time, present characters, leading up to {character}'s response. Stop just before {character} acts/speaks.
2. QUESTION: name the specific choice point (see QUESTION STYLE).
3. {phase_block}

ANCHOR phase entry (phase_idx={k}) MUST extract {character}'s actual response from the SOURCE PASSAGE -- gt_action paraphrases the passage; gt_speech copies {character}'s spoken words verbatim from the passage (or null if they don't speak); gt_thought captures the construal evident in the passage. Non-anchor phases are counterfactual projections.

{style_block}

NOTE for (1) In-Scenario: anchor scenes often have narrow behavioural affordance -- late-phase trait policies may legitimately produce similar actions to early phases in cramped scenes. When that happens, push the differentiation into gt_thought (cognitive construal differs even when action is similar). Do not stretch action variance to manufacture differentiation.

Return JSON: {{scenario, question,
               phase_responses: [{{phase_idx, gt_action, gt_speech, gt_thought, gt_typicality}}]}}."""
IS_RELATIONAL = "RELATIONAL TARGET: every phase response describes {character}'s behavior directed at {target}.\n"

# Table 23 (ARCANE App. P.2): In-World designer.
IW_SYSTEM = (
    "You are a narrative psychologist designing a multi-phase behavioral probe in the source "
    "novel's world. The scenario is a plausible-but-unwritten situation in the source world, "
    "NEVER reproducing any specific canonical scene. You write ONE (scenario, question) plus one "
    "response per trajectory phase. Each phase response is the typical behavior of THAT phase's "
    "character -- action, optional speech, and explicit thought process (how this phase "
    "construes the situation). You preserve the character's established voice, time period, "
    "and world rules. Adjacent phases may legitimately respond similarly; do not stretch."
)
IW_USER = """{context}
DECISION VARIABLE: {decision_variable}

PROBE TYPE: (2) In-World (multi-phase)
ANCHOR PHASE: idx={k} "{label}" (chs {a}--{b})
ANCHOR QUERY CHAPTER: {qc}
ANCHOR PHASE POSITION: {position}
{relational}
HARD CONSTRAINTS:
- The scenario must NOT reproduce any specific canonical scene from the source novel. It must be a plausible-but-unwritten moment in the source world.
- {character} must remain in their established voice and time period.
- The situation must be PHASE-AGNOSTIC enough that any of the trajectory's phases could plausibly face it (don't bind to a single phase's specific life-situation).
- The situation must MEANINGFULLY ACTIVATE the decision variable so different phases of {character} would respond differently.

TASK:

1. SCENARIO: a plausible-but-unwritten situation around chapter {qc}. End just before {character} responds. Keep it phase-agnostic.

2. QUESTION: pose the choice point (see QUESTION STYLE).

3. {phase_block}

{style_block}

Return JSON: {{scenario, question, phase_responses: [...]}}."""
IW_RELATIONAL = "RELATIONAL TARGET: the scenario MUST involve direct interaction with {target}.\n"

# Table 24 (ARCANE App. P.2): Out-of-World designer.
OOW_SYSTEM = (
    "You are a narrative psychologist transposing a character's narrative identity into a "
    "NON-source era. You receive an explicit target era and a per-phase life-stage table. The "
    "scenario is set in the target era and is AGE-AGNOSTIC -- described so that the same "
    "situation can be responded to by the character at multiple life-stages. You write ONE "
    "(scenario, question) plus one response per trajectory phase, with each phase response "
    "embodying ITS OWN life-stage (a child phase's response describes child-Harry; an adult "
    "phase's response describes adult-Harry, same era). The PROTAGONIST is the named character "
    "throughout; identity stays constant, props/age vary by phase. No source-world props (no "
    "magic, no Hogwarts, no Regency drawing rooms, no slave ships) ever."
)
OOW_USER = """{context}
DECISION VARIABLE: {decision_variable}

PROBE TYPE: (3) Out-of-World (multi-phase, non-source era)
ANCHOR PHASE: idx={k} "{label}"
ABSTRACT AXIS: {abstract_axis}

ABSTRACT PHASE POSITIONS (era-agnostic):
{abstract_phases}

TARGET ERA (shared across all phase responses): {era_label}
  Description: {era_description}
{relational}
LIFE-STAGE LOCK -- each phase response describes {character} at THAT phase's life-stage in the target era. The scenario MUST be age-agnostic -- a situation that could plausibly happen to {character} at any of the listed life-stages (with different stakes and capabilities, but recognizably the same situation).

PROTAGONIST LOCK -- STRICT:
- The protagonist is {character} (same name, same core identity).
- The response is about {character} in every phase entry.
- Never re-cast under another name.

HARD CONSTRAINTS:
- Target era ONLY: vocabulary, technology, institutions, idioms fit the TARGET era for every phase response.
- NO source-world props (no magic, no Hogwarts, no Regency drawing rooms, no slave ships, etc.) ever.
- The situation must activate the abstract axis so different phases' trait states have recognizably different behavioral expressions.

TASK:
1. SCENARIO: a brief age-agnostic situation in the target era centered on {character}. Set the tension in 1-2 sentences (<=60 words). End just before {character} responds.
2. QUESTION: pose the choice point (see QUESTION STYLE).
3. {phase_block}

{style_block}

Return JSON: {{scenario, question, phase_responses: [...]}}."""
OOW_RELATIONAL = "RELATIONAL TARGET: {target} also appears with the same name but a role appropriate to the target era.\n"

REGENERATE_USER = """REGENERATE phase_idx={k} ONLY. Keep the SCENARIO and QUESTION fixed:
Scenario: {scenario}
Question: {question}

The previous response for this phase failed validation: {note}

Return JSON: {{phase_idx, gt_action, gt_speech, gt_thought, gt_typicality}} for phase_idx={k}."""

# Table 25 (ARCANE App. P.2): In-Scenario scene grounding, locator + extractor.
LOCATOR_SYSTEM = (
    "You are an editorial archivist for literary text. Given a brief moment description and a "
    "list of candidate events from the same chapter range, you select the one event whose "
    "content most directly enacts the moment. You reject the entire list if none enacts the "
    "moment."
)
LOCATOR_USER = """KEY MOMENT to locate:
"{key_moment}"

CHAPTER RANGE for this arc phase: {a}-{b}

CANDIDATE EVENTS:
{candidates}

TASK: Pick the ONE event whose CONTENT most directly enacts the key moment.
- Match by event semantics, not keyword overlap.
- For late-arc transformation moments, prefer candidates near the END of the chapter range.
- If no candidate genuinely depicts the moment, set event_id to null.

Return JSON: {{chapter, event_id, reasoning}}."""
EXTRACTOR_SYSTEM = (
    "You are an editorial archivist for literary text. Given a chapter and a target moment, you "
    "locate the exact passage and return it verbatim -- character-for-character, no paraphrase, "
    "no compression, no invention. You always include enough surrounding text to establish the "
    "scene AND show the character's actual response."
)
EXTRACTOR_USER = """Below is Chapter {chapter} of "{novel}".

You are looking for the specific passage that depicts this moment: Key moment : "{key_moment}" Event detail :
"{event}"

TASK: Find the passage and return:
- verbatim_passage: EXACT source text, character-for-character. Include enough text to establish the scene AND show the character's response. Typically 2-5 paragraphs (200-1500 words).
- first_words / last_words: opening and closing 5-8 words.

Do NOT paraphrase. Do NOT invent. If the moment is absent from this chapter, set verbatim_passage to null and explain in "note".

CHAPTER TEXT:
{chapter_text}

Return JSON: {{verbatim_passage, first_words, last_words, note}}."""


class DraftResponse(BaseModel):
    """One phase's reference response as the designer writes it."""

    phase_idx: SkipJsonSchema[int] = 0
    """The phase, by position in the draft (filled by the code)."""
    gt_action: str
    gt_speech: str | None = None
    gt_thought: str
    gt_typicality: Literal["typical", "plausible_tail"] = "typical"


class ProbeDraft(BaseModel):
    """A designer's answer (T22-T24)."""

    scenario: str
    question: str
    phase_responses: list[DraftResponse]


class SceneLocation(BaseModel):
    """The locator's answer (T25)."""

    chapter: SkipJsonSchema[int | None] = None
    """The chosen event's chapter (filled by the code from the candidates)."""
    event_id: str | None = None
    reasoning: str = ""


class ExtractedPassage(BaseModel):
    """The extractor's answer (T25)."""

    verbatim_passage: str | None = None
    first_words: str = ""
    last_words: str = ""
    note: str = ""


@per_call_schema(maxsize=16)
def draft_schema(n: int) -> type[ProbeDraft]:
    """A designer's answer for N phases: exactly N responses, the i-th for phase i."""
    return create_model(
        "ProbeDraft",
        __base__=ProbeDraft,
        phase_responses=(list_of(DraftResponse), exactly(n, "one per phase, in phase order")),
    )


def numbered_draft(draft: ProbeDraft) -> ProbeDraft:
    """``draft`` with each response's phase index, its position."""
    return draft.model_copy(
        update={"phase_responses": numbered(draft.phase_responses, "phase_idx")}
    )


@per_call_schema(maxsize=64)
def location_schema(offered: tuple[str, ...]) -> type[SceneLocation]:
    """The locator's answer: one of the ``offered`` event ids, or null."""
    event: Any = one_of(offered) | None
    return create_model(
        "SceneLocation",
        __base__=SceneLocation,
        event_id=(event, Field(default=None, description="An offered event id, or null.")),
    )


def located(answer: SceneLocation, offered: dict[str, int]) -> SceneLocation:
    """``answer`` with its event's chapter, as the candidates list it."""
    chapter = offered.get(answer.event_id) if answer.event_id is not None else None
    return answer.model_copy(update={"chapter": chapter})


def phase_lines(arc: ArcRecord, life_stages: Sequence[LifeStageTag] | None) -> str:
    """T18's phase list: label, first 140 chars of the position, query chapter (+ life stage)."""
    lines = []
    for k, phase in enumerate(arc.trajectory):
        qc = phase_query_chapter(phase)
        line = (
            f'phase_idx={k} "{phase.phase}" -- {phase.position_description[:140]} '
            f"query_chapter={qc} (knows only chs 1..{qc})"
        )
        if life_stages is not None:
            line += f" life-stage: {life_stages[k].life_stage} (~{life_stages[k].approx_age})"
        lines.append(line)
    return "\n".join(lines)


def designer_messages(
    probe_type: ProbeType,
    *,
    arc: ArcRecord,
    novel_title: str,
    k: int,
    decision_variable: str,
    passage: str = "",
    anchor_qc: int | None = None,
    life_stages: Sequence[LifeStageTag] | None = None,
    abstract_axis: str = "",
    abstract_phases: Sequence[str] = (),
    era: tuple[str, str] = ("", ""),
) -> list[BaseMessage]:
    """The T22 / T23 / T24 call for the cell anchored at phase ``k``."""
    n, phase = len(arc.trajectory), arc.trajectory[k]
    oow = probe_type == "out_of_world"
    stages = life_stages if oow else None
    common = {
        "context": arc_context_block(arc, novel_title, stages),
        "decision_variable": decision_variable,
        "k": k,
        "label": phase.phase,
        "character": arc.character,
        "style_block": STYLE_BLOCK.format(character=arc.character),
        "phase_block": PHASE_BLOCK.format(
            n=n, n_minus_1=n - 1, character=arc.character, phase_lines=phase_lines(arc, stages)
        ),
    }
    target = arc.relational_target
    if probe_type == "in_scenario":
        relational = IS_RELATIONAL.format(character=arc.character, target=target) if target else ""
        user = IS_USER.format(
            **common,
            a=phase.chapter_range[0],
            b=phase.chapter_range[1],
            qc=anchor_qc or phase_query_chapter(phase),
            relational=relational,
            passage=passage,
        )
        return [SystemMessage(content=IS_SYSTEM), HumanMessage(content=user)]
    if probe_type == "in_world":
        relational = IW_RELATIONAL.format(target=target) if target else ""
        user = IW_USER.format(
            **common,
            a=phase.chapter_range[0],
            b=phase.chapter_range[1],
            qc=phase_query_chapter(phase),
            position=phase.position_description,
            relational=relational,
        )
        return [SystemMessage(content=IW_SYSTEM), HumanMessage(content=user)]
    relational = OOW_RELATIONAL.format(target=target) if target else ""
    user = OOW_USER.format(
        **common,
        abstract_axis=abstract_axis,
        abstract_phases="\n".join(f"phase_idx={i}: {p}" for i, p in enumerate(abstract_phases)),
        era_label=era[0],
        era_description=era[1],
        relational=relational,
    )
    return [SystemMessage(content=OOW_SYSTEM), HumanMessage(content=user)]


def regenerate_messages(
    designer: Sequence[BaseMessage], draft: ProbeDraft, k: int, note: str
) -> list[BaseMessage]:
    """Spec default 16: the same designer call, scenario and question fixed, phase k only."""
    ask = REGENERATE_USER.format(k=k, scenario=draft.scenario, question=draft.question, note=note)
    return [*designer, AIMessage(content=draft.model_dump_json()), HumanMessage(content=ask)]


def locator_messages(
    *, key_moment: str, chapter_range: tuple[int, int], candidates: Sequence[tuple[int, str, str]]
) -> list[BaseMessage]:
    """The T25 locator: candidates are ``(chapter, event_id, description)``."""
    lines = "\n".join(f"Chapter {c} . {eid}: {desc}" for c, eid, desc in candidates)
    user = LOCATOR_USER.format(
        key_moment=key_moment, a=chapter_range[0], b=chapter_range[1], candidates=lines
    )
    return [SystemMessage(content=LOCATOR_SYSTEM), HumanMessage(content=user)]


def extractor_messages(
    *, novel: str, chapter: int, key_moment: str, event: str, chapter_text: str
) -> list[BaseMessage]:
    """The T25 extractor over the full chapter."""
    user = EXTRACTOR_USER.format(
        chapter=chapter, novel=novel, key_moment=key_moment, event=event, chapter_text=chapter_text
    )
    return [SystemMessage(content=EXTRACTOR_SYSTEM), HumanMessage(content=user)]
