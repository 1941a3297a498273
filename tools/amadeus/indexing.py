"""Index a persona source for AMADEUS: import, split (ACTS/ATS/fixed), sync the Chroma index.

One function shared by ``personae amadeus index``, ``personae chat PROFILE.json`` and the
evaluations that build personas on the fly. Re-running it on an unchanged source writes
nothing; an edited source re-embeds only the sections that changed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from personae.memory.amadeus.persona_chunks import (
    FIXED_OVERLAP,
    FIXED_SIZE,
    Splitter,
    split_persona,
)
from personae.memory.amadeus.persona_doc import PersonaDoc
from personae.memory.amadeus.persona_store import IndexStats, PersonaIndex, open_client
from personae.memory.embeddings import TextEmbedding, open_embedding
from personae.settings import DEFAULT_EMBEDDINGS, Settings
from personae.tools.amadeus.persona_import import load_persona


@dataclass(frozen=True, kw_only=True)
class IndexSettings:
    """Where and how to index."""

    memory_dir: str | None
    """Folder of the embedded Chroma store (None: in memory)."""
    splitter: Splitter = "acts"
    """acts (the paper's), ats or fixed (ablations)."""
    embedding: str | TextEmbedding = DEFAULT_EMBEDDINGS
    """The embedding (the CLI passes its run context's, :mod:`personae.graphs.store_context`),
    or a ``PERSONAE_EMBEDDINGS`` value needing no server (``hashing``, ``local``); one index
    per embedding."""
    fixed_size: int = FIXED_SIZE
    """Chunk size of the fixed splitter."""
    fixed_overlap: int = FIXED_OVERLAP
    """Overlap of the fixed splitter."""
    max_chunk_chars: int | None = None
    """Cap on ACTS/ATS l_max for embedders with a short input limit (off: the paper's rule)."""
    chroma_host: str | None = None
    """Chroma server instead of ``memory_dir``."""
    chroma_port: int = 8000
    """Chroma server port."""


def index_document(doc: PersonaDoc, options: IndexSettings) -> IndexStats:
    """Split ``doc`` and bring its index up to date (blocking: Chroma and embeddings)."""
    function = options.embedding
    if isinstance(function, str):
        function = open_embedding(function)  # openai: needs the server: pass the embedding
    chunks = split_persona(
        doc,
        options.splitter,
        fixed_size=options.fixed_size,
        fixed_overlap=options.fixed_overlap,
        max_chunk_chars=options.max_chunk_chars,
    )
    client = open_client(options.memory_dir, options.chroma_host, options.chroma_port)
    return PersonaIndex(client, doc.character, options.splitter, function).sync(doc, chunks)


async def index_persona(
    source: str, character: str | None, options: IndexSettings, *, settings: Settings
) -> tuple[PersonaDoc, IndexStats]:
    """Import ``source`` (file or wiki URL) and index it; blocking work runs in a thread."""
    doc = await load_persona(source, character, settings=settings)
    stats = await asyncio.to_thread(index_document, doc, options)
    return doc, stats


LONG_CHUNK_CHARS = 2000
"""About 512 tokens of English: the input limit of smaller embedders (mE5-large-instruct)."""


def long_chunk_warning(stats: IndexStats) -> str | None:
    """A warning when l_max may exceed a small embedder's input limit (text beyond is cut)."""
    if stats.l_max <= LONG_CHUNK_CHARS:
        return None
    return (
        f"chunks of up to {stats.l_max:,} characters may exceed an embedder's input limit "
        f"(mE5-large-instruct reads 512 tokens, about {LONG_CHUNK_CHARS:,} characters); "
        "--max-chunk-chars caps them"
    )
