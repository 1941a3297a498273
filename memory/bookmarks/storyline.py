"""Storylines: ordered, character-tagged actions loaded from the BOOKMARKS release or JSONL.

A position is the 0-based index of an action in the whole storyline. Everything that reads a
storyline "up to" a target goes through :meth:`Storyline.before`, so the no-future-read rule
has one place to hold.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Literal

from personae.errors import InputError
from personae.files import parse_json, parse_jsonl, read_json, read_text, require_file
from personae.process_caches import clears_on_reset

SPECIAL_CHARACTERS = frozenset({"Other", "Environment"})
SCENE_SIZE = 10
ActingFormat = Literal["action", "utterance"]
"""How a storyline's characters act: third-person actions (Fandom) or ``Name: line`` utterances
(Bandori). The released BOOKMARKS code decides it per artifact: a storyline listed in
``band2members.json`` beside its file is conversational."""
CHARACTER_LIST = "all_characters.json"
"""The release's list of each artifact's major characters, beside the storyline files."""
BAND_LIST = "band2members.json"
"""The release's list of Bandori bands: the artifacts acted as utterances."""
_RELEASE_NAME = re.compile(r"^title2action_series\.(?P<artifact>.+)\.json$")


@dataclass(frozen=True, slots=True)
class StoryAction:
    """One action of a storyline."""

    position: int
    """0-based index in the whole storyline."""
    chapter: str
    """Episode or chapter title."""
    text: str
    """What happens, e.g. ``Tyrion deduces ...`` or ``Kasumi: Arisa! Good morning~!``."""
    characters: tuple[str, ...]
    """Who takes the action (``Other`` / ``Environment`` for everyone else / the setting)."""

    def by(self, character: str) -> bool:
        """Whether ``character`` takes part in this action."""
        return character in self.characters

    def render(self) -> str:
        """One line for our prompts: ``[position] (characters) text``."""
        return f"[{self.position}] ({', '.join(self.characters)}) {self.text}"


def plain_text(actions: Iterable[StoryAction]) -> str:
    r"""Actions as the released BOOKMARKS runner shows them: their texts, one per line.

    The paper's method (``--method bookmarks``) renders every action this way, as the runner's
    ``"\n".join(item["action"] ...)`` does; ours adds position and characters (``render``).
    """
    return "\n".join(action.text for action in actions)


