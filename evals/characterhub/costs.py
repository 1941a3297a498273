"""What ``personae characterhub eval`` will cost, printed before its first model call.

The calls are known once the references are loaded: one Table 9 extraction per reference piece
(the whole page, or each ``--chunk-tokens`` chunk), one Table 10 judge call per text (profile
and DRInfo of every profile file) and batch of points, and, with knowledge density on, one
extraction per text. The extraction prompts are rendered with the reference and counted as
usage is counted (:mod:`personae.agents.costs`); the judge prompts are rendered with each text
and a knowledge list of the expected length. How many points a page yields is not known before
the extractor answers: :data:`POINTS_PER_1K_TOKENS` of reference. Checked against a scripted
run in ``benchmarks/bench_estimates.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from personae.agents.characterhub.knowledge_extractor import extraction_messages
from personae.agents.characterhub.support_judge import judge_messages
from personae.agents.costs import Estimate, message_tokens, text_tokens

if TYPE_CHECKING:
    from personae.evals.characterhub.profile_eval import CharacterCase, ProfileEvalContext

POINTS_PER_1K_TOKENS = 8.0
"""Knowledge points a model extracts per 1,000 tokens of text: the paper's Fandom references
hold about half the density of its DRInfo (11.68 per 1k tokens, Table 4 and Figure 3)."""
STATEMENT = "Character X did something at some point in the story for some reason."
"""A knowledge statement of typical length, standing in for the points the judge will read."""
POINT_TOKENS = 60
"""One extracted point in the extractor's answer: statement, evidence quote, dimension."""
VERDICT_TOKENS = 45
"""One point's label in the judge's answer: id, verdict, evidence."""


def estimate_profile_eval(cases: Sequence[CharacterCase], context: ProfileEvalContext) -> Estimate:
    """Calls and tokens of evaluating ``cases`` with ``context``'s settings."""
    from personae.evals.characterhub.profile_eval import TEXT_KINDS, reference_pieces, text_piece

    calls = tokens = texts = 0
    for case in cases:
        pieces = reference_pieces(case.reference, context.chunk_tokens)
        points = 0
        for _, input_text, plain in pieces:
            expected = math.ceil(POINTS_PER_1K_TOKENS * text_tokens(plain) / 1000)
            points += expected
            calls += 1
            tokens += message_tokens(extraction_messages(input_text)) + expected * POINT_TOKENS
        size = context.judge_batch or max(1, points)
        for _, document in case.documents:
            for kind in TEXT_KINDS:
                text = document.text(kind)
                if not text.strip():
                    continue
                texts += 1
                for start in range(0, points, size):
                    batch = min(size, points - start)
                    calls += 1
                    prompt = judge_messages([STATEMENT] * batch, text, start + 1)
                    tokens += message_tokens(prompt) + batch * VERDICT_TOKENS
                if context.density:
                    _, input_text, plain = text_piece(case.character, kind, text)
                    own = math.ceil(POINTS_PER_1K_TOKENS * text_tokens(plain) / 1000)
                    calls += 1
                    tokens += message_tokens(extraction_messages(input_text)) + own * POINT_TOKENS
    detail = f"{len(cases)} character(s), {texts} text(s) judged"
    return Estimate(calls, tokens, detail)
