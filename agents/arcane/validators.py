"""ARCANE probe generation, Stage iii: the validators (Tables 26-30).

Q-Voice (T26) and Q-PhaseFit (T27, blind to the target phase) judge every phase response;
Q-Anchor (T28, In-Scenario) or Q-World (T29, In-World / Out-of-World) judge the whole probe;
Q-Discrim (T30) annotates weak adjacent pairs and never drops. The PhaseFit wrapper (App. B)
turns the predicted phase into pass / adjacent / off_phase in code. The answer schemas are
built for the arc's N phases: a predicted phase is one of 0..N-1, a weak pair is named by its
first phase (0..N-2) and the code adds the next one, so a pair is always adjacent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from personae.agents.answer_schemas import bounded, list_of, per_call_schema
from personae.agents.arcane.designers import DraftResponse

# Table 26 (ARCANE App. P.2): Q-Voice validator, verbatim.
VOICE_SYSTEM = (
    "You are a literary editor judging whether a single phase response sounds like that "
    "character at THAT phase, in the given setting. You catch anachronistic vocabulary for the "
    "setting (e.g., 'group chat' in Regency drawing-room; 'pull camera times' in 1990s magical "
    "Britain), broken-character self-narration, generic dialogue, and tonal mismatches. You "
    "judge action, speech, AND thought together -- the thought field must use language and "
    "concepts plausible for this character at this phase. gt_speech being null is NOT a "
    "failure on its own."
)
VOICE_USER = """CHARACTER: {character}
PHASE: idx={k} "{label}" -- {position}
KNOWLEDGE CUTOFF: phase responds as if asked at chapter {qc} (knows only events up to that chapter).
SETTING: {setting}.

PROBE SCENARIO:
  {scenario}

THIS PHASE'S RESPONSE:
  Action: {action}
  Speech: {speech}
  Thought: {thought}
  Typicality: {typicality}

TASK: Does this response sound like {character} at this phase, in this setting, given only knowledge up to chapter {qc}?
Catch:
- anachronistic word choice for the SETTING
- references to events the phase cannot know yet
- broken-character self-narration
- generic dialogue or thought
- tonal mismatches (young character with adult articulation; vice versa)

Note: gt_speech being null is NOT a failure.

- verdict: "pass" if response is in character; "fail" otherwise.
- note: 1 sentence -- what's right or wrong.

Return JSON: {{verdict, note}}."""

# Table 27 (ARCANE App. P.2): Q-PhaseFit validator, verbatim (blind to the target phase).
PHASEFIT_SYSTEM = (
    "You are a psychometric reviewer. Given a Character Arc's trajectory (each phase's "
    "position_description), the decision variable, and ONE phase response (action + speech + "
    "thought), you identify the trajectory phase this response is most diagnostic of. You judge "
    "from the WHOLE response -- action, speech, and especially thought (how the character "
    "construes the situation). You are NOT told which phase generated this response. Pick the "
    "phase whose POSITION DESCRIPTION best matches what the response actually expresses, not "
    "the phase whose label sounds closest."
)
PHASEFIT_USER = """DECISION VARIABLE: {decision_variable}
POLE START: {pole_start}
POLE END: {pole_end}

ARC PHASES (0..{n_minus_1}):
{phases}

PROBE:
  Scenario: {scenario}
  Question: {question}
  Response action: {action}
  Response speech: {speech}
  Response thought: {thought}

TASK: Based on the response's ACTION + SPEECH + THOUGHT, identify which trajectory phase this response is most diagnostic of.

- most_likely_phase_idx: integer 0..{n_minus_1}. Pick the phase whose POSITION DESCRIPTION best matches what the response actually expresses. Use the THOUGHT field heavily -- it often carries phase-distinguishing cognitive style when action is constrained.
- confidence: "low" | "medium" | "high".
- note: 1 sentence -- the deciding cue.

You are NOT told which phase generated this probe. Judge solely on what the response expresses. Adjacent classification is fine and expected (phases legitimately overlap). If two adjacent phases fit equally well, pick either and use confidence="medium" or "low".

Return JSON: {{most_likely_phase_idx, confidence, note}}."""

# Table 28 (ARCANE App. P.2): Q-Anchor validator, verbatim.
ANCHOR_SYSTEM = (
    "You are an editorial fact-checker. Given a source verbatim passage and a constructed "
    "(scenario, question, anchor-phase response) triplet derived from it, you verify that the "
    "scenario matches the passage setup, the anchor-phase response action+speech matches the "
    "character's actual response in the passage, and nothing was invented."
)
ANCHOR_USER = """SOURCE PASSAGE (verbatim):
\"\"\"
{passage}
\"\"\"

CONSTRUCTED PROBE:
Scenario: {scenario}
Question: {question}
Anchor phase (idx={k}) response:
  Action: {action}
  Speech: {speech}
  Thought: {thought}

