"""What an arc build will cost, from the chapters' text, before a single call is made.

Per character (App. A, spec §1.10): one T12 and one T13 call per chapter, two T14 calls, one
T15 call, and three T16 calls per kept axis (counted at ``AXES_PER_CHARACTER``, the paper's 544
arcs / 80 characters ≈ 6.8 rounded down to the 3-5 intrapersonal + 1-2 relational the prompt
asks for). The T12/T13 prompts are rendered with each chapter's text and counted as the usage
counter counts (:mod:`personae.agents.costs`); the running context they carry and every answer
are constants below. Checked against a scripted build of Pride and Prejudice in
``benchmarks/bench_arcane.py``: the earlier estimate (4 characters a token, 900 prompt tokens,
600 answer tokens a call) was 1.43x the tokens counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from personae.agents.arcane.axes import induction_messages
from personae.agents.arcane.streams import EVENT_STREAM, STATE_STREAM
from personae.agents.costs import message_tokens
from personae.memory.arcane.novel_store import Novel

RUNNING_TOKENS = 150
"""The running context (T12) or profile (T13) a chapter's call carries, on average over a build:
it starts empty and grows toward the profile's 300-word cap."""
EVENT_OUTPUT_TOKENS = 250
"""A T12 answer: the chapter's events and the updated running summary."""
STATE_OUTPUT_TOKENS = 200
"""A T13 answer: the state fields and the updated running profile."""
STREAM_TOKENS_PER_CHAPTER = 120
"""What one chapter adds to the stream JSON each T14 call reads."""
AXIS_OUTPUT_TOKENS = 800
"""A T14 / T15 answer (a set of axes)."""
RECONCILE_PROMPT_TOKENS = 1000
"""T15's instructions (the two axis sets it reads are counted as answers)."""
CRITIC_TOKENS = 600
"""A T16 call, prompt and answer."""
AXES_PER_CHARACTER = 6
NAME = "Character Name"
"""Stands in for a character when only the number of characters is given."""


@dataclass(frozen=True)
class CostEstimate:
    """Estimated calls and tokens of building arcs for some characters of a novel."""

    characters: int
    chapters: int
    calls: int
    tokens: int

    @property
    def per_chapter_and_character(self) -> tuple[float, float]:
        """Calls and tokens per (chapter, character)."""
        units = max(1, self.characters * self.chapters)
        return self.calls / units, self.tokens / units


def estimate_arc_build(novel: Novel, characters: int | Sequence[str]) -> CostEstimate:
    """The estimate for ``characters`` (names, or how many) of ``novel``; reads its chapters."""
    names = [NAME] * characters if isinstance(characters, int) else list(characters)
    title = novel.title
    texts = [novel.chapter(idx).text for idx in range(1, novel.count + 1)]
    calls = 2 * novel.count + 2 + 1 + 3 * AXES_PER_CHARACTER
    tokens = 0
    for name in names:
        for idx, text in enumerate(texts, start=1):
            for stream in (EVENT_STREAM, STATE_STREAM):
                tokens += message_tokens(
                    stream.messages(novel=title, character=name, chapter=idx, text=text, running="")
                )
        tokens += novel.count * (2 * RUNNING_TOKENS + EVENT_OUTPUT_TOKENS + STATE_OUTPUT_TOKENS)
        induction = message_tokens(
            induction_messages(novel=title, character=name, stream_json=[], state_stream=False)
        )
        tokens += 2 * (induction + novel.count * STREAM_TOKENS_PER_CHAPTER + AXIS_OUTPUT_TOKENS)
        tokens += RECONCILE_PROMPT_TOKENS + 3 * AXIS_OUTPUT_TOKENS
        tokens += 3 * AXES_PER_CHARACTER * CRITIC_TOKENS
    return CostEstimate(len(names), novel.count, calls * len(names), tokens)
