"""ARCANE's judge (App. F): per-response APF / RPF / RAE (Table 35) and trajectory PTF (Table 36).

The rubrics decide comparability with the paper, so they are carried verbatim with the scale
placeholder ``__SCALE__`` filled at run time (100 by default). The answer schemas are built
for the scale (integers 1..scale: :func:`phase_judgement_schema`; an out-of-range answer is
re-asked, never clamped), and PTF is the mean of
the three sub-scores recomputed here: the judge's own ``average`` is untrusted (spec default 41).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, create_model

from personae.agents.answer_schemas import bounded, per_call_schema

# Table 35 (ARCANE App. P.4): per-response evaluator (APF / RPF / RAE), verbatim.
PHASE_JUDGE_SYSTEM = """You are an evaluator of character-grounded narrative responses. Compare a model's response to the Reference and score it on three dimensions, each from 1 to __SCALE__, using a phase-fidelity / mechanism framework.

The Reference represents how this character behaves at the target arc phase. Score whether the response is mechanism-equivalent to the *same* phase, not whether it merely looks like the character "in general."

Principles:
- The reference is an anchor, not a surface form. Score functional / mechanistic equivalence, not word-matching.
- Respect negative space. If the reference shows silence or inaction, treat that absence as part of the reference.
- Beware stereotype regression. When the reference shows the character resisting their canonical template (heroic, mentorly, etc.), penalize responses that fall back to the template.
- Penalize fabrication. Reference-absent props, names, or backstory that drive the response should lower the score.
- Respect the character's epistemic state. No future-event awareness, no information the character couldn't have at this point.

Dimensions:

1. APF -- Action Phase-Fidelity. Is the response's action mechanism- equivalent to ref_action at the target phase? Judge across three levels (Level A is strictest; B and C can partially salvage credit when A fails):
  - Level A -- Strategy match: same underlying strategy (e.g. withdrawal, confrontation, deflection, mediation, concealment, disclosure, support-seeking).
  - Level B -- Valence match: same emotional / relational valence (positive engagement / negative withdrawal / neutral observation).
  - Level C -- Target match: same target (same person, environment, or internal state). A match on all three is high; matching only B and C is mid; missing all three cannot be high. The top-level apf score should weight Level A heaviest, since strategy is what phase-fidelity ultimately rides on.

2. RPF -- Reasoning Phase-Fidelity. Parse both ref_thought and the response's reasoning into four mechanism slots and judge each slot:
  - Trigger: what event / utterance / internal state set this response in motion?
  - Appraisal: how does the character interpret / evaluate that trigger?
  - Goal: what short-term goal arises from the appraisal?
  - Strategy: how is the goal executed? Slot weights are NOT equal. The top-level rpf score should weight Strategy and Appraisal heaviest -- that is where phase- misalignment surfaces first. Trigger and Goal contribute less. If the response does not externalize its reasoning, infer the mechanism from the action.

3. RAE -- Reasoning-Action Entailment. Given the *reference reasoning (ref_thought)* as a fixed anchor, judge whether the response's action is a plausible action that this reasoning would license at this phase. This dimension is *conditioned on ref_thought*, not on the response's own reasoning -- a response can have internally self-consistent reasoning that still fails to follow from ref_thought, and that is the failure mode RAE is designed to catch. Three sub-checks:
  - gt_entailment: Treating ref_thought as the operative reasoning, is the response's action among the plausible actions that ref_thought would license? An action that contradicts ref_thought's appraisal, goal, or strategy fails here even if the action looks reasonable in isolation.
  - phase_consistency: Do the response's action and the response's reasoning belong to the same arc phase? (Phase-mismatch failure: action looks like one phase, reasoning like another -- even when each half is independently plausible.)
  - direction_consistency: Are the response's action and reasoning directionally aligned with each other? (Internal contradiction: reasoning "avoid the threat" but action "attack the threat".) The top-level rae score should reflect that any single low sub- check is enough to call the (action, reasoning) pair inadequately entailed. gt_entailment is the dominant sub-check -- the entire dimension exists to verify that the action follows from ref_thought, not merely that the response is internally coherent.

Output Format:
You score exactly one response. Return a single JSON object with this schema:

{"scores": {"apf": <1-__SCALE__>,
            "rpf": <1-__SCALE__>,
            "rae": <1-__SCALE__>}}

