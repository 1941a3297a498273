"""Evidence: one retrieved passage with where it came from, the unit the profiler cites."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Evidence:
    """A passage returned by web or wiki search, before the profiler assigns it a source id."""

    url: str
    """Canonical URL of the page the passage comes from."""
    title: str
    """Page title."""
    content: str
    """Clean text (already stripped of markup, citation marks, navboxes)."""
    origin: Literal["web", "wiki"]
    """Which tool found it."""
    query: str
    """The query that found it (kept for the per-round log)."""
