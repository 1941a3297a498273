"""Small collections are searched exactly in numpy: the same top-k as Chroma's HNSW, fresh data.

A persona (about a hundred chunks) and a novel (a few thousand) are below
:data:`~personae.memory.exact.EXACT_MAX`: one product over every stored vector replaces the
HNSW walk. The ranking must be the one HNSW gives at these sizes (its beam then visits every
chunk: exact), chapter masks must hold, and a re-index must be seen at the next query.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from arcane_world import future_marks, imported_novel

from personae.memory import exact
from personae.memory.amadeus import persona_store
from personae.memory.amadeus.persona_chunks import split_persona
from personae.memory.amadeus.persona_doc import PersonaDoc, parse_markdown
from personae.memory.amadeus.persona_store import PersonaIndex, open_client
from personae.memory.arcane import novel_chunks
from personae.memory.arcane.novel_chunks import ChunkIndex
from personae.memory.embeddings import HashingTextEmbedding

WORDS = "magic crimson demon journey friend village sword battle promise memory dragon".split()


def _persona(seed: int, sections: int = 40) -> str:
    rng = random.Random(seed)
    parts = ["# Big"]
    for number in range(sections):
        parts.append(f"## Part {number}")
        parts.append(" ".join(rng.choice(WORDS) for _ in range(60)) + f" mark{number}.")
    return "\n\n".join(parts)


def _indexed(folder: Path, seed: int = 3) -> PersonaIndex:
    index = PersonaIndex(open_client(str(folder)), "Big", "acts", HashingTextEmbedding())
    doc = parse_markdown(_persona(seed), "Big")
    index.sync(PersonaDoc(doc.character, doc.sections, source="test"), split_persona(doc))
    return index


def _hnsw(monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
    monkeypatch.setattr(module, "EXACT_MAX", -1)


def test_persona_retrieval_is_exact_and_equals_hnsw_at_small_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _indexed(tmp_path / "m")
    asked = [f"What about the {w} and the {v}?" for w, v in zip(WORDS, WORDS[3:], strict=False)]
    exact_found = [index.query(q, 30) for q in asked]
    assert all(len(found) == 30 for found in exact_found)
    _hnsw(monkeypatch, persona_store)
    chroma_found = [index.query(q, 30) for q in asked]
    for mine, theirs in zip(exact_found, chroma_found, strict=True):
        assert [c.id for c in mine] == [c.id for c in theirs]
        assert [(c.text, c.path, c.ordinal, c.rank) for c in mine] == [
            (c.text, c.path, c.ordinal, c.rank) for c in theirs
        ]
        assert all(
            abs(a.similarity - b.similarity) < 1e-5 for a, b in zip(mine, theirs, strict=True)
        )


def test_a_reindex_is_seen_by_the_next_query(
    tmp_path: Path,
) -> None:
    index = _indexed(tmp_path / "m", seed=3)
    before = index.query("mark7 magic", 3)
    assert len(before) == 3 and {c.id for c in before} <= {i for i, _ in index.all_chunks()}
    _indexed(tmp_path / "m", seed=4)  # another persona text, same collection: re-indexed
    after = index.query("mark7 magic", 3)
    assert [c.id for c in after] != [c.id for c in before]
    assert {c.id for c in after} <= {i for i, _ in index.all_chunks()}


def test_novel_search_is_exact_masked_and_equals_hnsw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    novel = imported_novel(tmp_path / "data")
    index = ChunkIndex.open(novel, HashingTextEmbedding())
    index.build(novel, size=300, overlap=60)
    queries = [(f"the river {w}", chapter) for w in WORDS[:5] for chapter in (1, 3, 6)]
    mine = [index.search(q, max_chapter=c, k=6) for q, c in queries]
    assert all(
        found and max(x.chapter for x in found) <= c
        for found, (_, c) in zip(mine, queries, strict=True)
    )
    assert all(
        future_marks(" ".join(x.text for x in found), c) == []
        for found, (_, c) in zip(mine, queries, strict=True)
    )
    _hnsw(monkeypatch, novel_chunks)
    theirs = [index.search(q, max_chapter=c, k=6) for q, c in queries]
    assert mine == theirs


def test_ties_keep_the_earliest_rows_and_a_mask_can_leave_nothing() -> None:
    import numpy as np

    rows = exact.Snapshot(
        ids=["a", "b", "c", "d"],
        documents=["", "", "", ""],
        metadatas=[{"chapter": 1}, {"chapter": 2}, {"chapter": 2}, {}],
        vectors=np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=np.float32),
    )
    assert [r for r, _ in exact.nearest(rows, [0, 1], 2)] == [1, 2]
    assert [r for r, _ in exact.nearest(rows, [1, 0], 1)] == [0]
    assert [r for r, _ in exact.nearest(rows, [1, 0], 3)] == [0, 3, 1]
    assert rows.column("chapter").tolist() == [1, 2, 2, 0]
    assert exact.nearest(rows, [1, 0], 2, rows.column("chapter") > 5) == []
    assert exact.nearest(rows, [1, 0], 0) == []


def test_the_store_stamp_needs_a_file_and_moves_with_every_write(tmp_path: Path) -> None:
    from personae.memory.chroma import open_chroma

    assert exact.store_file(open_chroma(None)) is None  # in memory: Chroma is asked each time
    assert exact.store_file(object()) is None  # no settings at all
    assert exact.unchanged_since(None, None) == (None, False)
    assert exact.unchanged_since(str(tmp_path / "none.sqlite3"), None) == (None, False)
    database = exact.store_file(open_chroma(tmp_path / "m"))
    assert database == str(tmp_path / "m" / "chroma.sqlite3")
    stamp, same = exact.unchanged_since(database, None)
    assert stamp is not None and not same
    assert exact.unchanged_since(database, stamp) == (stamp, True)
    exact.note_write()
    assert exact.unchanged_since(database, stamp)[1] is False
