"""The settings a paper reports beside the ones a run used: printed first, kept in the report.

A number is comparable to a paper's table only when the run used the paper's settings (its
models, sampling, judge, K and sizes). Every reproduction command therefore prints, before its
first model call, one line per setting with the paper's value and this run's, marks the ones
that differ, and keeps the same rows in its ``summary.json`` (``paper_settings``) and report.
Each paper's evaluation module lists its rows; this module only lays them out, so the four
papers print them the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PaperSetting:
    """One setting: what the paper used (and where it says so) and what this run uses."""

    name: str
    paper: str
    """The paper's value, with its source (``§5.1``, ``Table 3``); ``not stated`` if silent."""
    used: str
    """This run's value."""

    @property
    def differs(self) -> bool:
        """Whether this run departs from the paper (a silent paper never counts as a departure)."""
        paper = self.paper.split(" (", 1)[0].strip().casefold()
        if paper in ("not stated", "-", ""):
            return False
        return paper != self.used.strip().casefold()

    def as_dict(self) -> dict[str, Any]:
        """The row as ``summary.json`` keeps it."""
        return {"setting": self.name, "paper": self.paper, "used": self.used}


def settings_text(title: str, rows: Sequence[PaperSetting]) -> str:
    """Terminal lines: the title, then ``setting: paper | this run`` (``*`` where they differ)."""
    width = max((len(row.name) for row in rows), default=0)
    lines = [f"{title}: the paper's settings | this run's (* differs)"]
    for row in rows:
        mark = "*" if row.differs else " "
        lines.append(f" {mark} {row.name.ljust(width)}  {row.paper} | {row.used}")
    return "\n".join(lines) + "\n"


def settings_markdown(rows: Iterable[Mapping[str, Any] | PaperSetting]) -> list[str]:
    """A Markdown table of the rows (from :class:`PaperSetting` or ``summary.json``)."""
    lines = ["| Setting | Paper | This run |", "|---|---|---|"]
    for row in rows:
        data = row.as_dict() if isinstance(row, PaperSetting) else row
        cells = (str(data["setting"]), str(data["paper"]), str(data["used"]))
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return lines


def rows_json(rows: Sequence[PaperSetting]) -> list[dict[str, Any]]:
    """The rows as ``summary.json`` keeps them."""
    return [row.as_dict() for row in rows]
