"""Degraded items: how a run counts them, says so in one line, and stops when there are too many.

An item (a claim, a sentence, a verdict, a chapter, a bench instance) degrades when the model's
answer for it is still invalid after the retries (:class:`personae.llm.InvalidAnswerError`):
it is kept unchecked, dropped, or recorded as failed, per the method's rule, and the run goes
on. Every command counts what degraded in its output and prints :func:`degraded_line`;
``--max-failures`` (:class:`FailureBudget`) stops a run that degrades too much, and a run
left with nothing usable ends with :class:`~personae.errors.NothingUsableError`.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from personae.errors import InputError, TooManyFailuresError

DEFAULT_MAX_FAILURES = "10%"
"""``--max-failures`` default: more than 10 % of the run's items (at least 1) degraded stops it."""
MAX_FAILURES_HELP = (
    "stop once more than N items degraded (their answer still invalid after retries): a count "
    "(5) or a share of the run's items (10%%, the default; at least 1 item); 100%% never stops"
)


@dataclass(frozen=True)
class FailureBudget:
    """How many degraded items a run of ``total`` items tolerates before it stops."""

    text: str = DEFAULT_MAX_FAILURES
    """The setting as written: ``5`` (items) or ``10%`` (of the run's items)."""

    def __post_init__(self) -> None:
        self.limit(1)  # a malformed setting fails at once, with the flag's name

    def limit(self, total: int) -> int:
        """Degraded items allowed among ``total``."""
        text = self.text.strip()
        try:
            if text.endswith("%"):
                share = float(text[:-1])
                if not 0 <= share <= 100:
                    raise ValueError(text)
                return total if share >= 100 else max(1, math.floor(total * share / 100))
            count = int(text)
            if count < 0:
                raise ValueError(text)
            return count
        except ValueError:
            raise InputError(
                f"--max-failures {self.text!r} is not a count or a percentage",
                "write it as 5 (items) or 10% (of the run's items)",
            ) from None

    def check(self, degraded: int, total: int, items: str) -> None:
        """Raise :class:`TooManyFailuresError` when ``degraded`` of ``total`` is over the limit."""
        allowed = self.limit(total)
        if degraded > allowed:
            raise TooManyFailuresError(
                f"stopped: {degraded} of {total} {items} degraded, more than --max-failures "
                f"{self.text} ({allowed}); what finished is saved",
                "use a stronger model (PERSONAE_MODEL), or raise --max-failures and rerun "
                "to resume",
            )


def degraded_line(total: int, kinds: Mapping[str, int] | None = None) -> str | None:
    """``degraded: 3 (facts_unchecked 2, chapters 1)``; ``None`` when nothing degraded.

    The one terminal line every command prints about degraded items: the total first, then
    what degraded, by kind, as the output file records them.
    """
    if not total:
        return None
    kept = {kind: n for kind, n in (kinds or {}).items() if n}
    details = ", ".join(f"{kind} {n}" for kind, n in sorted(kept.items()))
    return f"degraded: {total}" + (f" ({details})" if details else "")


def add_max_failures_flag(parser: argparse.ArgumentParser, items: str) -> None:
    """``--max-failures`` on a command whose run is made of ``items`` (bench instances...)."""
    parser.add_argument(
        "--max-failures",
        type=FailureBudget,
        default=FailureBudget(),
        metavar="N",
        help=MAX_FAILURES_HELP.replace("items", items, 1),
    )


RERUN_ASKS_AGAIN = "a rerun asks the model again"
"""What a user can do about degraded answers that are not cached (they are not)."""


def print_degraded(total: int, kinds: Mapping[str, int] | None = None, note: str = "") -> None:
    """Print :func:`degraded_line` to stderr when anything degraded.

    ``note`` (what the items are, what to do about them) follows after a colon.
    """
    line = degraded_line(total, kinds)
    if line:
        sys.stderr.write(line + (f": {note}" if note else "") + "\n")
