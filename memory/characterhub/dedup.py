"""When are two rows of a character list the same character? The paper's rule, and ours.

CharacterHub (§3.1) merges two entries only if they (i) originate from different sources,
(ii) share an exact franchise match and (iii) have a ``SequenceMatcher`` name similarity above
0.85. ``paper_duplicates`` is that rule, literally: no franchise, no merge; the optional alias
table maps several titles of one franchise to one name, as the paper's "hand-crafted alias
table" does.

The paper's rule misses what it cites as its motivation ("Satoru Gojo" vs "Gojo Satoru" score
0.5) and merges relatives who share a family name across sources ("Maki Zenin" vs "Mai Zenin"
score 0.89). ``personae_duplicates`` (the default) compares names as sets of words after folding
romanisation variants (ō/ou/oh → o, uu → u, shi → si, tsu → tu...), so reordered names and
spelling variants are one character, and never merges two full names that share a family name
but differ in the given name, whatever the sources.

:func:`deduplicate` applies a rule to a whole list, and :func:`quality_filter` is the paper's
quality control that follows it (§3.1). The batch runner
(:func:`personae.runners.characterhub_batch.profile_characters`) calls both; they live here, with
the character list, because they decide which rows are one stored profile.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from personae.memory.characterhub.character_list import CharacterRow

DedupRule = Literal["paper", "personae"]
"""``paper``: CharacterHub's three conditions literally; ``personae``: ours (default)."""

PAPER_THRESHOLD = 0.85
"""The paper's name similarity, which a pair must exceed strictly."""
LONG_NAME_SIMILARITY = 0.9
"""Two long words (6+ letters) this similar after folding are one spelling (Lelouch/Lelouche)."""

_FOLDS = (
    ("ou", "o"),
    ("oo", "o"),
    ("uu", "u"),
    ("aa", "a"),
    ("ii", "i"),
    ("ee", "e"),
    ("shi", "si"),
    ("chi", "ti"),
    ("tsu", "tu"),
    ("fu", "hu"),
    ("ji", "zi"),
    ("sh", "sy"),
    ("ch", "ty"),
    ("mb", "nb"),
    ("mp", "np"),
)
"""Hepburn → Kunrei and long-vowel spellings folded to one form, applied in order."""
_OH = re.compile(r"oh(?![aeiou])")


@dataclass(frozen=True)
class NamedRow:
    """What de-duplication reads of a row: name, franchise, and the list it came from."""

    name: str
    franchise: str | None = None
    source: str | None = None


