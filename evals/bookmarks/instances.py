"""BOOKMARKS test instances: one artifact's targets, all major characters, in one story order.

The paper's protocol: the first half of a character's actions is history, the second half the
test set. The released runner (``benchmark.py`` of ``BOOKMARKS_Koishiday_2026``) then takes the
union of the major characters' test positions, in story order, and at each position predicts
for every major character who takes part in that action: a line two members speak together is
an instance for each of them, even when it falls in one of them's history half (Roselia has
439 instances this way, not 438). Instances come back in that single global order because the
artifact's memory (one shared bookmark bank) must meet the targets as a reader would.

The major characters come from the release's ``all_characters.json``; a storyline without that
list is an error naming the fix (the list, or ``--characters``), never "every named character".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from personae.errors import InputError
from personae.memory.bookmarks.storyline import (
    CHARACTER_LIST,
    SCENE_SIZE,
    ActingFormat,
    StoryAction,
    Storyline,
)


@dataclass(frozen=True)
class BenchInstance:
    """One test instance: predict ``character``'s action at ``position``."""

    artifact: str
    """Storyline name (``haruhi``, ``Poppin'Party``)."""
    character: str
    position: int
    """Target position; the method may read only actions before it."""
    truth: str
    """The true action text at ``position``."""
    chapter: str
    """Chapter of the target action."""
    scene: tuple[StoryAction, ...]
    """The ``SCENE_SIZE`` actions before ``position``."""
    acting_format: ActingFormat = "action"
    """``utterance`` (Bandori: ``Name: line``) or ``action`` (Fandom: third person)."""

    @property
    def key(self) -> tuple[str, str, int]:
        """(artifact, character, position): unique within a benchmark."""
        return self.artifact, self.character, self.position


def benchmarked_characters(storyline: Storyline) -> list[str]:
    """The storyline's listed major characters that act in it, in the list's order.

    Raises :class:`InputError` when the storyline has no major-character list: guessing
    ("every named character") would benchmark a different cast than the paper's.
    """
    if not storyline.major_characters:
        raise InputError(
            f"storyline {storyline.name!r} has no major-character list (no {CHARACTER_LIST} "
            "beside its file naming it)",
            f"put the release's {CHARACTER_LIST} beside the storyline file, or pass "
            "--characters NAME ...",
        )
    acting = set(storyline.characters)
    return [name for name in storyline.major_characters if name in acting]


def _instance(storyline: Storyline, character: str, position: int, size: int) -> BenchInstance:
    action = storyline.actions[position]
    return BenchInstance(
        artifact=storyline.name,
        character=character,
        position=position,
        truth=action.text,
        chapter=action.chapter,
        scene=storyline.scene(position, size),
        acting_format=storyline.acting_format,
    )


def artifact_instances(
    storyline: Storyline,
    cast: Sequence[str],
    limit: int | None = None,
    scene_size: int = SCENE_SIZE,
) -> list[BenchInstance]:
    """The artifact's instances for ``cast`` in one global story order (see module doc).

    Test positions are the union of the cast's second halves; each position yields one instance
    per cast member taking part, in the action's own character order. ``limit`` keeps each
    character's first ``limit`` instances (in that order).
    """
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}", "pass 1 or more")
    members = set(cast)
    positions = sorted({p for name in cast for p in storyline.test_split(name)[1]})
    taken: dict[str, int] = dict.fromkeys(cast, 0)
    result: list[BenchInstance] = []
    for position in positions:
        for name in dict.fromkeys(storyline.actions[position].characters):
            if name not in members or (limit is not None and taken[name] >= limit):
                continue
            taken[name] += 1
            result.append(_instance(storyline, name, position, scene_size))
    return result


def instances_for(
    storyline: Storyline, character: str, limit: int | None = None, scene_size: int = SCENE_SIZE
) -> list[BenchInstance]:
    """One character's own test half in story order, the first ``limit`` if given.

    (The benchmark uses :func:`artifact_instances`, which adds multi-speaker lines.)
    """
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}", "pass 1 or more")
    _, test = storyline.test_split(character)
    chosen = test if limit is None else test[:limit]
    return [_instance(storyline, character, position, scene_size) for position in chosen]


def build_instances(
    storylines: Iterable[Storyline],
    characters: Sequence[str] | None = None,
    limit: int | None = None,
    scene_size: int = SCENE_SIZE,
) -> dict[str, list[BenchInstance]]:
    """Each artifact's instances in its global story order (see :func:`artifact_instances`).

    With ``characters``, each storyline's cast is the requested names it contains (no
    character list needed); a name found in none of them is an :class:`InputError` (a typo must
    not silently run nothing). Without, every storyline needs its major-character list.
    """
    storylines = list(storylines)
    result: dict[str, list[BenchInstance]] = {}
    wanted = list(dict.fromkeys(characters or ()))
    found: set[str] = set()
    for storyline in storylines:
        if wanted:
            cast = [n for n in wanted if n in storyline.characters]
            found.update(cast)
        else:
            cast = benchmarked_characters(storyline)
        if cast:
            result[storyline.name] = artifact_instances(storyline, cast, limit, scene_size)
    missing = [name for name in wanted if name not in found]
    if missing:
        known = sorted({n for s in storylines for n in s.characters})
        raise InputError(
            f"unknown character {missing[0]!r} in {', '.join(s.name for s in storylines)}",
            f"pick one of: {', '.join(known[:15])}",
        )
    return result
