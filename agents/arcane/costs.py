"""What an arc build will cost, from chapter lengths, before a single call is made.

Per character (App. A, spec §1.10): one T12 and one T13 call per chapter (each reading the
chapter plus its prompt and running context), two T14 calls, one T15 call, and three T16 calls
per kept axis (counted at ``AXES_PER_CHARACTER``, the paper's 544 arcs / 80 characters ≈ 6.8
rounded down to the 3-5 intrapersonal + 1-2 relational the prompt asks for). Tokens are
approximate (4 characters per token), as is every count made offline.
"""

from __future__ import annotations

from dataclasses import dataclass

from personae.memory.arcane.novel_store import Novel

CHARS_PER_TOKEN = 4
PROMPT_TOKENS = 900
"""T12/T13 instructions plus the JSON schema they print."""
RUNNING_TOKENS = 400
"""A running summary / profile (the profile is capped at 300 words)."""
STREAM_OUTPUT_TOKENS = 600
"""A chapter's JSON answer."""
INDUCTION_TOKENS_PER_CHAPTER = 250
"""Stream JSON fed to T14 per chapter."""
AXIS_OUTPUT_TOKENS = 2500
"""A T14 / T15 answer."""
CRITIC_TOKENS = 1200
"""A T16 call, prompt and answer."""
AXES_PER_CHARACTER = 6


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


def estimate_arc_build(novel: Novel, characters: int) -> CostEstimate:
    """The estimate for ``characters`` characters of ``novel`` (reads only metadata)."""
    chapter_tokens = [int(c) // CHARS_PER_TOKEN for c in novel.meta["chars"]]
    stream = sum(
        2 * (t + PROMPT_TOKENS + RUNNING_TOKENS + STREAM_OUTPUT_TOKENS) for t in chapter_tokens
    )
    induction = 2 * (novel.count * INDUCTION_TOKENS_PER_CHAPTER + AXIS_OUTPUT_TOKENS)
    reconcile = 3 * AXIS_OUTPUT_TOKENS
    critics = 3 * AXES_PER_CHARACTER * CRITIC_TOKENS
    calls = 2 * novel.count + 2 + 1 + 3 * AXES_PER_CHARACTER
    per_character = stream + induction + reconcile + critics
    return CostEstimate(characters, novel.count, calls * characters, per_character * characters)