@dataclass(frozen=True)
class Storyline:
    """A whole storyline: its actions in story order and its chapter titles."""

    name: str
    actions: tuple[StoryAction, ...]
    chapters: tuple[str, ...]
    major_characters: tuple[str, ...] = ()
    """The artifact's major characters (``all_characters.json``); empty when none is listed."""
    acting_format: ActingFormat = "action"
    """``utterance`` for Bandori artifacts (``band2members.json``), else ``action``."""
    _by_character: dict[str, tuple[int, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        index: dict[str, list[int]] = {}
        for action in self.actions:
            for name in action.characters:
                index.setdefault(name, []).append(action.position)
        self._by_character.update({name: tuple(p) for name, p in index.items()})

    def __len__(self) -> int:
        return len(self.actions)

    @cached_property
    def scope(self) -> str:
        """``<name>.<fingerprint>``: the storyline version every store of its memory is named by.

        The bookmark bank, its unknown-question list, the RICL pairs and the ETA profiles are
        all scoped by it, so a corrected re-download of a storyline starts from fresh memory
        instead of reusing answers (and positions) built from the old text, while the same text
        under the same name, wherever its file lives, finds the memory it already has.
        Computed once per loaded storyline (:func:`open_storyline` reuses the object).
        """
        return f"{self.name}.{storyline_fingerprint(self)}"

    @property
    def characters(self) -> list[str]:
        """Every character who acts, special ones excluded, most active first."""
        named = [n for n in self._by_character if n not in SPECIAL_CHARACTERS]
        return sorted(named, key=lambda n: (-len(self._by_character[n]), n))

    def check_position(self, position: int) -> int:
        """Return ``position`` or raise :class:`InputError` if it is outside the storyline."""
        if not 0 <= position < len(self.actions):
            raise InputError(
                f"position {position} is out of range for {self.name} ({len(self.actions)} actions)",
                f"use a position from 0 to {len(self.actions) - 1}",
            )
        return position

    def check_character(self, character: str) -> str:
        """Return ``character`` or raise :class:`InputError` listing the known ones."""
        if character not in self._by_character or character in SPECIAL_CHARACTERS:
            known = ", ".join(self.characters[:15])
            raise InputError(
                f"unknown character {character!r} in {self.name}",
                f"pick one of: {known}",
            )
        return character

    def before(self, position: int, start: int = 0) -> tuple[StoryAction, ...]:
        """Actions in ``[start, position)``: the only window a reader at ``position`` may see."""
        return self.actions[max(0, start) : max(0, position)]

    def scene(self, position: int, size: int = SCENE_SIZE) -> tuple[StoryAction, ...]:
        """The ``size`` actions before ``position`` (the paper's scene)."""
        self.check_position(position)
        return self.before(position, position - size)

    def positions_of(self, character: str) -> tuple[int, ...]:
        """Positions of every action ``character`` takes, in story order."""
        return self._by_character.get(character, ())

    def test_split(self, character: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The paper's split: first half of the character's actions is history, the rest test."""
        positions = self.positions_of(self.check_character(character))
        half = len(positions) // 2
        return positions[:half], positions[half:]


def storyline_fingerprint(storyline: Storyline) -> str:
    """A short digest of every action (position, characters, text): the storyline's version."""
    digest = hashlib.blake2b(digest_size=6)
    for action in storyline.actions:
        digest.update(action.render().encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def artifact_name(path: Path) -> str:
    """``title2action_series.Poppin'Party.json`` -> ``Poppin'Party``; other files: the stem."""
    match = _RELEASE_NAME.match(path.name)
    return match.group("artifact") if match else path.stem


def _characters_of(row: dict[str, object], where: str) -> tuple[str, ...]:
    listed, single = row.get("characters"), row.get("character")
    if isinstance(listed, list):
        bad = [n for n in listed if not (isinstance(n, str) and n.strip())]
        if bad:
            raise InputError(
                f"{where} lists a character that is not a name ({str(bad[0])[:40]!r})",
                "list characters as non-empty strings",
            )
        names = tuple(listed)
    elif isinstance(single, str):
        names = (single,)
    else:
        raise InputError(f"{where} has no 'character' or 'characters'", "tag every action")
    if not isinstance(row.get("action"), str):
        raise InputError(f"{where} has no 'action' text", "give every row an 'action' string")
    return names


def _build(name: str, rows: Iterable[tuple[str, dict[str, object], str]]) -> Storyline:
    actions: list[StoryAction] = []
    chapters: list[str] = []
    for chapter, row, where in rows:
        if not chapters or chapters[-1] != chapter:
            chapters.append(chapter)
        actions.append(
            StoryAction(len(actions), chapter, str(row["action"]), _characters_of(row, where))
        )
    if not actions:
        raise InputError(f"storyline {name} has no actions", "check the file")
    return Storyline(name=name, actions=tuple(actions), chapters=tuple(chapters))


def _load_release(path: Path, data: object) -> Storyline:
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise InputError(
            f"{path} is not a BOOKMARKS storyline",
            "expected {chapter_title: [{action, character|characters}, ...]}",
        )
    rows = (
        (str(chapter), row, f"{path}: chapter {chapter!r} row {i}")
        for chapter, items in data.items()
        for i, row in enumerate(items)
        if isinstance(row, dict) or _bad_row(path, chapter, i)
    )
    return _build(artifact_name(path), rows)


def _bad_row(path: Path, chapter: object, index: int) -> bool:
    raise InputError(f"{path}: chapter {chapter!r} row {index} is not an object", "fix the file")


def _load_jsonl(path: Path, text: str) -> Storyline:
    rows = []
    for number, row in parse_jsonl(text, str(path), "fix that line"):
        if not isinstance(row, dict):
            raise InputError(f"{path}:{number} is not a JSON object", "one action object per line")
        rows.append((str(row.get("chapter", "chapter_1")), row, f"{path}:{number}"))
    return _build(path.stem, rows)


def load_storyline(path: str | Path, major_characters: Iterable[str] = ()) -> Storyline:
    """Load a BOOKMARKS ``title2action_series.*.json`` file or a JSONL file of actions.

    JSONL rows are ``{"action", "character" | "characters", "chapter"?}``. Major characters are
    taken from ``all_characters.json`` beside the file (keyed by artifact name: the release
    name, or a JSONL file's stem) when not given; the acting format is ``utterance`` when the
    artifact is a band of ``band2members.json`` beside the file.
    """
    path = Path(path)
    require_file(path, "storyline file", "check the path")
    text = read_text(path)  # UTF-8, a byte-order mark dropped
    if path.suffix == ".jsonl":
        storyline = _load_jsonl(path, text)
    else:
        storyline = _load_release(path, parse_json(text, str(path), "fix or re-download it"))
    majors = tuple(major_characters) or _majors_beside(path, storyline.name)
    bands = _listing_beside(path, BAND_LIST)
    acting_format: ActingFormat = "utterance" if storyline.name in bands else "action"
    return Storyline(storyline.name, storyline.actions, storyline.chapters, majors, acting_format)


def _listing_beside(path: Path, name: str) -> dict[str, object]:
    """A release listing (``all_characters.json``, ``band2members.json``) beside ``path``.

    A missing file is an empty listing; a present but unreadable one is an error, since
    silently ignoring it would change who is benchmarked or how they act.
    """
    listing = path.parent / name
    if not listing.is_file():
        return {}
    data = read_json(listing, "fix or re-download it")
    if not isinstance(data, dict):
        raise InputError(f"{listing} is not a JSON object", "fix or re-download it")
    return data


def _majors_beside(path: Path, artifact: str) -> tuple[str, ...]:
    entry = _listing_beside(path, CHARACTER_LIST).get(artifact, {})
    if not isinstance(entry, dict):
        return ()
    majors = entry.get("major", ())
    return tuple(str(name) for name in majors) if isinstance(majors, list) else ()


@lru_cache(maxsize=16)
def _cached(path: str, mtime_ns: int, majors: tuple[str, ...]) -> Storyline:
    return load_storyline(path, majors)


clears_on_reset("memory.bookmarks.storyline.parsed", _cached.cache_clear)


def storyline_version(path: str | Path) -> tuple[str, int]:
    """The resolved file and its modification time: one version of a storyline file.

    Raises :class:`InputError` when the file does not exist.
    """
    given = Path(path)
    require_file(given, "storyline file", "check the path")
    return str(given.resolve()), given.stat().st_mtime_ns


def open_storyline(path: str | Path, major_characters: Iterable[str] = ()) -> Storyline:
    """:func:`load_storyline`, cached per file version: graph nodes call it on every step."""
    return _cached(*storyline_version(path), tuple(major_characters))
