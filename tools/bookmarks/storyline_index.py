"""An inverted index over a storyline, for the concept sync's keyword scan.

The concept operator looks for an entity in the unseen suffix ``[p, t)`` of a storyline. A
linear scan over a long storyline costs O(actions) per bookmark and step; the index answers in
O(matches) with a bisect on each token's sorted positions. It is built once per storyline over
every action, but :meth:`StorylineIndex.positions` only ever returns positions inside the window
the caller asks for, so a reader at ``t`` passes ``end=t`` and sees nothing at or after it.
"""

from __future__ import annotations

import functools
import weakref
from bisect import bisect_left
from collections.abc import Iterable, Sequence

from personae.memory.bookmarks.lexical import STOP_WORDS, tokens
from personae.memory.bookmarks.storyline import Storyline
from personae.process_caches import clears_on_reset

CONTEXT_RADIUS = 8
"""The paper's context window: 8 actions either side of a keyword hit."""


class StorylineIndex:
    """Token -> sorted positions, with phrase checks for multi-word keywords."""

    def __init__(self, storyline: Storyline) -> None:
        """Index every action's text (and the names of who acts) of ``storyline``."""
        self.storyline = storyline
        self._tokens: list[tuple[str, ...]] = []
        postings: dict[str, list[int]] = {}
        for action in storyline.actions:
            words = tuple(tokens(action.text))
            self._tokens.append(words)
            for word in set(words).union(*(tokens(name) for name in action.characters)):
                postings.setdefault(word, []).append(action.position)
        self._postings = postings
        self._lowered: list[str] | None = None
        """Each action's text lowercased, for :meth:`substring_positions` (made on first use)."""

    def __len__(self) -> int:
        return len(self._tokens)

    def positions(
        self, keyword: str, start: int = 0, end: int | None = None, *, aliases: Iterable[str] = ()
    ) -> list[int]:
        """Positions in ``[start, end)`` whose action mentions ``keyword`` or an alias.

        Case-insensitive, possessives folded; a multi-word keyword must appear as a contiguous
        phrase. ``end`` defaults to the storyline's length and is clipped to it.
        """
        stop = len(self._tokens) if end is None else min(end, len(self._tokens))
        start = max(0, start)
        found: set[int] = set()
        for name in (keyword, *aliases):
            found.update(self._phrase_positions(tuple(tokens(name)), start, stop))
        return sorted(found)

    def substring_positions(
        self, keyword: str, start: int = 0, end: int | None = None
    ) -> list[int]:
        """Positions in ``[start, end)`` whose action text contains ``keyword``, any case.

        The released runner's concept scan (``keyword.lower() in item["action"].lower()``): a
        plain substring test on the text, no tokens, no names of who acts.
        """
        stop = len(self._tokens) if end is None else min(end, len(self._tokens))
        if self._lowered is None:
            self._lowered = [action.text.lower() for action in self.storyline.actions]
        wanted = keyword.lower()
        return [p for p in range(max(0, start), stop) if wanted in self._lowered[p]]

    def _phrase_positions(self, phrase: tuple[str, ...], start: int, stop: int) -> list[int]:
        if not phrase or start >= stop:
            return []
        words = [w for w in phrase if w not in STOP_WORDS] or list(phrase)
        rarest = min(words, key=lambda w: len(self._postings.get(w, ())))
        posting = self._postings.get(rarest, [])
        window = posting[bisect_left(posting, start) : bisect_left(posting, stop)]
        if len(phrase) == 1:
            return list(window)
        return [p for p in window if _contains(self._tokens[p], phrase)]

    def context_windows(
        self, positions: Sequence[int], radius: int = CONTEXT_RADIUS, *, end: int
    ) -> list[tuple[int, int]]:
        """:func:`context_windows` for this storyline (clipped to ``end``)."""
        return context_windows(positions, radius, end=min(end, len(self._tokens)))


def _contains(words: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    size = len(phrase)
    return any(words[i : i + size] == phrase for i in range(len(words) - size + 1))


def context_windows(
    positions: Sequence[int], radius: int = CONTEXT_RADIUS, *, end: int
) -> list[tuple[int, int]]:
    """Half-open windows ``[p - radius, p + radius + 1)`` around hits, merged and clipped.

    Overlapping or touching windows merge into one; every window ends at or before ``end``,
    so a window around a hit just before the target never reaches the target.
    """
    merged: list[tuple[int, int]] = []
    for position in sorted(p for p in positions if 0 <= p < end):
        low, high = max(0, position - radius), min(end, position + radius + 1)
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


_INDEXES: dict[int, tuple[weakref.ref[Storyline], StorylineIndex]] = {}
clears_on_reset("tools.bookmarks.storyline_index.indexes", _INDEXES.clear)


def index_for(storyline: Storyline) -> StorylineIndex:
    """The storyline's index, built once and reused while the storyline is alive."""
    key = id(storyline)
    cached = _INDEXES.get(key)
    if cached is not None and cached[0]() is storyline:
        return cached[1]
    index = StorylineIndex(storyline)
    # The callback holds the dict itself: at interpreter exit it may run after this module's
    # globals are gone (a storyline collected late, e.g. after Ctrl-C).
    forget = functools.partial(_INDEXES.pop, key, None)
    _INDEXES[key] = (weakref.ref(storyline, lambda _ref: forget()), index)
    return index
