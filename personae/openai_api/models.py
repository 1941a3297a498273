"""The models this server offers: every indexed persona, every ARCANE character at each chapter.

A persona is its name as indexed (``Mara Vell``); an ARCANE character is
``novel/character@chapter`` (``the_keeper_of_gull_rock/Mara@3``): the character as they are at
the end of that chapter, nothing after it known. Every chapter is listed, so a chat app's model
picker offers the whole timeline; any chapter of the novel is accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from personae.errors import PersonaeError
from personae.openai_api.errors import APIError, model_not_found

CHAPTER_MODEL = re.compile(r"^(?P<novel>[^/]+)/(?P<character>.+)@(?P<chapter>\d+)$")
"""``novel/character@chapter``."""


@dataclass(frozen=True)
class PersonaModel:
    """An AMADEUS persona, answered with its retrieval."""

    character: str
    """The name the persona is indexed under (its model id)."""

    @property
    def id(self) -> str:
        """The model id."""
        return self.character


@dataclass(frozen=True)
class ChapterModel:
    """An ARCANE character as of a chapter of an imported novel."""

    novel: str
    """The novel's slug (its folder in the data folder)."""
    character: str
    """The character, as their arcs name them."""
    chapter: int
    """The query chapter: nothing after it reaches the answer."""

    @property
    def id(self) -> str:
        """The model id."""
        return f"{self.novel}/{self.character}@{self.chapter}"


CharacterModel = PersonaModel | ChapterModel


def persona_models(personas_dir: Path) -> list[PersonaModel]:
    """The indexed personas of the memory folder, one per character (none when it is absent)."""
    if not personas_dir.is_dir():
        return []  # opening Chroma on a missing folder would create it
    from personae.memory.amadeus.persona_store import indexed_personas, open_client

    names: dict[str, str] = {}
    for manifest in indexed_personas(open_client(str(personas_dir))):
        name = str(manifest["character"])
        names.setdefault(name.casefold(), name)
    return [PersonaModel(name) for name in sorted(names.values(), key=str.casefold)]


def chapter_models(data_dir: Path) -> list[ChapterModel]:
    """Every character with arcs in every imported novel, at each of its chapters.

    A novel whose files cannot be read is left out (the web page's arcs view names its error).
    """
    from personae.memory.arcane.novel_store import known_novels, open_novel
    from personae.memory.arcane.records import load_arcs

    found: list[ChapterModel] = []
    if not data_dir.is_dir():
        return found
    for slug in known_novels(data_dir):
        try:
            novel = open_novel(data_dir, slug)
            cast = sorted({arc.character for arc in load_arcs(novel.folder)})
        except PersonaeError:
            continue
        for character in cast:
            found.extend(
                ChapterModel(novel.slug, character, chapter)
                for chapter in range(1, novel.count + 1)
            )
    return found


def all_models(personas_dir: Path, data_dir: Path) -> list[CharacterModel]:
    """What ``GET /v1/models`` lists: the personas, then the ARCANE characters."""
    return [*persona_models(personas_dir), *chapter_models(data_dir)]


def resolve_model(model: str, personas_dir: Path, data_dir: Path) -> CharacterModel:
    """The character a request's ``model`` names, or a 404 saying what the server offers.

    A persona is matched case-insensitively (as the chat command does); an id shaped
    ``novel/character@chapter`` is an ARCANE character when no persona has that name.
    """
    wanted = model.strip().casefold()
    for persona in persona_models(personas_dir):
        if persona.character.casefold() == wanted:
            return persona
    shaped = CHAPTER_MODEL.match(model.strip())
    if shaped is not None:
        return _chapter_model(model, shaped, data_dir)
    raise model_not_found(model, "pick a persona or a novel/character@chapter from GET /v1/models")


def _chapter_model(model: str, shaped: re.Match[str], data_dir: Path) -> ChapterModel:
    from personae.memory.arcane.novel_store import known_novels, open_novel
    from personae.memory.arcane.records import load_arcs

    slug, character = shaped["novel"], shaped["character"]
    if not data_dir.is_dir() or slug not in known_novels(data_dir):
        raise model_not_found(model, f"no imported novel {slug!r}; see GET /v1/models")
    try:
        novel = open_novel(data_dir, slug)
        cast = {arc.character for arc in load_arcs(novel.folder)}
    except PersonaeError as error:
        raise APIError(500, str(error), type="server_error", code="novel_unreadable") from None
    if character not in cast:
        listed = ", ".join(sorted(cast)) or "none"
        raise model_not_found(model, f"{character!r} has no arcs in {slug} (with arcs: {listed})")
    chapter = int(shaped["chapter"])
    if not 1 <= chapter <= novel.count:
        raise model_not_found(model, f"{slug} has chapters 1 to {novel.count}")
    return ChapterModel(novel.slug, character, chapter)
