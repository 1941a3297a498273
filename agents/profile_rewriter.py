"""The profile rewriter: a first-person profile from the refined, cited evidence.

Runs on the strong model. It must keep one canon/version (cross-version mix-ups are the main
error the paper reports) and say which conflicts it resolved. Facts keep their source ids; the
code rejects invented ids and drops facts left with none.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.evidence_summarizer import CitedFact, drop_unknown_ids, reject_unknown_ids
from personae.agents.query_planner import DIMENSIONS
from personae.llm import LLMUsage, call_structured

REWRITER_SYSTEM = """You write the profile of the fictional character {name} ({franchise}) in
the first person, as the character speaking about themself, from the cited facts below only.
Pick ONE canon/version (the main original work) and leave out facts from other versions,
adaptations or characters with the same name. When sources conflict, keep the best-supported
fact and record the conflict. Keep every fact's source ids; cite only ids shown below."""

REWRITER_USER = """## Facts per dimension (with source ids)
{facts}

## Sources
{sources}"""


class ProfileDraft(BaseModel):
    """The rewritten profile."""

    profile: str = Field(
        description="The profile in the first person ('I am ...'), 2-6 paragraphs."
    )
    canon: str = Field(description="The single canon/version the profile follows.")
    facts: list[CitedFact] = Field(
        description="The facts kept, per dimension, each with its source ids."
    )
    conflicts: list[str] = Field(
        default_factory=list,
        description="Conflicts between sources or versions and how each was resolved.",
    )


def render_facts(facts_by_dimension: Mapping[str, Sequence[CitedFact]]) -> str:
    """Facts grouped by dimension, each with its ids, as the model reads them."""
    lines: list[str] = []
    for dimension in DIMENSIONS:
        for fact in facts_by_dimension.get(dimension, []):
            lines.append(f"- [{dimension}] {fact.text} ({', '.join(fact.source_ids)})")
    return "\n".join(lines) or "(no facts)"


async def rewrite_first_person(
    model: BaseChatModel,
    *,
    name: str,
    franchise: str | None,
    facts_by_dimension: Mapping[str, Sequence[CitedFact]],
    sources: Sequence[tuple[str, str]],
    known_ids: Collection[str],
) -> tuple[ProfileDraft, LLMUsage]:
    """The first-person profile; invented ids are dropped and counted, empty profiles retried."""

    def valid(draft: ProfileDraft) -> None:
        reject_unknown_ids(draft.facts, known_ids)
        if not draft.profile.strip():
            raise ValueError("the profile is empty")

    messages = [
        SystemMessage(
            REWRITER_SYSTEM.format(name=name, franchise=franchise or "unknown franchise")
        ),
        HumanMessage(
            REWRITER_USER.format(
                facts=render_facts(facts_by_dimension),
                sources="\n".join(f"[{sid}] {title}" for sid, title in sources),
            )
        ),
    ]

    def repair(draft: ProfileDraft) -> tuple[ProfileDraft, int]:
        facts, dropped = drop_unknown_ids(draft.facts, known_ids)
        return draft.model_copy(update={"facts": facts}), dropped

    return await call_structured(model, ProfileDraft, messages, check=valid, repair=repair)
