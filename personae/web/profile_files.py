"""The profiles folder as the pages read it: keys checked, a summary per profile, cached.

A profile is the folder ``personae profile`` writes (``profile.json``, ``profile.md``,
``card.json``), or, when a run ended with nothing usable, its unchecked ``draft.json``. A key
from a request is accepted only if it is a name Personae makes
(:data:`personae.mcp.resources.PROFILE_KEY`) and its file lies inside the profiles folder once
links are followed, so no URL reaches another file.

The list shows five things per profile; with a thousand profiles, parsing every
``profile.json`` (each holds its sources' full text) on every request would be the page's whole
cost. :class:`ProfileShelf` keeps each summary with the file's modification time and size and
parses again only a file that changed: a warm list costs one ``stat`` per profile.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.requests import Request

from personae.errors import InputError
from personae.mcp.resources import PROFILE_KEY
from personae.web.security import inside

PROFILE_FILE = "profile.json"
DRAFT_FILE = "draft.json"


@dataclass(frozen=True)
class ProfileSummary:
    """One row of the Profiles list."""

    key: str
    """The folder name (``mara-vell--the-keeper-of-gull-rock``)."""
    name: str
    """The profile's ``character``."""
    franchise: str
    """The profile's ``franchise`` ("" when none)."""
    facts: int
    """Facts kept over every dimension."""
    check: str
    """``checked`` (the citation check ran), ``not checked`` (it was off) or ``draft``."""
    written: float
    """When the profile (or draft) file was last written (POSIX time)."""

    @property
    def date(self) -> str:
        """``written`` as UTC ``YYYY-MM-DD HH:MM``."""
        return datetime.fromtimestamp(self.written, UTC).strftime("%Y-%m-%d %H:%M")


def unknown_profile(folder: Path, key: str) -> InputError:
    """The one-line error for a key that names no profile."""
    return InputError(
        f"no profile {key!r} in {folder}",
        "pick one from the Profiles list, or make it with personae profile NAME",
    )


def profile_file(folder: Path, key: str) -> Path:
    """The file of profile ``key``: ``profile.json``, else its ``draft.json``.

    Raises:
        InputError: ``key`` is not a name Personae makes, names no profile, or its file lies
            outside ``folder`` (a link out of the folder).
    """
    if PROFILE_KEY.fullmatch(key):
        for name in (PROFILE_FILE, DRAFT_FILE):
            path = folder / key / name
            if path.is_file() and inside(path, (folder,)):
                return path
    raise unknown_profile(folder, key)


def read_document(path: Path) -> dict[str, Any]:
    """The JSON object of ``path`` (a file Personae wrote; anything else is an error).

    Raises:
        InputError: the file is not a JSON object.
    """
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(
            f"{path} is not readable JSON ({error})", "profile the character again"
        ) from error
    if not isinstance(value, dict):
        raise InputError(f"{path} is not a profile (not a JSON object)", "profile it again")
    return value


def summarize(key: str, document: dict[str, Any], written: float) -> ProfileSummary:
    """The list row of one profile document."""
    dimensions = document.get("dimensions")
    facts = 0
    if isinstance(dimensions, dict):
        facts = sum(len(items) for items in dimensions.values() if isinstance(items, list))
    return ProfileSummary(
        key=key,
        name=str(document.get("character") or key),
        franchise=str(document.get("franchise") or ""),
        facts=facts,
        check=check_state(document),
        written=written,
    )


def check_state(document: dict[str, Any]) -> str:
    """``draft``, ``checked`` or ``not checked`` (``--no-check-citations``: no fact checked)."""
    if document.get("checked") is False:
        return "draft"
    usage, dimensions = document.get("usage"), document.get("dimensions")
    has_facts = isinstance(dimensions, dict) and any(dimensions.values())
    checked = isinstance(usage, dict) and bool(usage.get("facts_checked"))
    return "checked" if checked or not has_facts else "not checked"


class ProfileShelf:
    """The summaries of one profiles folder, each re-read only when its file changed.

    The warm path is a ``scandir`` and one ``lstat`` per profile on plain strings (no
    ``Path`` objects, one lock per request): at a thousand profiles that is what the list costs.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[int, int], ProfileSummary | None]] = {}

    def summaries(self) -> tuple[list[ProfileSummary], list[str]]:
        """Every profile and draft of the folder, in folder-name order; the unreadable keys.

        A folder whose file is not a JSON object (half copied, foreign) is not a row; its key
        is returned so the page can say so rather than hide it.
        """
        if not self.folder.is_dir():
            return [], []
        found: list[ProfileSummary] = []
        unreadable: list[str] = []
        with self._lock:
            cache, self._cache = self._cache, {}
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    if not PROFILE_KEY.fullmatch(entry.name) or not entry.is_dir():
                        continue
                    found_file = self._file(entry)
                    if found_file is None:
                        continue
                    path, status = found_file
                    stamp = (status.st_mtime_ns, status.st_size)
                    hit = cache.get(path)
                    summary = hit[1] if hit is not None and hit[0] == stamp else None
                    if hit is None or hit[0] != stamp:
                        summary = _read_summary(entry.name, path, status.st_mtime)
                    self._cache[path] = (stamp, summary)  # folders deleted since are forgotten
                    if summary is None:
                        unreadable.append(entry.name)
                    else:
                        found.append(summary)
        return sorted(found, key=lambda summary: summary.key), sorted(unreadable)

    def _file(self, entry: os.DirEntry[str]) -> tuple[str, os.stat_result] | None:
        """The folder's profile (else draft) file and status; None if none or linked outside."""
        for name in (PROFILE_FILE, DRAFT_FILE):
            path = os.path.join(entry.path, name)
            try:
                status = os.lstat(path)
            except OSError:
                continue
            if entry.is_symlink() or stat.S_ISLNK(status.st_mode):
                if not inside(Path(path), (self.folder,)):
                    return None  # a link out of the folder is neither served nor listed
                try:
                    status = os.stat(path)
                except OSError:
                    continue
            if stat.S_ISREG(status.st_mode):
                return path, status
        return None


def _read_summary(key: str, path: str, written: float) -> ProfileSummary | None:
    try:
        return summarize(key, read_document(Path(path)), written)
    except InputError:
        return None  # a half-copied or foreign file: listed as unreadable


def shelf(request: Request) -> ProfileShelf:
    """The app's summaries of its profiles folder (one per app, kept between requests)."""
    state = request.app.state
    found = getattr(state, "profile_shelf", None)
    if found is None:
        found = state.profile_shelf = ProfileShelf(state.options.profiles_dir)
    return found
