"""The paper's deep-search agent: CharacterHub's Table 7 prompts, round R¹ then round R².

The agent receives the Table 7 first-search instruction, decides its searches, reads the
results and writes an encyclopedic Markdown document (R¹). Round two always runs: the R¹
document is fed back with the Table 7 iterative instruction ("continue searching to verify and
expand"), the agent searches again (closely related people, events, objects) and writes the
whole document again (R²) from all the evidence. R² is the "DRInfo" the paper scores. Nothing
but Table 7 instructs the agent unless ``--check-citations`` adds our grounding rules (R¹ from
the results only, R² re-checking every R¹ statement). The search tool is ours (web + wiki), so the agent's tool
use is two structured calls per round: the queries it wants, then the document citing the
source ids the code assigned. The document is free Markdown, so its ``[S#]`` citations cannot
be an enum: an id the code never assigned is dropped from the text and counted
(``usage.dropped_ids``) rather than failing the round.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import non_blank
from personae.llm import InvalidAnswerError, LLMUsage, call_structured

# CharacterHub, Appendix F, Table 7: first-round search prompt, verbatim.
FIRST_SEARCH_PROMPT = """Please help me collect all relevant knowledge about {entity} and integrate it into a detailed encyclopedic document. Use markdown format. Be truthful, comprehensive, and thorough, without omitting important information. You must verify the authenticity of information and the credibility of sources. Do not include or fabricate false information.

You should include the character's personality (very important), background, physical description, core motivations, notable attributes, relationships, key experiences, major plot involvement and key decisions or actions, character arc or development throughout the story, if there is any information about these aspects."""

# CharacterHub, Appendix F, Table 7: iterative search prompt, verbatim.
ITERATIVE_SEARCH_PROMPT = """Please continue searching to verify and expand on the knowledge you have already collected, such as searching for closely related people, events, objects, and other entities."""

# Ours: the search tool's description (the paper's agent has its own tools); ``canon`` is empty
# unless the canon rule is on (ours: always for planned runs, opt-in for the paper method).
AGENT_SYSTEM = """You are a search agent with one tool: a search over the web and the
character's wiki. The character is {entity}{franchise}. {canon}"""

QUERIES_REQUEST = """First decide the searches to run now: up to {count} short, diverse search
queries (under 12 words each) that combine names with profiling keywords. Do not answer yet."""

# The document call of our two-call tool protocol: the round's results and the cue to write.
# Under the paper's method the instructions are Table 7's; this, AGENT_SYSTEM and
# QUERIES_REQUEST only run the tool (queries as §3.2 describes them), with no rule the paper
# lacks. Citing the ids the code assigned stays (README, "Profiling methods") so that DRInfo's
# statements point into profile.json's ``sources`` list.
DOCUMENT_REQUEST = """## Search results
{passages}

Write {what} now. Cite the ids of the results a statement comes from, like [S3] or
[S2, S5]; cite only the ids shown.{grounding}"""

# Ours, sent only with ``--check-citations`` (opt-in under ``--method paper``): grounding rules
# Table 7 lacks, R¹ kept to the results shown and R² re-checking every R¹ statement.
GROUNDED_ROUND_ONE = """
Write it from these search results only: leave out what the results do not support."""
GROUNDED_ROUND_TWO = """
Re-check every statement of your previous document against all the results above: keep it
only if they support it, correct it if they contradict it, and add what the new results
reveal. Output the whole revised document, not only the additions."""

_CITED = re.compile(r"\[(S\d+(?:\s*,\s*S\d+)*)\]")
_CITATION = re.compile(r"\s?\[(S\d+(?:\s*,\s*S\d+)*)\]")


class SearchQueries(BaseModel):
    """The searches the agent wants to run this round."""

    queries: list[str] = Field(description="Short search queries, each naming who or what.")


class ResearchDocument(BaseModel):
    """The agent's encyclopedic document for this round."""

    document: str = non_blank("The encyclopedic Markdown document, citing [S#] ids.")


def cited_ids(text: str) -> list[str]:
    """Every source id cited as ``[S3]`` or ``[S2, S5]`` in ``text``, in order of first use."""
    found = [i.strip() for group in _CITED.findall(text) for i in group.split(",")]
    return list(dict.fromkeys(found))


def unknown_citations(document: str, known_ids: Collection[str]) -> list[str]:
    """Cited ids of ``document`` the code never assigned, sorted."""
    return sorted(set(cited_ids(document)) - set(known_ids))