def plain(text: str) -> str:
    """Case-folded ASCII with accents dropped and punctuation as spaces (``Kenshirō`` → ``kenshiro``)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join(re.sub(r"[^a-z0-9]+", " ", ascii_text.casefold()).split())


def fold_word(word: str) -> str:
    """One romanisation of ``word``: long vowels shortened, Hepburn spelled as Kunrei."""
    folded = _OH.sub("o", word)
    for old, new in _FOLDS:
        folded = folded.replace(old, new)
    return folded


def name_words(name: str) -> list[str]:
    """The folded words of a name, in order."""
    return [fold_word(w) for w in plain(name).split()]


def franchise_key(franchise: str | None, aliases: Mapping[str, str] | None = None) -> str | None:
    """The franchise compared, after the alias table (``None``: no franchise)."""
    if not franchise or not franchise.strip():
        return None
    table = {plain(k): plain(v) for k, v in (aliases or {}).items()}
    key = plain(franchise)
    return table.get(key, key) or None


def paper_duplicates(a: NamedRow, b: NamedRow, aliases: Mapping[str, str] | None = None) -> bool:
    """CharacterHub's rule: different sources, exact franchise, similarity > 0.85.

    Rows whose source is unknown (a CSV without a ``source`` column) count as coming from
    different lists; the franchise is compared exactly after the alias table (names are given to
    ``SequenceMatcher`` as written, as the paper does).
    """
    if a.source is not None and b.source is not None and a.source == b.source:
        return False
    franchise = franchise_key(a.franchise, aliases)
    if franchise is None or franchise != franchise_key(b.franchise, aliases):
        return False
    return SequenceMatcher(None, a.name, b.name).ratio() > PAPER_THRESHOLD


def _same_word(x: str, y: str) -> bool:
    if x == y:
        return True
    long_enough = min(len(x), len(y)) >= 6
    return long_enough and SequenceMatcher(None, x, y).ratio() >= LONG_NAME_SIMILARITY


def _same_words(xs: list[str], ys: list[str]) -> bool:
    """True when the word lists match one to one in some order (reordered names)."""
    left = list(ys)
    for x in xs:
        match = next((y for y in left if _same_word(x, y)), None)
        if match is None:
            return False
        left.remove(match)
    return not left


def personae_duplicates(a: NamedRow, b: NamedRow, aliases: Mapping[str, str] | None = None) -> bool:
    """Ours: same franchise, and the same words in any order after folding romanisation.

    A one-word name matches a longer name holding that word (``Zoro`` / ``Roronoa Zoro``).
    Two full names sharing a word but not the rest (``Yui Hirasawa`` / ``Ui Hirasawa``) are
    relatives, never merged. Sources do not matter: one list can repeat a character.
    """
    franchise = franchise_key(a.franchise, aliases)
    if franchise is None or franchise != franchise_key(b.franchise, aliases):
        return False
    xs, ys = name_words(a.name), name_words(b.name)
    if not xs or not ys:
        return False
    if len(xs) == 1 or len(ys) == 1:
        short, long = (xs, ys) if len(xs) <= len(ys) else (ys, xs)
        return len(short) == 1 and any(_same_word(short[0], w) for w in long)
    return _same_words(xs, ys)


def duplicates(
    a: NamedRow, b: NamedRow, rule: DedupRule, aliases: Mapping[str, str] | None = None
) -> bool:
    """Whether ``a`` and ``b`` are one character under ``rule``."""
    if rule == "paper":
        return paper_duplicates(a, b, aliases)
    return personae_duplicates(a, b, aliases)


def paper_quality_reason(
    franchise: str | None, aliases: Mapping[str, str] | None = None
) -> str | None:
    """Why CharacterHub's quality control (§3.1) drops a row, or ``None`` when it is kept.

    "We filter out characters whose franchise information is missing or cannot be matched to a
    hand-crafted alias table": a row without a franchise is dropped; with an alias table, so is
    a row whose franchise is neither one of its aliases nor one of its franchises. Without a
    table there is nothing to match against, and only the first condition applies.
    """
    if not franchise or not franchise.strip():
        return "no franchise"
    if aliases:
        known = {plain(k) for k in aliases} | {plain(v) for v in aliases.values()}
        if plain(franchise) not in known:
            return f"franchise {franchise.strip()!r} not in the alias table"
    return None


def deduplicate(
    rows: Sequence[CharacterRow],
    key: Callable[[CharacterRow], str] | None = None,
    *,
    rule: DedupRule = "personae",
    aliases: Mapping[str, str] | None = None,
) -> tuple[list[CharacterRow], list[tuple[CharacterRow, CharacterRow]]]:
    """Kept rows, and ``(duplicate, kept original)`` pairs under ``rule``.

    Each row is compared only with the kept rows of its own franchise (after ``aliases``), so a
    long character list does not cost a full pairwise pass; rows without a franchise are never
    merged by name. Rows with one ``key`` (the output folder) are duplicates too, however their
    names compare: both would write the same files.
    """
    kept: list[CharacterRow] = []
    dropped: list[tuple[CharacterRow, CharacterRow]] = []
    by_franchise: dict[str, list[CharacterRow]] = defaultdict(list)
    by_key: dict[str, CharacterRow] = {}
    for row in rows:
        franchise = franchise_key(row.franchise, aliases)
        named = NamedRow(row.name, row.franchise, row.source)
        same_franchise = by_franchise[franchise] if franchise is not None else []
        original = by_key.get(key(row)) if key is not None else None
        original = original or next(
            (
                k
                for k in same_franchise
                if duplicates(NamedRow(k.name, k.franchise, k.source), named, rule, aliases)
            ),
            None,
        )
        if original is None:
            kept.append(row)
            if franchise is not None:
                by_franchise[franchise].append(row)
            if key is not None:
                by_key[key(row)] = row
        else:
            dropped.append((row, original))
    return kept, dropped


def quality_filter(
    rows: Sequence[CharacterRow], aliases: Mapping[str, str] | None = None
) -> tuple[list[CharacterRow], list[tuple[CharacterRow, str]]]:
    """CharacterHub's quality control (§3.1): rows kept, and rows dropped with the reason."""
    kept: list[CharacterRow] = []
    removed: list[tuple[CharacterRow, str]] = []
    for row in rows:
        reason = paper_quality_reason(row.franchise, aliases)
        if reason is None:
            kept.append(row)
        else:
            removed.append((row, reason))
    return kept, removed
