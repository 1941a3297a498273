"""The clean structure a wiki character page is parsed into (used by the profiler and evals)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class InfoboxField:
    """One infobox row."""

    label: str
    """Human label as shown (``Occupation``); falls back to the ``data-source`` key."""
    value: str
    """Clean value text; list items joined with ``; ``."""
    source: str | None = None
    """Template parameter name (``data-source``), when the wiki exposes it."""
    group: str | None = None
    """Infobox group header the row sits under (``Personal information``)."""


@dataclass(frozen=True, slots=True)
class WikiSection:
    """One section of the article body, split on headings."""

    heading: str
    """Heading text without edit links (``Abilities``); ``""`` for the lead."""
    level: int
    """Heading level: 2 for ``h2``; 1 for the lead."""
    text: str
    """Clean paragraph text without citation marks, navboxes, galleries, edit links."""


@dataclass(frozen=True, slots=True)
class WikiPage:
    """A parsed wiki page."""

    title: str
    url: str
    infobox: tuple[InfoboxField, ...]
    sections: tuple[WikiSection, ...]
    is_disambiguation: bool = False
    """True for "X may refer to" pages: the caller must pick a candidate instead."""

    def infobox_dict(self) -> dict[str, str]:
        """Infobox as ``{label: value}`` (first occurrence of a label wins)."""
        fields: dict[str, str] = {}
        for row in self.infobox:
            fields.setdefault(row.label, row.value)
        return fields

    def section(self, heading: str) -> WikiSection | None:
        """The first section whose heading equals ``heading`` (case-insensitive)."""
        wanted = heading.casefold()
        return next((s for s in self.sections if s.heading.casefold() == wanted), None)

    def text(self) -> str:
        """Whole body as plain text with headings, for knowledge extraction and evidence."""
        parts = [f"{s.heading}\n{s.text}" if s.heading else s.text for s in self.sections]
        return "\n\n".join(p for p in parts if p.strip())
