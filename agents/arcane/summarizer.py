"""ARCANE's chapter summarizer (Table 34), used by the Summary and LifeChoice modes."""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

# Table 34 (ARCANE App. P.3): chapter summarizer, verbatim.
SUMMARIZER_SYSTEM = (
    "You are a literary summarizer. Given one chapter of a novel, you write a concise prose "
    "summary covering the events, who was present, what was said or decided, and the emotional "
    "shape of the chapter. You stay faithful to the text and do not invent details."
)
SUMMARIZER_USER = """Novel: {novel}
Chapter: {chapter_idx}

--- chapter text ---
{chapter_text}
--- end ---

Write the summary as one or two paragraphs of running prose."""


def summary_messages(*, novel: str, chapter_idx: int, chapter_text: str) -> list[BaseMessage]:
    """One chapter's T34 call."""
    user = SUMMARIZER_USER.format(novel=novel, chapter_idx=chapter_idx, chapter_text=chapter_text)
    return [SystemMessage(content=SUMMARIZER_SYSTEM), HumanMessage(content=user)]
