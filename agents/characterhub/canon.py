"""The canon rule every profiling prompt follows, decided once per run from the request.

Cross-version confusion is the first contradiction type the paper reports (Haruhi in *Nyoron!
Churuya-san*, Illya in *Carnival Phantasm*). Forcing one "main canon" is wrong for exactly those
characters, so: when the request names a version (a parenthesised version in the name, or a
franchise), that version is the canon; otherwise no version is preferred and conflicting
versions are kept apart, each labelled. Decided in code, once, so every round and the rewrite
follow the same rule.
"""

from __future__ import annotations

import re

_VERSION_IN_NAME = re.compile(r"\(([^()]+)\)\s*$")

NAMED_VERSION_RULE = """Canon: {version}. Describe the character as they are in {version};
leave out events and traits of other versions, adaptations or spin-offs, or label them
explicitly as another version's."""
OPEN_RULE = """Canon: no version is preferred. When versions (original work, adaptations,
spin-offs, alternate timelines) disagree, keep each account apart and label which version it
belongs to; never merge them into one story."""


def decide_canon(name: str, franchise: str | None) -> str:
    """The canon rule for ``name`` (``Illya (Carnival Phantasm)``) and ``franchise``."""
    in_name = _VERSION_IN_NAME.search(name.strip())
    version = in_name.group(1).strip() if in_name else (franchise or "").strip()
    if version:
        return NAMED_VERSION_RULE.format(version=version)
    return OPEN_RULE


OPEN_CANON = "no version preferred; versions kept apart, each labelled"
"""What ``profile.md`` and the card say of a run under :data:`OPEN_RULE`."""
_NAMED = re.compile(r"^Canon: (.+?)\. Describe the character as they are in ", re.DOTALL)


def canon_of_rule(rule: str) -> str:
    """The canon a rule names, for readers: ``Fist of the North Star`` (empty: no rule).

    The rule is a prompt instruction ("Canon: X. Describe the character as ..."); a profile's
    *Canon* line and a card show what it decided, not the instruction itself.
    """
    if not rule.strip():
        return ""
    if rule == OPEN_RULE:
        return OPEN_CANON
    named = _NAMED.match(rule)
    return named.group(1).strip() if named else rule.strip()
