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
    usage = document.get("usage") if isinstance(document.get("usage"), dict) else {}
    dimensions = document.get("dimensions") if isinstance(document.get("dimensions"), dict) else {}
    has_facts = any(dimensions.values())
    return "checked" if not has_facts or (usage or {}).get("facts_checked") else "not checked"


class ProfileShelf:
    """The summaries of one profiles folder, each re-read only when its file changed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[tuple[int, int], ProfileSummary | None]] = {}

    def summaries(self) -> tuple[list[ProfileSummary], list[str]]:
        """Every profile and draft of the folder, in folder-name order; the unreadable keys.

        A folder whose file is not a JSON object (half copied, foreign) is not a row; its key
        is returned so the page can say so rather than hide it.
        """
        if not self.folder.is_dir():
            return [], []
        found: list[ProfileSummary] = []
        unreadable: list[str] = []
        seen: set[Path] = set()
        with os.scandir(self.folder) as entries:
            for entry in entries:
                if not PROFILE_KEY.fullmatch(entry.name) or not entry.is_dir():
                    continue
                path = self._file(entry)
                if path is None:
                    continue
                seen.add(path)
                summary = self._cached(entry.name, path)
                if summary is None:
                    unreadable.append(entry.name)
                else:
                    found.append(summary)
        with self._lock:  # forget the folders deleted since
            for path in set(self._cache) - seen:
                del self._cache[path]
        return sorted(found, key=lambda summary: summary.key), sorted(unreadable)

    def _file(self, entry: os.DirEntry[str]) -> Path | None:
        """The folder's profile (else draft) file; None without one or when linked outside."""
        for name in (PROFILE_FILE, DRAFT_FILE):
            path = Path(entry.path, name)
            try:
                status = os.lstat(path)
            except OSError:
                continue
            if entry.is_symlink() or stat.S_ISLNK(status.st_mode):
                if not inside(path, (self.folder,)):
                    return None  # a link out of the folder is neither served nor listed
                if not path.is_file():
                    continue
            elif not stat.S_ISREG(status.st_mode):
                continue
            return path
        return None

    def _cached(self, key: str, path: Path) -> ProfileSummary | None:
        try:
            status = os.stat(path)
        except OSError:  # deleted since the folder was read
            return None
        stamp = (status.st_mtime_ns, status.st_size)
        with self._lock:
            hit = self._cache.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        try:
            summary: ProfileSummary | None = summarize(key, read_document(path), status.st_mtime)
        except InputError:
            summary = None  # a half-copied or foreign file: not a profile to list
        with self._lock:
            self._cache[path] = (stamp, summary)
        return summary