TASK: Verify scenario + anchor-phase response are faithful to the source.
- Scenario reflects the passage's setup (location, present characters, tension)?
- Anchor action+speech matches what the character actually does in the passage (paraphrase OK; invention NOT OK)?
- Thought is plausibly inferable from what the passage shows of the character's mind in this beat?

- verdict: "pass" / "fail"
- note: 1 sentence.

Return JSON: {{verdict, note}}."""

# Table 29 (ARCANE App. P.2): Q-World validator, verbatim.
WORLD_SYSTEM = (
    "You are a worldbuilding reviewer. You verify that a probe's scenario and phase responses "
    "respect the rules of the probe's setting. For In-World probes you check source-world rules "
    "(era, technology, magic) and that no canonical scene is reproduced. For Out-of-World probes "
    "you check internal consistency within the named target era, the absence of any "
    "source-world props, and that each phase response describes the character at the "
    "life-stage assigned to that phase."
)
WORLD_USER = """PROBE TYPE CONTEXT:
{type_context}

CHARACTER: {character}
SCENARIO: {scenario}

PHASE RESPONSE SUMMARIES:
{summaries}

TASK:
- verdict: "pass" if the rules above are respected throughout,
  "fail" otherwise.
- note: 1 sentence -- what's consistent or inconsistent.

Return JSON: {{verdict, note}}."""
WORLD_OOW = """(3) Out-of-World -- the scenario is set in TARGET ERA "{era_label}".
  Description: {era_description}
  Per-phase life-stage requirements:
{stages}
  CHECK:
  (a) target-era internal consistency (no anachronisms);
  (b) NO source-world props leak in (no magic, no Hogwarts, etc.);
  (c) each phase response describes {character} at its required life-stage;
  (d) {character} is the named protagonist throughout."""
WORLD_IW = """(2) In-World -- the scenario is in the world of "{novel}" around chapter {qc}.
  CHECK:
  (a) scenario obeys the source world's rules (era, technology, magic system if any);
  (b) only characters who would exist at this point in the story are present;
  (c) nothing reproduces a specific canonical scene from the source."""

# Table 30 (ARCANE App. P.2): Q-Discrim validator, verbatim (annotation only).
DISCRIM_SYSTEM = (
    "You are a psychometric reviewer judging cross-phase variation within one probe. Given the "
    "decision variable, the trajectory's phase descriptions, and N phase responses to the SAME "
    "scenario+question, you judge whether each adjacent pair is differentiated on the "
    "decision-variable axis. The differentiation can live in ACTION, SPEECH, or THOUGHT -- when "
    "scenes constrain action, the cognitive style often carries the phase signal. Adjacent "
    "overlap is theoretically expected when position descriptions are themselves close -- this "
    "is reporting, not gatekeeping."
)
DISCRIM_USER = """DECISION VARIABLE: {decision_variable}

SHARED SCENARIO: {scenario}
SHARED QUESTION: {question}

PHASE RESPONSES (all to the SAME scenario+question):

{blocks}

TASK: For each ADJACENT phase pair, judge whether the two responses are differentiated on the decision variable. The differentiation can live in ACTION, SPEECH, or (often, when the scene constrains action) THOUGHT -- phase-specific cognitive construal carries the trait signal when behavior is similar.

For each adjacent pair (idx k, idx k+1) of the trajectory:
- separation:
  "separated" -- responses commit to genuinely different decision-variable answers, in the direction phases imply.
  "similar" -- responses give the same/near-same answer; this is FINE if the phases' position_descriptions themselves are close.
  "ambiguous" -- cannot tell because responses cite different stakes or framings.
- note: 1 sentence -- what cued your judgment.

Return weak_pairs[] containing entries for pairs where separation is
"similar" or "ambiguous". If a pair is "separated", omit it from weak_pairs.

This is annotation, NOT gatekeeping -- nothing drops on this verdict.

Return JSON: {{weak_pairs: [{{from_phase_idx, to_phase_idx, separation, note}}], note}}."""

SUMMARY_CHARS = 200
"""Q-World's truncated phase summaries (spec default 20)."""


class Verdict(BaseModel):
    """Q-Voice / Q-Anchor / Q-World answer."""

    verdict: Literal["pass", "fail"]
    note: str = ""


class PhaseFit(BaseModel):
    """Q-PhaseFit answer."""

    most_likely_phase_idx: int
    confidence: Literal["low", "medium", "high"]
    note: str = ""


class WeakPair(BaseModel):
    """An adjacent pair Q-Discrim found weakly separated."""

    from_phase_idx: int
    to_phase_idx: SkipJsonSchema[int] = 0
    """``from_phase_idx + 1``: adjacent pairs only (filled by the code)."""
    separation: Literal["separated", "similar", "ambiguous"]
    note: str = ""


class Discrimination(BaseModel):
    """Q-Discrim answer."""

    weak_pairs: list[WeakPair] = Field(default_factory=list)
    note: str = ""


def phasefit_verdict(predicted: int, target: int) -> Literal["pass", "adjacent", "off_phase"]:
    """App. B wrapper: exact, one off, or two or more off."""
    gap = abs(predicted - target)
    return "pass" if gap == 0 else ("adjacent" if gap == 1 else "off_phase")