Rules:
- Every score is an integer from 1 to __SCALE__; use the full range. Higher = better (more match / more entailment).
- For RAE specifically, gt_entailment is the dominant sub-check: if the response's action cannot be derived from ref_thought, rae should be low even when phase_consistency and direction_consistency are high.
- Score this response on its own merits against the reference only. You are not comparing it to any other response, and you are not told which method produced it."""

# Table 36 (ARCANE App. P.4): trajectory evaluator (PTF), verbatim.
TRAJECTORY_JUDGE_SYSTEM = """You are an evaluator of character-grounded narrative trajectories. Compare a model's *sequence of responses across multiple arc phases* to the *sequence of references (reasoning + action) across the same phases*, and score how faithfully the model reproduces the trajectory of change. Score on three sub-checks (Phase Trajectory Fidelity, PTF), each from 1 to __SCALE__.

Each Reference at phase i represents how this character behaves at that arc phase. Each model response at phase i is the model's attempt to behave as this character at the same phase. Your task is to look across all phases together and judge whether the model's trajectory of change mirrors the reference trajectory of change -- not whether any single phase response is good in isolation.

Input format:
You will receive SCENARIO, QUESTION, and then N phase blocks in chronological order. Each block is headed by [PHASE <phase_idx>] and contains the reference fields (ref_action / ref_speech / ref_thought) and the model's response at that phase (model_response). Phase indices are taken from the source probe and may have gaps (an "unavailable" reference phase is omitted) -- use the indices as given.

Principles:
- Look across phases, not within one. A response that is locally fine at phase i can still belong to the wrong phase in the trajectory; that is the failure mode this evaluation is designed to catch.
- Reward differentiation only when it is grounded. A model that produces different responses across phases scores well only if those differences track the reference's differences -- random or stylistic variation does not count.
- Penalize phase collapse. A model that gives near-identical responses across phases has failed regardless of how well any single response matches its own phase.
- Penalize phase swapping. A response that better fits another phase's reference than its own is a trajectory error.
- Penalize fabrication and stereotype regression. Reference-absent props/backstory, or a fallback to the character's canonical template against a reference that resists it, should pull scores down.
- Respect the character's epistemic state at each phase -- no future- event awareness, no later-phase information leaking back into earlier-phase responses.
- An empty / refused response at a phase ("[empty response -- model returned nothing]" or similar) is part of the trajectory: treat it as a failed anchor at that phase and as a missing contribution to direction/shape.

Sub-checks:

1. ptf_alignment -- Per-phase anchoring. For each phase i, is the model's response at phase i closer in mechanism to the reference at phase i than to references at other phases? A high score means most responses are correctly anchored to their own phase; a low score means responses systematically drift toward the wrong phase or collapse into one undifferentiated voice.

2. ptf_direction -- Direction of change. Treating the reference sequence as defining a direction (e.g. fearful -> confident, dependent -> autonomous), does the model's sequence move along the same axis and in the same direction? A high score means the model's overall direction-of-travel matches the reference's; a low score means the model moves on a different axis, in the opposite direction, or shows no movement.

3. ptf_shape -- Shape and pacing of change. Beyond direction, does the model reproduce where on the trajectory the largest shifts occur and how gradual or abrupt those shifts are? A high score means inflection points and pacing line up with the reference; a low score means the model's trajectory has a clearly different internal structure (e.g. linear ramp where reference shows a sharp turning point, or inflection at the wrong phase). When N=2 there is no inflection structure to compare -- score shape on whether the magnitude of the single transition is similar to the reference's.

Output Format:
You score one (character, scenario) item across N phases. Return a single JSON object with this schema:

{"scores": {"ptf_alignment": <1-__SCALE__>,
            "ptf_direction": <1-__SCALE__>,
            "ptf_shape": <1-__SCALE__>},
 "average": <float>}

Rules:
- Every score is an integer from 1 to __SCALE__; use the full range. Higher = better.
- Phase collapse -- near-identical responses across phases -- drives all three sub-checks down, not just ptf_alignment. A collapsed trajectory has no direction and no shape to evaluate.
- average is the mean of the three sub-check scores, rounded to 2 decimals.
- Score this trajectory on its own merits against the reference only. You are not comparing it to any other model or method, and you are not told which method produced these responses."""

NO_THOUGHT_NOTE = (
    "\n\nThe reference reasoning (ref_thought) is not given: infer the reference reasoning from "
    "ref_action and ref_speech alone."
)
"""App. F's no-thought ablation (its system prompts are not printed; this is our wording).