def drop_unknown_citations(document: str, known_ids: Collection[str]) -> tuple[str, int]:
    """``document`` citing only ``known_ids`` (empty citations removed); how many ids dropped."""
    dropped = 0

    def keep_known(match: re.Match[str]) -> str:
        nonlocal dropped
        ids = [i.strip() for i in match.group(1).split(",")]
        kept = [i for i in ids if i in known_ids]
        dropped += len(ids) - len(kept)
        if not kept:
            return ""
        return f"{match.group(0)[0] if match.group(0)[0].isspace() else ''}[{', '.join(kept)}]"

    return _CITATION.sub(keep_known, document), dropped


def agent_messages(
    *, entity: str, franchise: str | None, canon: str, first_document: str | None
) -> list[BaseMessage]:
    """The conversation so far: R¹'s instruction, and for R² its document and the next one."""
    messages: list[BaseMessage] = [
        SystemMessage(
            AGENT_SYSTEM.format(
                entity=entity, franchise=f" ({franchise})" if franchise else "", canon=canon
            ).strip()
        ),
        HumanMessage(FIRST_SEARCH_PROMPT.format(entity=entity)),
    ]
    if first_document is not None:
        messages += [AIMessage(first_document), HumanMessage(ITERATIVE_SEARCH_PROMPT)]
    return messages


async def propose_searches(
    model: BaseChatModel,
    *,
    entity: str,
    franchise: str | None,
    canon: str,
    first_document: str | None,
    count: int,
) -> tuple[list[str], LLMUsage, int]:
    """The round's queries (R¹ when ``first_document`` is ``None``, else R²), deduplicated.

    Returns the queries, the usage, and how many proposed queries were dropped (empty,
    repeated, or beyond ``count``). An answer still invalid after retries degrades to no
    query (the caller searches for the name), counted in ``usage.degraded``.
    """
    messages = agent_messages(
        entity=entity, franchise=franchise, canon=canon, first_document=first_document
    )
    messages.append(HumanMessage(QUERIES_REQUEST.format(count=count)))
    try:
        answer, usage = await call_structured(model, SearchQueries, messages)
    except InvalidAnswerError as failed:
        return [], failed.usage + LLMUsage(degraded=1), 0
    unique: dict[str, str] = {}
    for query in answer.queries:
        text = " ".join(query.split())
        if text:
            unique.setdefault(text.casefold(), text)  # a search engine ignores case too
    kept = list(unique.values())[:count]
    return kept, usage, len(answer.queries) - len(kept)


async def write_document(
    model: BaseChatModel,
    *,
    entity: str,
    franchise: str | None,
    canon: str,
    first_document: str | None,
    passages: str,
    known_ids: Collection[str],
    grounded: bool = False,
) -> tuple[str, LLMUsage]:
    """The round's document from the rendered ``passages``; unknown ids are dropped, counted.

    ``grounded`` adds our grounding rules (``GROUNDED_ROUND_*``) to the paper's instruction.

    An answer still invalid after retries degrades to the previous round's document (R² keeps
    R¹; R¹ is then empty), counted in ``usage.degraded``.
    """

    def valid(answer: ResearchDocument) -> None:
        invented = unknown_citations(answer.document, known_ids)
        if invented:
            raise ValueError(f"cite only the ids shown; unknown ids: {', '.join(invented)}")

    def repair(answer: ResearchDocument) -> tuple[ResearchDocument, int]:
        document, dropped = drop_unknown_citations(answer.document, known_ids)
        return ResearchDocument.model_construct(document=document), dropped

    messages = agent_messages(
        entity=entity, franchise=franchise, canon=canon, first_document=first_document
    )
    messages.append(HumanMessage(document_request(passages, first_document is None, grounded)))
    try:
        answer, usage = await call_structured(
            model, ResearchDocument, messages, check=valid, repair=repair
        )
    except InvalidAnswerError as failed:
        return first_document or "", failed.usage + LLMUsage(degraded=1)
    return answer.document.strip(), usage


def document_request(passages: str, first_round: bool, grounded: bool) -> str:
    """The document call's message: the results, the cue to write, and our rules if ``grounded``.

    R² asks for the whole document: DRInfo is the last round's document, not a list of additions.
    """
    grounding = ""
    if grounded:
        grounding = GROUNDED_ROUND_ONE if first_round else GROUNDED_ROUND_TWO
    what = "the document" if first_round else "the whole document"
    return DOCUMENT_REQUEST.format(passages=passages, what=what, grounding=grounding)


def render_passages(passages: Sequence[tuple[str, str, str]], budget: int) -> str:
    """``(id, title, content)`` as the numbered results the model reads, within ``budget`` chars.

    Each passage gets an equal share of the budget (a long page cannot crowd out the others),
    unused share passing on to the next.
    """
    blocks: list[str] = []
    left = budget
    for position, (sid, title, content) in enumerate(passages):
        share = max(200, left // max(1, len(passages) - position))
        text = content[:share]
        left -= len(text)
        blocks.append(f"[{sid}] {title}\n{text}")
    return "\n\n".join(blocks)
