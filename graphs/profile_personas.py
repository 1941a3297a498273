"""A finished profile becomes an AMADEUS persona: the one bridge between two papers' tools.

CharacterHub's ``profile_character`` tool writes a profile; AMADEUS's ``ask_character`` tool
answers from a persona index. An agent holding both could profile a character and never talk
to it (issue 35). The bridge lives at the graphs root, as shared code between papers does: the
profile tool calls :func:`index_profile` with the index its app gave it, and neither paper's
subfolder imports the other's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.tools.amadeus.indexing import IndexSettings

PersonaIndexTarget: TypeAlias = "IndexSettings | AmadeusContext"
"""Where a profile is indexed: explicit settings (what ``index_persona``'s ``index`` takes),
or the ``AmadeusContext`` an ``ask_character`` tool reads with (the same folder, splitter,
embedding and Chroma server)."""


def index_settings(target: PersonaIndexTarget) -> IndexSettings:
    """The index ``target`` names; a context's embedding is opened here (a typo fails now)."""
    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.tools.amadeus.indexing import IndexSettings

    if not isinstance(target, AmadeusContext):
        return target
    return IndexSettings(
        memory_dir=target.memory_dir,
        splitter=target.splitter,
        embedding=target.text_embedding(),
        chroma_host=target.chroma_host or None,
        chroma_port=target.chroma_port,
    )


async def index_profile(document: Mapping[str, Any], index: IndexSettings) -> str:
    """Index the profile ``document`` (``profile.json``'s record) as a persona; its name.

    Re-indexing the same character re-embeds only the sections that changed.
    """
    from personae.tools.amadeus.indexing import index_document
    from personae.tools.amadeus.persona_import import persona_from_profile

    persona = persona_from_profile(document, source="the profile_character tool")
    await asyncio.to_thread(index_document, persona, index)
    return persona.character
