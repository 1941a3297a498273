"""The RAG / LifeChoice chunk index follows the project's store settings, read at the edge.

``PERSONAE_EMBEDDINGS`` (or the context's ``embedding``) picks the vectors, and ``CHROMA_HOST``
(or ``chroma_host``) puts the index on a Chroma server: here a real ``chroma run`` on loopback
and an OpenAI-compatible embeddings endpoint on loopback.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from arcane_world import future_marks, imported_novel, prepared_novel
from store_world import CHROMA, EmbeddingsServer, running_chroma

from personae.answer_store import AnswerStore
from personae.graphs.arcane.prepare import prepare_novel
from personae.graphs.arcane.roleplay import RoleplayContext, graph
from personae.loopback import LoopbackWebServer
from personae.memory.arcane.novel_chunks import ChunkIndex, collection_name
from personae.memory.chroma import SEARCH_EF
from personae.memory.embeddings import open_embedding
from personae.settings import Settings
from personae.testing import ScriptedChatModel, override_models

PROBE = "the_river_ada_final_intra_01_iw_a1"


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responders={"text": lambda _: "Ada keeps her counsel."})
    with override_models(scripted):
        yield scripted


@pytest.fixture
def embeddings() -> Iterator[tuple[str, EmbeddingsServer]]:
    route = EmbeddingsServer()
    with LoopbackWebServer(route) as server:
        yield f"{server.url}/v1", route


async def _prepare(novel: Any, **store: Any) -> int:
    report = await prepare_novel(
        novel, model=ScriptedChatModel(), model_name="scripted", cache=AnswerStore(None), **store
    )
    assert report.summarized == 0  # the fixture's summaries are there: only the index is built
    return report.chunks_added


async def _system(context: RoleplayContext, mode: str) -> str:
    payload: Any = {"novel": "the_river", "probe_id": PROBE, "phase_idx": 1, "mode": mode}
    result = await graph.ainvoke(payload, context=context)
    assert result["query_chapter"] == 4 and future_marks(result["system"], 4) == [], mode
    return str(result["system"])


async def test_openai_embedding_builds_and_queries_its_own_collection(
    tmp_path: Path,
    model: ScriptedChatModel,
    embeddings: tuple[str, EmbeddingsServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base_url, route = embeddings
    novel = prepared_novel(tmp_path)  # its hashing index is there, the openai one is not
    monkeypatch.setenv("PERSONAE_EMBEDDINGS", "openai:embed-small")
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    context = RoleplayContext(data_dir=str(tmp_path), model="openai:scripted", cache_dir="none")
    assert context.embedding == "openai:embed-small"  # read once, at construction
    embedding = context.text_embedding()
    assert ChunkIndex.find(novel, embedding) is None
    with pytest.raises(Exception, match="RAG index of the_river is missing"):
        await _system(context, "rag")
    added = await _prepare(novel, embedding=embedding)
    assert added == len(ChunkIndex.find(novel, embedding) or []) > 0
    sent: list[Any] = [b["input"] for b in route.bodies]
    assert sum(len(batch) for batch in sent) == added
    route.bodies.clear()
    for mode in ("rag", "lifechoice"):
        system = await _system(context, mode)
        assert "MARK" in system.split("<context>")[1]
    queries = [b["input"] for b in route.bodies]
    assert len(queries) == 2 and "Bram asks Ada" in queries[0][0]  # type: ignore[index]
    assert "Summary of chapter 4" in queries[1][0]  # type: ignore[index]
    # Hashing vectors stay in their own collection: nothing was mixed in.
    hashing = ChunkIndex.find(novel, open_embedding("hashing"))
    assert hashing is not None and len(hashing) == added
    assert collection_name(novel, embedding) != collection_name(novel, open_embedding("hashing"))


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    if not CHROMA.exists():
        pytest.skip("the chroma executable is not installed")
    with running_chroma(tmp_path_factory.mktemp("chroma-arcane")) as settings:
        yield settings


@pytest.mark.slow
async def test_index_on_a_chroma_server_serves_rag_and_lifechoice(
    tmp_path: Path,
    model: ScriptedChatModel,
    chroma_server: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    novel = prepared_novel(tmp_path)
    shutil.rmtree(novel.folder / "chroma")  # only the server may serve the index now
    monkeypatch.setenv("CHROMA_HOST", str(chroma_server.chroma_host))
    monkeypatch.setenv("CHROMA_PORT", str(chroma_server.chroma_port))
    context = RoleplayContext(data_dir=str(tmp_path), model="openai:scripted", cache_dir="none")
    chroma = context.chroma_settings()  # read once, at construction
    assert chroma is not None
    assert (chroma.chroma_host, chroma.chroma_port) == (
        chroma_server.chroma_host,
        chroma_server.chroma_port,
    )
    with pytest.raises(Exception, match="RAG index of the_river is missing"):
        await _system(context, "rag")
    added = await _prepare(novel, chroma=context.chroma_settings())
    assert added > 0 and not (novel.folder / "chroma").exists()
    found = ChunkIndex.find(novel, None, chroma_server)
    assert found is not None and len(found) == added
    assert await _prepare(novel, chroma=chroma_server) == 0  # a rerun adds nothing
    for mode in ("rag", "lifechoice"):
        system = await _system(context, mode)
        assert "MARK" in system.split("<context>")[1]
    assert not (novel.folder / "chroma").exists()


def test_the_chunk_index_searches_with_a_wide_beam_and_stays_exact(tmp_path: Path) -> None:
    """ef_search SEARCH_EF: the chapter-masked top-k is the exact one (brute force here)."""
    novel = imported_novel(tmp_path)
    index = ChunkIndex.open(novel)
    index.build(novel, size=300, overlap=60)
    assert index.collection.configuration_json["hnsw"]["ef_search"] == SEARCH_EF
    stored = index.collection.get(include=["embeddings", "metadatas", "documents"])
    vectors = np.asarray(stored["embeddings"])
    chapters = [int(str(m["chapter"])) for m in stored["metadatas"] or []]
    embedding = open_embedding("hashing")
    for query, max_chapter in [("Ada and Bram at the river", 3), ("the flood", 6)]:
        distances = 1.0 - vectors @ embedding.embed_one(query)
        allowed = [i for i in np.argsort(distances, kind="stable") if chapters[i] <= max_chapter]
        exact = [(stored["documents"] or [])[i] for i in allowed[:6]]
        assert [c.text for c in index.search(query, max_chapter=max_chapter)] == exact
