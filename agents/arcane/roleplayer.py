"""ARCANE's role-play prompt (Table 31) and the per-mode context payloads (Table 32).

Every mode shares the T31 template and differs only in the ``<context>`` block; the Arc payload
is the final-stage axis JSON truncated at the query chapter. Rendering is pure so the CLI
(``personae arcane prompt``), the graph and the no-future audit all see the same text.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from personae.memory.arcane.records import BOOKKEEPING_FIELDS, ArcRecord

Mode = Literal["vanilla", "summary", "rag", "lifechoice", "timechara", "arc"]
MODES: tuple[Mode, ...] = ("vanilla", "summary", "rag", "lifechoice", "timechara", "arc")
ABLATION_MODES = ("mixedarc", "archint", "pov")
"""App. K ablations of the Arc context (another character's arc, or one line per axis) and
App. G's POV control (the Arc prompt with the register paragraph appended)."""

# Table 31 (ARCANE App. P.3): shared role-play system + user templates, verbatim.
ROLEPLAY_SYSTEM = (
    'You are {character}, from "{novel}". You are at the point in the story corresponding to '
    "chapter {query_chapter}."
)
ROLEPLAY_RELATIONAL = "You are interacting with {target_character}."
ROLEPLAY_CONTEXT = "Background you have access to:\n<context>\n{context}\n</context>"
ROLEPLAY_USER = "Scenario:\n{scenario}\n\nQuestion:\n{question}"
ROLEPLAY_HINT = "(HINT: {hint})"

# ARCANE App. G (POV control, §5.3), verbatim: the paragraph appended to the Arc run's prompt.
POV_PARAGRAPH = (
    "Respond IN CHARACTER, in the first person, in the present tense. Speak AS this character, "
    "not ABOUT them. Do NOT narrate from the outside; do not write ‘X would respond’ or "
    "‘X’s manner is one of’; speak as the character. Use period-appropriate diction "
    "natural to the source novel. Do not mention ‘axes’, ‘phases’, or any "
    "meta-analytic framing."
)

ALWAYS_STRIPPED = ("literary_validation", "evidence_summary")
"""Table 32, Arc: always removed from the payload."""
STRIPPED_WHEN_HIDDEN = ("pole_end", "arc_direction")
"""Table 32, Arc: removed when at least one later phase is hidden (they give the ending away)."""
INTERNAL_FIELDS = (*BOOKKEEPING_FIELDS, "confidence", "source")
"""Our bookkeeping, stripped too (spec default 13): the model sees the axis content only."""


def arc_payload(arc: ArcRecord, query_chapter: int) -> dict[str, Any]:
    """The Arc-mode context for ``arc`` at ``query_chapter`` (Table 32, spec default 11).

    Phase j is hidden iff its chapter range starts after ``query_chapter``.
    """
    data = arc.model_dump(mode="json")
    for name in (*ALWAYS_STRIPPED, *INTERNAL_FIELDS):
        data.pop(name, None)
    visible = [p for p in data["trajectory"] if int(p["chapter_range"][0]) <= query_chapter]
    if len(visible) < len(data["trajectory"]):
        for name in STRIPPED_WHEN_HIDDEN:
            data.pop(name, None)
    data["trajectory"] = visible
    return data


def arc_context(arcs: list[ArcRecord], query_chapter: int) -> str:
    """The Arc payload(s) as JSON text: one axis (T32) or several (``arc_scope=character``)."""
    payloads = [arc_payload(a, query_chapter) for a in arcs]
    value: Any = payloads[0] if len(payloads) == 1 else payloads
    return json.dumps(value, ensure_ascii=False, indent=2)


def mixedarc_donor(scope: str, character: str, arcs: list[ArcRecord]) -> str | None:
    """App. K's MIXEDARC donor: another character of the novel with arcs (None if none).

    Chosen by hashing the probe id into the sorted list of such characters (spec default 35).
    """
    donors = sorted({a.character for a in arcs if a.character != character})
    if not donors:
        return None
    return donors[int(hashlib.sha1(scope.encode()).hexdigest(), 16) % len(donors)]


def mixedarc_arc(donor: str, character: str, axis_id: str, arcs: list[ArcRecord]) -> ArcRecord:
    """The donor's axis with the same id, else its final_intra_01 (else its first).

    Its top-level ``character`` is rewritten to the queried name.
    """
    own = [a for a in arcs if a.character == donor]
    chosen = next((a for a in own if a.axis_id == axis_id), None)
    chosen = chosen or next((a for a in own if a.axis_id == "final_intra_01"), own[0])
    return chosen.model_copy(update={"character": character})


def archint_lines(arcs: list[ArcRecord], query_chapter: int) -> str:
    """App. K's ARCHINT: ``Axis: <name> / Phase: k of N (label: <label>)`` per axis.

    k is 1-based (spec default 36): the last phase started by the query chapter; axes not
    started yet are left out.
    """
    lines = []
    for arc in arcs:
        started = [i for i, p in enumerate(arc.trajectory) if p.chapter_range[0] <= query_chapter]
        if started:
            k = started[-1]
            lines.append(
                f"Axis: {arc.axis_name} / Phase: {k + 1} of {len(arc.trajectory)} "
                f"(label: {arc.trajectory[k].phase})"
            )
    return "\n".join(lines)


def render_system(
    *, character: str, novel: str, query_chapter: int, target: str | None, context: str
) -> str:
    """The T31 system message."""
    parts = [ROLEPLAY_SYSTEM.format(character=character, novel=novel, query_chapter=query_chapter)]
    if target:
        parts.append(ROLEPLAY_RELATIONAL.format(target_character=target))
    if context.strip():
        parts.append(ROLEPLAY_CONTEXT.format(context=context))
    return "\n\n".join(parts)


def with_pov(system: str) -> str:
    """App. G's POV control: the Arc system prompt, byte-identical, plus one paragraph.

    The paper appends the paragraph to "the byte-identical prompt_system and prompt_user" and
    contrasts the run with "the original system prompt", so it goes at the end of the system
    message, after a blank line (our reading; the user message is unchanged).
    """
    return f"{system}\n\n{POV_PARAGRAPH}"


def render_user(*, scenario: str, question: str, hint: str | None) -> str:
    """The T31 user message (with the TimeChara hint when one was produced)."""
    text = ROLEPLAY_USER.format(scenario=scenario, question=question)
    return f"{text}\n\n{ROLEPLAY_HINT.format(hint=hint)}" if hint else text


def roleplay_messages(system: str, user: str) -> list[BaseMessage]:
    """The T31 call: one sample, no decoding parameters (the paper passes none)."""
    return [SystemMessage(content=system), HumanMessage(content=user)]