App. F: the variants "drop the ``ref_thought`` mention and instruct the judge to infer the
reference reasoning from ``ref_action`` and ``ref_speech`` alone. The sub-check definitions
are unchanged." So the sub-check text of T35/T36 stays as printed; T36's input-format line
loses ``/ ref_thought`` (the one mention outside the sub-checks); both get this note, and the
user messages carry no ``ref_thought`` line (the T35/T36 templates: "omitted in the no-thought
ablation")."""
TRAJECTORY_FIELDS = "(ref_action / ref_speech / ref_thought)"
TRAJECTORY_FIELDS_NO_THOUGHT = "(ref_action / ref_speech)"
EMPTY_RESPONSE = "[empty response -- model returned nothing]"


class PhaseScores(BaseModel):
    """APF / RPF / RAE."""

    apf: int
    rpf: int
    rae: int


class PhaseJudgement(BaseModel):
    """T35's answer."""

    scores: PhaseScores


class TrajectoryScores(BaseModel):
    """The three PTF sub-checks."""

    ptf_alignment: int
    ptf_direction: int
    ptf_shape: int


class TrajectoryJudgement(BaseModel):
    """T36's answer; ``average`` is the judge's and is recomputed in code."""

    scores: TrajectoryScores
    average: float | None = None

    def ptf(self) -> float:
        """PTF = mean of the three sub-checks (rounded to 2 decimals, as the rubric says)."""
        s = self.scores
        return round((s.ptf_alignment + s.ptf_direction + s.ptf_shape) / 3, 2)


@per_call_schema(maxsize=8)
def phase_judgement_schema(scale: int) -> type[PhaseJudgement]:
    """T35's answer on a 1..``scale`` rubric: every score an integer within it."""
    scores = create_model(
        "PhaseScores",
        __base__=PhaseScores,
        apf=(int, bounded(1, scale)),
        rpf=(int, bounded(1, scale)),
        rae=(int, bounded(1, scale)),
    )
    return create_model("PhaseJudgement", __base__=PhaseJudgement, scores=(scores, ...))


@per_call_schema(maxsize=8)
def trajectory_judgement_schema(scale: int) -> type[TrajectoryJudgement]:
    """T36's answer on a 1..``scale`` rubric: every score an integer within it."""
    scores = create_model(
        "TrajectoryScores",
        __base__=TrajectoryScores,
        ptf_alignment=(int, bounded(1, scale)),
        ptf_direction=(int, bounded(1, scale)),
        ptf_shape=(int, bounded(1, scale)),
    )
    return create_model("TrajectoryJudgement", __base__=TrajectoryJudgement, scores=(scores, ...))


def _system(text: str, scale: int, include_thought: bool) -> str:
    system = text.replace("__SCALE__", str(scale))
    return system if include_thought else system + NO_THOUGHT_NOTE


def phase_judge_messages(
    *,
    scenario: str,
    question: str,
    phase_label: str,
    gt_action: str,
    gt_speech: str | None,
    gt_thought: str,
    response: str,
    scale: int = 100,
    include_thought: bool = True,
) -> list[BaseMessage]:
    """The T35 call for one (probe, phase, mode, model) answer."""
    lines = [
        f"scenario: {scenario}",
        f"question: {question}",
        f"phase: {phase_label}",
        "",
        "[Reference]",
        f"ref_action: {gt_action}",
        f"ref_speech: {gt_speech or '(none)'}",
    ]
    if include_thought:
        lines.append(f"ref_thought: {gt_thought}")
    lines += ["", "[Candidate]", f"response: {response.strip() or EMPTY_RESPONSE}"]
    system = _system(PHASE_JUDGE_SYSTEM, scale, include_thought)
    return [SystemMessage(content=system), HumanMessage(content="\n".join(lines))]


def trajectory_judge_messages(
    *,
    scenario: str,
    question: str,
    phases: Sequence[tuple[int, str, str | None, str, str]],
    scale: int = 100,
    include_thought: bool = True,
) -> list[BaseMessage]:
    """The T36 call over the available phases, in order, original indices kept (gaps allowed).

    ``phases`` holds (phase_idx, gt_action, gt_speech, gt_thought, response).
    """
    blocks = [f"SCENARIO: {scenario}", f"QUESTION: {question}"]
    for idx, action, speech, thought, response in phases:
        block = [f"[PHASE {idx}]", f"ref_action: {action}", f"ref_speech: {speech or '(none)'}"]
        if include_thought:
            block.append(f"ref_thought: {thought}")
        block.append(f"model_response: {response.strip() or EMPTY_RESPONSE}")
        blocks.append("\n".join(block))
    system = _system(TRAJECTORY_JUDGE_SYSTEM, scale, include_thought)
    if not include_thought:
        system = system.replace(TRAJECTORY_FIELDS, TRAJECTORY_FIELDS_NO_THOUGHT)
    return [SystemMessage(content=system), HumanMessage(content="\n\n".join(blocks))]
