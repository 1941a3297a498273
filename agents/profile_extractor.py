"""ETA's two roles: extract facts about a character from a chunk, aggregate them into a profile.

Extract-then-aggregate is the profile baseline of the BOOKMARKS benchmark: a static summary of
who the character is, rebuilt as the story advances, against which bookmarks (answers to the
questions the next action needs) are compared. Both roles run on the fast model in the ETA
graph: they summarise, they do not act. The model only sees the chunk it is given (positions
below the rebuild point); it returns plain statements, never ids or positions.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.actor import render_scene
from personae.llm import LLMUsage, call_structured
from personae.memory.storyline import StoryAction

MAX_FACTS_PER_CHUNK = 12
"""Facts kept from one chunk; longer answers are rejected and retried."""
MAX_PROFILE_STATEMENTS = 20
"""Statements in an aggregated profile."""

EXTRACT_SYSTEM = """You read a passage of the story "{story}" and note what it reveals about
{character}: personality, habits and ways of speaking, goals, relationships, skills, and their
current situation (where they are, what they hold, what they know, how they feel). Write short
self-contained statements that name {character}. Only what the passage shows or clearly
implies; nothing from outside it. At most {limit} statements; none if the passage says nothing
about {character}."""

EXTRACT_USER = """## Passage (actions in story order)
{chunk}

What does this passage reveal about {character}?"""

AGGREGATE_SYSTEM = """You maintain the profile of {character} in the story "{story}" for an
actor who must play {character}'s next action. Merge the facts below, extracted passage by
passage in story order, into at most {limit} short statements: keep stable traits, habits,
relationships and the latest known situation. When facts conflict, the later passage
describes the current state. Drop duplicates and trivia; add nothing the facts do not say."""

AGGREGATE_USER = """## Facts about {character}, by passage (earliest first)
{facts}

Write {character}'s profile."""


class ExtractedFacts(BaseModel):
    """What one passage reveals about the character."""

    facts: list[str] = Field(
        default_factory=list,
        description="Short statements naming the character; empty if the passage shows nothing.",
    )


class CharacterProfile(BaseModel):
    """The character's aggregated profile."""

    statements: list[str] = Field(
        description="Short statements: stable traits, habits, relationships, current situation."
    )


def _clean(lines: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    kept = []
    for line in lines:
        text = " ".join(line.split())
        if text and text.lower() not in seen:
            seen.add(text.lower())
            kept.append(text)
    return kept


async def extract_facts(
    model: BaseChatModel,
    *,
    character: str,
    story: str,
    chunk: Sequence[StoryAction],
) -> tuple[list[str], LLMUsage]:
    """Facts about ``character`` from the actions in ``chunk``; more than the cap is retried."""

    def within_limit(answer: ExtractedFacts) -> None:
        if len(_clean(answer.facts)) > MAX_FACTS_PER_CHUNK:
            raise ValueError(f"give at most {MAX_FACTS_PER_CHUNK} statements")

    messages = [
        SystemMessage(
            EXTRACT_SYSTEM.format(character=character, story=story, limit=MAX_FACTS_PER_CHUNK)
        ),
        HumanMessage(EXTRACT_USER.format(chunk=render_scene(chunk), character=character)),
    ]
    answer, usage = await call_structured(model, ExtractedFacts, messages, check=within_limit)
    return _clean(answer.facts), usage


def render_chunk_facts(chunks: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Facts grouped under a passage label, in story order, as the aggregator reads them."""
    blocks = []
    for label, facts in chunks:
        if facts:
            blocks.append(f"### {label}\n" + "\n".join(f"- {fact}" for fact in facts))
    return "\n\n".join(blocks) or "(no facts)"


async def aggregate_profile(
    model: BaseChatModel,
    *,
    character: str,
    story: str,
    chunks: Sequence[tuple[str, Sequence[str]]],
) -> tuple[list[str], LLMUsage]:
    """The profile from ``(passage label, facts)`` pairs; empty or too long answers are retried."""

    def sized(answer: CharacterProfile) -> None:
        kept = _clean(answer.statements)
        if not kept:
            raise ValueError("the profile is empty")
        if len(kept) > MAX_PROFILE_STATEMENTS:
            raise ValueError(f"give at most {MAX_PROFILE_STATEMENTS} statements")

    messages = [
        SystemMessage(
            AGGREGATE_SYSTEM.format(character=character, story=story, limit=MAX_PROFILE_STATEMENTS)
        ),
        HumanMessage(AGGREGATE_USER.format(character=character, facts=render_chunk_facts(chunks))),
    ]
    answer, usage = await call_structured(model, CharacterProfile, messages, check=sized)
    return _clean(answer.statements), usage
