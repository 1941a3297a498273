"""The AMADEUS role-play responder: answer as the character from knowledge and attributes.

The paper prints no prompt. Its Figure 2 fixes what goes in: "treating the chunks obtained from
the RAG as knowledge and the outputs from GS and AE as the character's attributes", with a
persona instruction to play the character in the first person and stay in character. The
``none`` method (the paper's "w/o RAG") gets the same instruction with neither block; ``naive``
gets the knowledge block only. Earlier turns of the conversation come before the question.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from personae.llm import LLMUsage, call_text

PROMPT_VERSION = "amadeus-rp-1"

ACTOR_SYSTEM = """You are {character}. Answer the user as {character} would, in the first person,
in {character}'s own voice, and stay in character whatever you are asked: never say you are an AI,
a model or an assistant, and never step outside the role to comment on it.

Ground what you say in the material below. Facts about your life come from your knowledge; how
you feel about things, what you value and how you tend to react come from your attributes. When
neither covers the question, answer as {character} plausibly would from your attributes, without
inventing specific events, names or numbers. Keep answers conversational: a few sentences unless
the question calls for more."""

KNOWLEDGE_BLOCK = """## Your knowledge (passages from your persona)
{chunks}"""

ATTRIBUTE_BLOCK = """## Your attributes
Passages that reveal your character regarding this question:
{selected}

Belief and value: {belief_and_value}
Psychological traits: {psychological_traits}"""

NO_MATERIAL = "(You have no persona material for this answer: rely on who you are.)"


def _numbered(chunks: Sequence[str]) -> str:
    return "\n\n".join(f"[{i}] {chunk}" for i, chunk in enumerate(chunks, start=1)) or "(none)"


def actor_messages(
    character: str,
    question: str,
    *,
    knowledge: Sequence[str] | None,
    selected: Sequence[str] | None = None,
    belief_and_value: str = "",
    psychological_traits: str = "",
    history: Sequence[BaseMessage] = (),
) -> list[BaseMessage]:
    """The role-play prompt: instruction, knowledge, attributes, earlier turns, the question.

    ``knowledge=None`` is the no-retrieval method; ``selected=None`` leaves out the attribute
    block (naive RAG).
    """
    blocks = [ACTOR_SYSTEM.format(character=character)]
    if knowledge is not None:
        blocks.append(KNOWLEDGE_BLOCK.format(chunks=_numbered(knowledge)))
    if selected is not None:
        blocks.append(
            ATTRIBUTE_BLOCK.format(
                selected=_numbered(selected),
                belief_and_value=belief_and_value or "(not extracted)",
                psychological_traits=psychological_traits or "(not extracted)",
            )
        )
    if knowledge is None and selected is None:
        blocks.append(NO_MATERIAL)
    return [SystemMessage("\n\n".join(blocks)), *history, HumanMessage(question)]


async def respond_in_character(
    model: BaseChatModel, messages: Sequence[BaseMessage]
) -> tuple[str, LLMUsage]:
    """The character's reply to the prompt built by :func:`actor_messages`."""
    text, usage = await call_text(model, messages)
    return text.strip(), usage
