"""BOOKMARKS test instances: for each benchmarked character, the second half of their actions.

The paper's protocol: the first half of a character's actions is history, the second half the
test set; an instance is (character, position, true action, the 10-action scene before it).
Instances are returned in story order because memory methods must see targets in the order a
reader would meet them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from personae.errors import InputError
from personae.memory.storyline import SCENE_SIZE, StoryAction, Storyline


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

    @property
    def key(self) -> tuple[str, str, int]:
        """(artifact, character, position): unique within a benchmark."""
        return self.artifact, self.character, self.position


def benchmarked_characters(storyline: Storyline) -> list[str]:
    """The storyline's major characters that act in it; every named character if none listed."""
    acting = set(storyline.characters)
    majors = [name for name in storyline.major_characters if name in acting]
    return majors or list(storyline.characters)


def select_characters(storyline: Storyline, requested: Sequence[str] | None) -> list[str]:
    """The characters to run: ``requested`` (checked) or the benchmarked ones."""
    if not requested:
        return benchmarked_characters(storyline)
    return [storyline.check_character(name) for name in dict.fromkeys(requested)]


def instances_for(
    storyline: Storyline, character: str, limit: int | None = None, scene_size: int = SCENE_SIZE
) -> list[BenchInstance]:
    """The character's test instances in story order, the first ``limit`` if given."""
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}", "pass 1 or more")
    _, test = storyline.test_split(character)
    chosen = test if limit is None else test[:limit]
    return [
        BenchInstance(
            artifact=storyline.name,
            character=character,
            position=position,
            truth=storyline.actions[position].text,
            chapter=storyline.actions[position].chapter,
            scene=storyline.scene(position, scene_size),
        )
        for position in chosen
    ]


def build_instances(
    storylines: Iterable[Storyline],
    characters: Sequence[str] | None = None,
    limit: int | None = None,
    scene_size: int = SCENE_SIZE,
) -> dict[tuple[str, str], list[BenchInstance]]:
    """Instances per (artifact, character) over several storylines.

    With ``characters``, each storyline runs the requested names it contains; a name found in
    none of them is an :class:`InputError` (a typo must not silently run nothing).
    """
    storylines = list(storylines)
    result: dict[tuple[str, str], list[BenchInstance]] = {}
    wanted = list(dict.fromkeys(characters or ()))
    found: set[str] = set()
    for storyline in storylines:
        if wanted:
            names = [n for n in wanted if n in storyline.characters]
            found.update(names)
        else:
            names = benchmarked_characters(storyline)
        for name in names:
            result[(storyline.name, name)] = instances_for(storyline, name, limit, scene_size)
    missing = [name for name in wanted if name not in found]
    if missing:
        known = sorted({n for s in storylines for n in benchmarked_characters(s)})
        raise InputError(
            f"unknown character {missing[0]!r} in {', '.join(s.name for s in storylines)}",
            f"pick one of: {', '.join(known[:15])}",
        )
    return result
