"""The paper's lexical filter: candidates must share a non-stop-word token with the question.

Vector search over short questions ranks loosely related bookmarks high; the BOOKMARKS paper
keeps only candidates sharing at least one content word with the new question. The same
tokeniser feeds the storyline index, so a keyword and an action text are split the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

_WORD = re.compile(r"[0-9a-z\u00c0-\uffff]+(?:'[0-9a-z\u00c0-\uffff]+)*")
_POSSESSIVE = re.compile(r"'s$|'$")

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having
    he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've
    if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off
    on once only or other ought our ours ourselves out over own same shan't she she'd she'll
    she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under until
    up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
    where's which while who who's whom why why's will with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves
    s t just now also currently usually often tend tends typically generally
    """.split()
)
"""English stop words plus hedges that every behavioral question carries ("usually", "tend")."""


def tokens(text: str) -> list[str]:
    """Lowercase word tokens in order, possessives folded (``Haruhi's`` -> ``haruhi``)."""
    words = _WORD.findall(text.lower().replace("\u2019", "'"))
    return [_POSSESSIVE.sub("", word) if word not in STOP_WORDS else word for word in words]


def content_tokens(text: str) -> frozenset[str]:
    """The distinct non-stop-word tokens of ``text``."""
    return frozenset(t for t in tokens(text) if t and t not in STOP_WORDS)


def shared_tokens(a: str, b: str) -> frozenset[str]:
    """Content tokens ``a`` and ``b`` have in common."""
    return content_tokens(a) & content_tokens(b)


def lexical_filter(
    question: str,
    items: Iterable[T],
    text_of: Callable[[T], str],
    *,
    k: int,
    distance_of: Callable[[T], float] | None = None,
) -> list[T]:
    """Keep items sharing >= 1 content token with ``question``; the top ``k``.

    Ranked by shared-token count (more first), then by ``distance_of`` (smaller first), then
    by input order, so the vector ranking breaks ties.
    """
    wanted = content_tokens(question)
    scored: list[tuple[int, float, int, T]] = []
    for order, item in enumerate(items):
        shared = len(wanted & content_tokens(text_of(item)))
        if shared:
            distance = distance_of(item) if distance_of else 0.0
            scored.append((-shared, distance, order, item))
    scored.sort(key=lambda row: row[:3])
    return [row[3] for row in scored[: max(0, k)]]
