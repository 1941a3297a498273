"""The settings a paper reports beside the ones a run used: printed first, kept in the report.

A number is comparable to a paper's table only when the run used the paper's settings (its
models, sampling, judge, K and sizes). Every reproduction command therefore prints, before its
first model call, one line per setting with the paper's value and this run's, marks the ones
that differ, and keeps the same rows in its ``summary.json`` (``paper_settings``) and report.
Each paper's evaluation module lists its rows; this module only lays them out, so the four
papers print them the same way.
"""

from __future__ import annotations

import re
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
        """Whether this run departs from the paper (a silent paper never counts as a departure).

        Both values are compared normalised (:func:`comparable`): ``gpt-5.1`` is
        ``openai:gpt-5.1`` on any server, ``temperature=1.0`` is ``temperature=1``.
        """
        paper = comparable(self.paper)
        if paper in ("not stated", "-", ""):
            return False
        return paper != comparable(self.used)

    def as_dict(self) -> dict[str, Any]:
        """The row as ``summary.json`` keeps it."""
        return {"setting": self.name, "paper": self.paper, "used": self.used}


_PROVIDER = re.compile(r"^[a-z][a-z0-9_-]*:(?!//)")
"""A ``provider:`` prefix of a model spec (``openai:``), not a URL scheme."""


def comparable(value: str) -> str:
    """``value`` as the paper comparison reads it.

    Its remark in parentheses is left out, case folded, numbers read by value, model specs by
    model name: ``openai:gpt-5.1@http://host/v1`` and ``gpt-5.1`` are one model (the provider
    prefix, the server and an OpenRouter vendor folder name no other model);
    ``temperature=1.0`` and ``temperature=1``, or ``0.50`` and ``0.5``, one value. A remark
    after the value (`` (§5.1)``, `` (temperature 0)``) says where it comes from or adds a
    detail; a value left unused belongs outside it (``top_k`` not sent is left out of the
    sampling, so the row differs).
    """
    head = value.split(" (", 1)[0].strip().casefold()
    return ",".join(_comparable_part(part.strip()) for part in head.split(","))


def _comparable_part(part: str) -> str:
    if "=" in part:
        key, _, number = part.partition("=")
        return f"{key.strip()}={_number(number.strip())}"
    if _is_number(part):
        return _number(part)
    if not part or any(c.isspace() for c in part):  # prose, not a model spec
        return part
    name = _PROVIDER.sub("", part).split("@", 1)[0]
    return name.rsplit("/", 1)[-1] if name else part


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number(text: str) -> str:
    return f"{float(text):g}" if _is_number(text) else text


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
