"""The one progress protocol every public call reports to: a line of text per step.

It sits at the core, below every layer, because the evaluation protocols (``evals/``) report
progress too and may not import the runners above them.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Where a call reports a step: one line, no newline (the CLI writes it to stderr).

    Any ``def say(line: str) -> None`` is one. A line may be a :class:`CountedLine`, which also
    says how far a long run got, so a caller can draw a bar instead of printing the line.
    """

    def __call__(self, line: str, /) -> None:
        """Report ``line``."""


class CountedLine(str):
    """A progress line that also counts: ``done`` of ``total`` units (``done == 0``: the start).

    A plain ``str`` to every caller that prints it; a caller that draws a bar reads the counts
    and ``label`` (what just finished) instead.
    """

    done: int
    total: int
    label: str

    def __new__(cls, text: str, *, done: int, total: int, label: str = "") -> CountedLine:
        """The line ``text`` counting ``done`` of ``total`` (``label``: what just finished)."""
        line = super().__new__(cls, text)
        line.done, line.total, line.label = done, total, label
        return line


def quiet(line: str, /) -> None:
    """The default progress of every public call: nothing."""


def to_stderr(line: str, /) -> None:
    """The CLI's plain progress: ``personae: LINE`` on stderr (a wait for a lock, a notice)."""
    import sys

    sys.stderr.write(f"personae: {line}\n")
    sys.stderr.flush()