@per_call_schema(maxsize=16)
def phasefit_schema(n: int) -> type[PhaseFit]:
    """Q-PhaseFit's answer for N phases: the predicted phase is one of 0..N-1."""
    return create_model(
        "PhaseFit",
        __base__=PhaseFit,
        most_likely_phase_idx=(int, bounded(0, n - 1, f"a phase idx, 0..{n - 1}")),
    )


@per_call_schema(maxsize=16)
def discrimination_schema(n: int) -> type[Discrimination]:
    """Q-Discrim's answer for N phases: weak pairs (k, k+1) named by k in 0..N-2."""
    pair = create_model(
        "WeakPair",
        __base__=WeakPair,
        from_phase_idx=(int, bounded(0, max(n - 2, 0), "k of the pair (k, k+1)")),
    )
    return create_model(
        "Discrimination",
        __base__=Discrimination,
        weak_pairs=(list_of(pair), Field(default_factory=list)),
    )


def adjacent_pairs(answer: Discrimination) -> Discrimination:
    """``answer`` with each weak pair's second phase, the one after its first."""
    pairs = [p.model_copy(update={"to_phase_idx": p.from_phase_idx + 1}) for p in answer.weak_pairs]
    return answer.model_copy(update={"weak_pairs": pairs})


def _speech(value: str | None, empty: str) -> str:
    return value if value else empty


def voice_messages(
    *,
    character: str,
    k: int,
    label: str,
    position: str,
    qc: int,
    setting: str,
    scenario: str,
    response: DraftResponse,
) -> list[BaseMessage]:
    """The T26 call for one response."""
    user = VOICE_USER.format(
        character=character,
        k=k,
        label=label,
        position=position,
        qc=qc,
        setting=setting,
        scenario=scenario,
        action=response.gt_action,
        speech=_speech(response.gt_speech, "(none -- pure action response)"),
        thought=response.gt_thought,
        typicality=response.gt_typicality,
    )
    return [SystemMessage(content=VOICE_SYSTEM), HumanMessage(content=user)]


def phasefit_messages(
    *,
    decision_variable: str,
    pole_start: str,
    pole_end: str,
    phases: Sequence[tuple[str, str]],
    scenario: str,
    question: str,
    response: DraftResponse,
) -> list[BaseMessage]:
    """The T27 call: every phase's (label, position), never the target index."""
    listed = "\n".join(f'idx={i} "{label}" -- {pos}' for i, (label, pos) in enumerate(phases))
    user = PHASEFIT_USER.format(
        decision_variable=decision_variable,
        pole_start=pole_start,
        pole_end=pole_end,
        n_minus_1=len(phases) - 1,
        phases=listed,
        scenario=scenario,
        question=question,
        action=response.gt_action,
        speech=_speech(response.gt_speech, "(none)"),
        thought=response.gt_thought,
    )
    return [SystemMessage(content=PHASEFIT_SYSTEM), HumanMessage(content=user)]


def anchor_messages(
    *, passage: str, scenario: str, question: str, k: int, response: DraftResponse
) -> list[BaseMessage]:
    """The T28 call."""
    user = ANCHOR_USER.format(
        passage=passage,
        scenario=scenario,
        question=question,
        k=k,
        action=response.gt_action,
        speech=_speech(response.gt_speech, "(none)"),
        thought=response.gt_thought,
    )
    return [SystemMessage(content=ANCHOR_SYSTEM), HumanMessage(content=user)]


def world_messages(
    *, character: str, scenario: str, responses: Sequence[DraftResponse], type_context: str
) -> list[BaseMessage]:
    """The T29 call with truncated phase summaries."""
    summaries = "\n".join(
        f"  phase_idx={r.phase_idx}: action={r.gt_action[:SUMMARY_CHARS]} | "
        f"thought={r.gt_thought[:SUMMARY_CHARS]}"
        for r in responses
    )
    user = WORLD_USER.format(
        type_context=type_context, character=character, scenario=scenario, summaries=summaries
    )
    return [SystemMessage(content=WORLD_SYSTEM), HumanMessage(content=user)]


def discrim_messages(
    *,
    decision_variable: str,
    scenario: str,
    question: str,
    phases: Sequence[tuple[str, str]],
    responses: Sequence[DraftResponse],
) -> list[BaseMessage]:
    """The T30 call over every available response."""
    blocks = "\n\n".join(
        f'Phase idx={r.phase_idx} "{phases[r.phase_idx][0]}" (pos: {phases[r.phase_idx][1][:100]}...)\n'
        f"  Action: {r.gt_action}\n  Speech: {_speech(r.gt_speech, '(none)')}\n"
        f"  Thought: {r.gt_thought}"
        for r in responses
    )
    user = DISCRIM_USER.format(
        decision_variable=decision_variable, scenario=scenario, question=question, blocks=blocks
    )
    return [SystemMessage(content=DISCRIM_SYSTEM), HumanMessage(content=user)]
