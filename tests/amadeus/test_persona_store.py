"""The persona index: incremental re-index, cosine retrieval, clear errors on mismatches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from personae.errors import InputError
from personae.memory.amadeus.persona_chunks import split_persona
from personae.memory.amadeus.persona_doc import PersonaDoc, parse_markdown
from personae.memory.amadeus.persona_store import (
    PersonaIndex,
    collection_name,
    open_client,
    open_persona_index,
)
from personae.memory.chroma import SEARCH_EF
from personae.memory.embeddings import HashingTextEmbedding

PERSONA = """# Iago

## Profile

I am Othello's ensign and I trust no one.

I resent Cassio's promotion.

## Activity

### Act I

I stir Roderigo against Brabantio.

### Act II

I make Cassio drunk on watch.
"""


class CountingEmbedding(HashingTextEmbedding):
    """Hashing vectors, counting the texts the index asks to embed."""

    def __init__(self, dimensions: int = 384) -> None:
        super().__init__(dimensions)
        self.embedded: list[str] = []

    def embed(self, texts: Any) -> np.ndarray:
        self.embedded += list(texts)
        return super().embed(texts)


def _index(tmp_path: Path, embedding: Any) -> PersonaIndex:
    return PersonaIndex(open_client(str(tmp_path / "mem")), "Iago", "acts", embedding)


def _sync(index: PersonaIndex, doc: PersonaDoc) -> Any:
    return index.sync(doc, split_persona(doc, "acts"))


def test_reindex_touches_only_changed_sections(tmp_path: Path) -> None:
    embedding = CountingEmbedding()
    index = _index(tmp_path, embedding)
    doc = parse_markdown(PERSONA, "Iago")
    first = _sync(index, doc)
    assert first.added == first.chunks == index.count() and first.deleted == 0
    embedding.embedded.clear()

    again = _sync(index, doc)
    assert (again.added, again.deleted, again.kept) == (0, 0, first.chunks)
    assert embedding.embedded == []  # an unchanged document writes nothing

    edited = parse_markdown(PERSONA.replace("drunk on watch", "drunk on the watch"), "Iago")
    stats = _sync(index, edited)
    assert (stats.added, stats.deleted, stats.sections_new, stats.sections_gone) == (1, 1, 1, 1)
    assert embedding.embedded == [
        "I make Cassio drunk on the watch.\n[Context: Iago > Activity > Act II]"
    ]

    dropped = parse_markdown(PERSONA.split("### Act II")[0], "Iago")
    before = {chunk_id for chunk_id, _ in index.all_chunks()}
    stats = _sync(index, dropped)
    after = {chunk_id for chunk_id, _ in index.all_chunks()}
    assert stats.deleted == 1 and stats.added == 0 and len(before - after) == 1
    assert all("Act II" not in text for _, text in index.all_chunks())
    assert index.manifest["sha256"] == dropped.sha256


def test_query_ranks_by_cosine_similarity(tmp_path: Path) -> None:
    index = _index(tmp_path, HashingTextEmbedding())
    _sync(index, parse_markdown(PERSONA, "Iago"))
    found = index.query("Who did you make drunk on watch?", 10)
    assert found[0].text.startswith("I make Cassio drunk")
    assert [c.rank for c in found] == list(range(len(found))) == list(range(index.count()))
    sims = [c.similarity for c in found]
    assert sims == sorted(sims, reverse=True) and -1.0 <= sims[-1] <= sims[0] <= 1.0


def test_unknown_character_and_embedding_mismatch_are_one_line_errors(tmp_path: Path) -> None:
    memory = str(tmp_path / "mem")
    _sync(_index(tmp_path, HashingTextEmbedding()), parse_markdown(PERSONA, "Iago"))
    with pytest.raises(InputError, match=r"unknown character 'Othello' \(indexed: Iago\)"):
        open_persona_index("Othello", splitter="acts", embedding="hashing", memory_dir=memory)
    with pytest.raises(InputError, match="embedding mismatch: iago is indexed with hashing, "):
        open_persona_index(
            "iago", splitter="acts", embedding=HashingTextEmbedding(128), memory_dir=memory
        )
    with pytest.raises(InputError, match="splitter mismatch: iago is indexed with the acts "):
        open_persona_index("iago", splitter="ats", embedding="hashing", memory_dir=memory)
    index = open_persona_index("iago", splitter="acts", embedding="hashing", memory_dir=memory)
    assert index.character == "Iago"

    class Wider(HashingTextEmbedding):
        def embed(self, texts: Any) -> np.ndarray:
            vectors = super().embed(texts)
            return np.hstack([vectors, np.zeros((len(vectors), 1), dtype=np.float32)])

    wrong = PersonaIndex(index.client, "Iago", "acts", Wider())
    with pytest.raises(InputError, match="embedding mismatch: .* stores 384-dimensional"):
        wrong.query("anything", 3)


def test_writes_are_batched_below_chromas_maximum(tmp_path: Path) -> None:
    index = _index(tmp_path, HashingTextEmbedding(16))
    paragraphs = "\n\n".join(f"Fact {i}." for i in range(12))
    doc = parse_markdown(f"# Iago\n\n## Facts\n\n{paragraphs}\n", "Iago")
    index._write_batch = lambda: 5  # type: ignore[method-assign]
    stats = _sync(index, doc)
    assert stats.added == index.count() == 12
    assert _sync(index, parse_markdown("# Iago\n\n## Facts\n\nOnly one.\n", "Iago")).deleted == 12


def test_an_index_from_before_the_setting_names_its_embedding_as_a_setting(tmp_path: Path) -> None:
    index = _index(tmp_path, HashingTextEmbedding())
    _sync(index, parse_markdown(PERSONA, "Iago"))
    old = {k: v for k, v in index.manifest.items() if k != "embedding_spec"}
    index.collection.modify(metadata=old)  # as written before embedding_spec was recorded
    with pytest.raises(InputError, match="set PERSONAE_EMBEDDINGS .* to hashing, or re-index"):
        open_persona_index(
            "Iago",
            splitter="acts",
            embedding=HashingTextEmbedding(16),
            memory_dir=str(tmp_path / "mem"),
        )


def test_the_index_searches_with_a_wide_beam_and_raises_an_old_one(tmp_path: Path) -> None:
    """ef_search SEARCH_EF (recall 0.99 against exact search; benchmarks/bench_amadeus.py)."""
    index = _index(tmp_path, HashingTextEmbedding())
    assert index.collection.configuration_json["hnsw"]["ef_search"] == SEARCH_EF
    client = open_client(str(tmp_path / "old"))
    old = client.get_or_create_collection(
        collection_name("Iago", "acts", "hashing-384"),
        embedding_function=None,
        configuration={"hnsw": {"space": "cosine"}},  # as indexes were made before
    )
    assert old.configuration_json["hnsw"]["ef_search"] == 100
    PersonaIndex(client, "Iago", "acts", HashingTextEmbedding())
    again = PersonaIndex(client, "Iago", "acts", HashingTextEmbedding()).collection
    assert again.configuration_json["hnsw"]["ef_search"] == SEARCH_EF
    assert again.configuration_json["hnsw"]["space"] == "cosine"
