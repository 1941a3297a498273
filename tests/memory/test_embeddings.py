from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from personae.memory.chroma import open_chroma, safe_collection_name
from personae.memory.embeddings import HashingEmbedding, embed_text

# Chroma types its embedding functions narrower than its protocol allows (as memory/ does).
EMBEDDING: Any = HashingEmbedding()


def test_embedding_is_deterministic_and_topical() -> None:
    a = embed_text("Kyon complains about Haruhi's club")
    assert np.allclose(a, embed_text("Kyon complains about Haruhi's club"))
    near = float(a @ embed_text("Haruhi drags Kyon to the club room"))
    far = float(a @ embed_text("Edward transmutes a spear from the ground"))
    assert near > far


def test_collection_names_are_safe_and_distinct() -> None:
    names = {
        safe_collection_name(n) for n in ["Poppin'Party", "Poppin_Party", "Pastel*Palettes", "a"]
    }
    assert len(names) == 4
    for name in names:
        assert all(c.isalnum() or c in "._-" for c in name) and 3 <= len(name) <= 512


def test_persistent_collection_reopens_with_its_embedding(tmp_path: Path) -> None:
    client = open_chroma(tmp_path / "db")
    col = client.get_or_create_collection(
        safe_collection_name("Poppin'Party"), embedding_function=EMBEDDING
    )
    col.add(ids=["1", "2"], documents=["Kasumi sings on stage", "Arisa hides in the storage room"])
    del client, col
    reopened = open_chroma(tmp_path / "db").get_collection(safe_collection_name("Poppin'Party"))
    hits = reopened.query(query_texts=["who sings on stage"], n_results=1)
    assert hits["ids"] == [["1"]]
