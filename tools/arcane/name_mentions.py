"""Candidate principal characters of a novel, ranked by how often their names occur.

The paper does not say how its ~4.7 principal characters per novel were chosen (spec §1.0,
default 37: a user-given list, with this helper to suggest one). A name here is a run of
capitalised words (optionally after an honorific such as "Mr." or "Lady") that appears
mid-sentence; sentence-initial words ("The", "But") and words that also occur in lower case
more often than capitalised ("Heaven", "Sir") are not names. This matches names, not people:
"Mr. Darcy" and "Darcy" are counted apart, places are names too, and the user picks.
Pride and Prejudice gives Elizabeth 373, Mr. Darcy 240, Jane 236, Mrs. Bennet 139, ...
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

HONORIFICS = ("Mr.", "Mrs.", "Miss", "Ms.", "Dr.", "Lady", "Lord", "Sir", "Madame", "Monsieur")
_TOKEN = "|".join([*(re.escape(h) for h in HONORIFICS), r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"])
RUN = re.compile(rf"(?<![\w.])(?:{_TOKEN})(?:[ \t]+(?:{_TOKEN}))*")
"""A run of capitalised words and honorifics ("Then Mr. Darcy", "Lady Catherine")."""
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]|[\"'“‘(]|\n)\s*$")
_WORD = re.compile(r"[A-Za-z]+")


def _names(text: str) -> list[str]:
    """The names in ``text``: runs without a sentence-initial word or dangling honorifics."""
    found = []
    for match in RUN.finditer(text):
        tokens = match.group().split()
        if _SENTENCE_START.search(text[max(0, match.start() - 4) : match.start()]):
            if tokens[0] not in HONORIFICS:
                tokens = tokens[1:]  # "But Elizabeth" -> "Elizabeth"; "The" -> nothing
        while tokens and tokens[-1] in HONORIFICS:
            tokens.pop()
        if any(t not in HONORIFICS for t in tokens):
            found.append(" ".join(tokens))
    return found


def rank_names(texts: Iterable[str], top: int = 15, min_count: int = 3) -> list[tuple[str, int]]:
    """The ``top`` names by mid-sentence occurrences (at least ``min_count``), most first."""
    names: Counter[str] = Counter()
    lower: Counter[str] = Counter()
    capital: Counter[str] = Counter()
    for text in texts:
        for word in _WORD.findall(text):
            (capital if word[0].isupper() else lower)[word.lower()] += 1
        names.update(_names(text))

    def is_name(name: str) -> bool:
        words = [w for w in name.split() if w not in HONORIFICS]
        return bool(words) and all(lower[w.lower()] < capital[w.lower()] for w in words)

    ordered = sorted(names.items(), key=lambda item: (-item[1], item[0]))  # ties: by name
    ranked = [(n, c) for n, c in ordered if c >= min_count and is_name(n)]
    return ranked[:top]
