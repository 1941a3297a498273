"""Evidence: one retrieved passage with where it came from, the unit the profiler cites."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from personae.urls import split_web_url

WEB_SCHEMES = ("http", "https")
"""The only URL schemes a source may have: a search result's ``javascript:``, ``data:`` or
``file:`` URL must never reach a profile, where a reader would click it."""


def is_web_url(url: str) -> bool:
    """True for an ``http(s)://host/...`` URL with a valid port: the only kind a source may have.

    A port out of range (``http://a.com:99999/x``) or a bracketed host that does not close
    makes ``urlsplit``/``.port`` raise later, in code that does not expect it: checked here.
    """
    return split_web_url(url) is not None


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

    def __post_init__(self) -> None:
        if not is_web_url(self.url):
            raise ValueError(f"a source URL must be http(s), not {self.url[:80]!r}")
