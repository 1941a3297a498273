"""The profile rewriters: a first-person profile from the refined, cited evidence.

The rewrite role (``rewrite_model``, default the strong model). ``rewrite_first_person`` is ours
(the ``planned`` method): it reads the cited notes per dimension and the passages they cite.
``rewrite_paper_profile_text`` is the paper's Table 8 prompt over the R² document, verbatim, its
answer kept as written (the ``paper`` method). With our citation check on (always for
``planned``, opt-in for ``paper``: ``rewrite_paper_profile``), the rewrite also lists the facts
the profile states, each citing source ids: the answer's schema is built per call (the known ids
as an enum, a non-blank profile), the code drops facts left with no id, and then checks each
fact against the passages it cites. The canon rule (cross-version mix-ups are the main error the
paper reports) is ours: on for ``planned``, opt-in for ``paper``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from personae.agents.answer_schemas import list_of, non_blank, per_call_schema
from personae.agents.characterhub.evidence_summarizer import CitedFact, cited_fact_schema
from personae.errors import NothingUsableError
from personae.llm import LLMUsage, call_structured, call_text
from personae.memory.characterhub.dimensions import DIMENSIONS

REWRITER_SYSTEM = """You write the profile of the fictional character {name} ({franchise}) in
the first person, as the character speaking about themself, from the cited facts and the source
passages below only. {canon}
Be comprehensive: personality first (you may analyse it from the character's experiences), then
background, appearance, motivations, abilities, relationships, key experiences and decisions,
and the character's arc; as long as the evidence warrants. Leave out characters with the same
name. When sources conflict, keep the best-supported fact and record the conflict. List the
facts the profile states, each with the ids of the passages that state it and a short exact
quote from one of them; cite only ids shown below."""

REWRITER_USER = """## Facts per dimension (with source ids)
{facts}

## Source passages
{sources}"""

# CharacterHub, Appendix F, Table 8: profile rewriting prompt, verbatim (its "include include"
# and "character's, background" typos kept).
PAPER_REWRITE_PROMPT = """Please completely rewrite all the above information from {entity}'s first-person perspective. Ensure that the information is comprehensive and accurate. You need to focus on the character's personality, which you could also analyze based on the characters' experiences. Besides, include include the character's, background, physical description, core motivations, notable attributes, relationships, key experiences, major plot involvement and key decisions or actions, character arc or development throughout the story, and other important details, if they appear in the information that you obtained."""

PAPER_FACTS_REQUEST = """{canon}
Put the rewritten profile in `profile`. In `facts`, list the facts the profile states, each
with its dimension ({dimensions}), the [S#] ids the information above cites for it and a short
exact quote of that information; cite only ids that appear above."""


class ProfileDraft(BaseModel):
    """The rewritten profile."""

    profile: str = Field(description="The profile in the first person ('I am ...').")
    facts: list[CitedFact] = Field(
        description="The facts kept, per dimension, each with its source ids."
    )
    conflicts: list[str] = Field(
        default_factory=list,
        description="Conflicts between sources or versions and how each was resolved.",
    )


@per_call_schema(maxsize=32)
def profile_draft_schema(known_ids: tuple[str, ...]) -> type[ProfileDraft]:
    """``ProfileDraft`` with a non-blank profile and facts citing only ``known_ids``."""
    facts: Any = list_of(cited_fact_schema(known_ids)) if known_ids else list[CitedFact]
    return create_model(
        "ProfileDraft",
        __base__=ProfileDraft,
        profile=(str, non_blank("The profile in the first person ('I am ...').")),
        facts=(
            facts,
            Field(
                max_length=None if known_ids else 0,
                description="The facts kept, per dimension, each with its source ids.",
            ),
        ),
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
    passages: str,
    known_ids: Collection[str],
    canon: str,
    reminder: str | None = None,
) -> tuple[ProfileDraft, LLMUsage]:
    """The first-person profile from notes and ``passages`` (rendered ``[S#] title`` blocks).

    The schema lets the model cite only ``known_ids`` and rejects a blank profile (retried;
    still invalid: :class:`~personae.llm.InvalidAnswerError`). ``reminder`` is appended to the request when the caller asks again (a draft whose facts all lost their
    sources).
    """
    messages = [
        SystemMessage(
            REWRITER_SYSTEM.format(
                name=name, franchise=franchise or "unknown franchise", canon=canon
            )
        ),
        HumanMessage(
            REWRITER_USER.format(facts=render_facts(facts_by_dimension), sources=passages)
            + (f"\n\n{reminder}" if reminder else "")
        ),
    ]
    return await call_structured(model, _draft_schema(known_ids), messages)


def _draft_schema(known_ids: Collection[str]) -> type[ProfileDraft]:
    return profile_draft_schema(tuple(sorted(known_ids, key=_id_order)))


def _id_order(source_id: str) -> tuple[int, str]:
    """``S2`` before ``S10``: the enum lists ids as the prompt numbers them."""
    digits = source_id.lstrip("S")
    return (int(digits), source_id) if digits.isdigit() else (1 << 30, source_id)


async def rewrite_paper_profile_text(
    model: BaseChatModel, *, name: str, document: str, canon: str = ""
) -> tuple[ProfileDraft, LLMUsage]:
    """Table 8 verbatim over the R² ``document``; the answer is the profile, as written.

    The paper's rewrite: no fact list, nothing checked. ``canon`` (ours, opt-in) is added
    after the prompt when given. An empty answer leaves nothing to write:
    :class:`~personae.errors.NothingUsableError`.
    """
    request = PAPER_REWRITE_PROMPT.format(entity=name) + (f"\n\n{canon}" if canon else "")
    text, usage = await call_text(model, [HumanMessage(document), HumanMessage(request)])
    if not text.strip():
        raise NothingUsableError(f"the profile rewrite of {name!r} came back empty")
    return ProfileDraft(profile=text.strip(), facts=[], conflicts=[]), usage


async def rewrite_paper_profile(
    model: BaseChatModel,
    *,
    name: str,
    document: str,
    known_ids: Collection[str],
    canon: str,
    reminder: str | None = None,
) -> tuple[ProfileDraft, LLMUsage]:
    """Table 8 over the R² ``document``: the first-person profile and the facts it states.

    ``reminder`` is appended when the caller asks again (no fact kept a known source id).
    """
    messages = [
        HumanMessage(document),
        HumanMessage(
            PAPER_REWRITE_PROMPT.format(entity=name)
            + "\n\n"
            + PAPER_FACTS_REQUEST.format(canon=canon, dimensions=", ".join(DIMENSIONS)).strip()
            + (f"\n\n{reminder}" if reminder else "")
        ),
    ]
    return await call_structured(model, _draft_schema(known_ids), messages)
