"""The last profiler node: every fact checked against its passage, every sentence against facts.

Both methods end here. A fact the passages it cites do not state is dropped (and counted in
``usage.facts_unsupported``, listed in ``unsupported_facts``); a prose sentence no kept fact
supports is dropped from the profile (counted in ``usage.sentences_unsupported``, listed in
``prose_check``, ``None`` when ``check_citations`` is off). So a false fact with a real id
reaches neither ``profile.json`` nor the card. A fact or sentence no valid verdict came for
(still invalid after retries, even checked alone) is kept, listed as unchecked and counted
(``usage.facts_unchecked``, ``usage.sentences_unchecked``, both in ``usage.degraded``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.runtime import Runtime

from personae.agents.characterhub.citation_checker import check_citations
from personae.agents.characterhub.evidence_summarizer import CitedFact
from personae.agents.characterhub.prose_checker import ProseCheckRecord, check_prose
from personae.errors import NothingUsableError
from personae.graphs.characterhub.state import ProfilerContext, ProfilerState, profiler_context
from personae.llm import LLMUsage
from personae.memory.characterhub.dimensions import DIMENSIONS


@dataclass
class _Checked:
    """What the checks kept, dropped and could not check, and what they cost."""

    kept: list[CitedFact]
    profile: str
    usage: LLMUsage = field(default_factory=LLMUsage)
    dropped: list[CitedFact] = field(default_factory=list)
    unchecked: list[CitedFact] = field(default_factory=list)
    prose: ProseCheckRecord | None = None


async def _check(state: ProfilerState, context: ProfilerContext) -> _Checked:
    """Both checks (fast model); a profile left without a sentence leaves nothing usable."""
    passages = {s["id"]: str(s["content"]) for s in state.get("sources", [])}
    facts = [CitedFact.model_validate(f) for f in state.get("draft_facts", [])]
    if not context.check_citations:
        return _Checked(facts, state["profile"])
    model = context.llm("fast")
    kept, dropped, unchecked, usage = await check_citations(model, facts, passages)
    profile, prose, used = await check_prose(model, state["profile"], [f.text for f in kept])
    confirmed = len(kept) - len(unchecked)
    if not profile.strip() or not (confirmed or prose["supported"]):
        # One rule: a run keeps going only with a checked item left. Sentences without a claim
        # and unchecked (degraded) items are kept in a profile, but never make one alone.
        raise NothingUsableError(
            f"no sentence of {state['name']}'s profile is supported by a checked fact "
            f"({confirmed} of {len(facts)} facts confirmed, {prose['supported']} of "
            f"{prose['sentences']} sentences supported, {prose['no_claim']} without a claim)",
            NO_CHECKED_ITEM_FIX,
        )
    return _Checked(kept, profile, usage + used, dropped, unchecked, prose)


NO_CHECKED_ITEM_FIX = (
    "rerun with a stronger --model, or rerun the same command with --no-check-citations to keep "
    "the draft as is (its answers are reused: no model call)"
)


async def verify_profile(state: ProfilerState, runtime: Runtime[ProfilerContext]) -> dict[str, Any]:
    """Keep the facts their passages state and the sentences the kept facts support."""
    context = profiler_context(runtime)
    facts = state.get("draft_facts", [])
    checked = await _check(state, context)
    kept, dropped, unchecked, prose = (
        checked.kept,
        checked.dropped,
        checked.unchecked,
        checked.prose,
    )
    dimensions: dict[str, list[dict[str, Any]]] = {d: [] for d in DIMENSIONS}
    for fact in kept:
        dimensions[fact.dimension].append({"text": fact.text, "source_ids": fact.source_ids})
    # A draft with no cited fact at all was already flagged by the rewrite (zero_facts_notices).
    lost = facts and not kept
    notices = [f"no fact about {state['name']!r} survived the citation check"] if lost else []
    counts = {
        **checked.usage.as_dict(),
        "facts_checked": len(facts) if context.check_citations else 0,
        "facts_unsupported": len(dropped),
        "sentences_unsupported": len(prose["dropped"]) if prose else 0,
        "facts_unchecked": len(unchecked),
        "sentences_unchecked": len(prose["unchecked"]) if prose else 0,
    }
    return {
        "profile": checked.profile,
        "dimensions": dimensions,
        "prose_check": prose,
        "unsupported_facts": [f.model_dump() for f in dropped],
        "unchecked_facts": [f.model_dump() for f in unchecked],
        "notices": notices,
        "usage": counts,
    }
