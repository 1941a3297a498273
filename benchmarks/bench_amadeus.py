"""AMADEUS figures: persona indexing, Guided Selection waves, retrieval at 10,000 chunks.

1. Index a long persona (default ~65,000 characters, the CharacterRAG average: 976K / 15)
   with each ``--embeddings`` value (default hashing and local all-MiniLM-L6-v2; each gets its
   own collection): split time, chunks, first index time, re-index of the unchanged persona,
   re-index after editing one paragraph (only its section is re-embedded).
2. Guided Selection per answer with a scripted judge that sleeps ``--latency`` seconds per call:
   checks and wall time, sequential (wave 1, the paper) vs waves of 3, 10 and 30, over the same
   questions; the slot is identical for every wave size (asserted).
3. Retrieval latency of one query (top 30, query embedding included) against indexes of
   ``--chunks`` chunks (default 100, a persona's size, and 10,000; hashing embeddings: 10,000
   MiniLM embeddings take minutes here): ``query()`` (exact in numpy up to EXACT_MAX chunks)
   against the bare numpy bound over the same stored vectors (goal <= 1.2x, identical top 30)
   and against Chroma's HNSW with its recall, and the time each ``--embeddings`` value takes
   to embed one question (what it adds per query).

    uv run python benchmarks/bench_amadeus.py [--latency 0.05] [--chunks 100 10000]
        [--embeddings hashing local] [--retrieval-only]

Offline: hashing or local embeddings, a scripted model; the figures measure the framework.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.messages import BaseMessage
from measure import load

from personae.graphs.amadeus.graph import AmadeusContext, build_graph
from personae.memory.amadeus import persona_store
from personae.memory.amadeus.persona_chunks import split_persona
from personae.memory.amadeus.persona_doc import PersonaDoc, parse_markdown
from personae.memory.amadeus.persona_store import PersonaIndex, ScoredChunk, open_client
from personae.memory.blas import one_blas_thread
from personae.memory.chroma import SEARCH_EF
from personae.memory.embeddings import HashingTextEmbedding, open_embedding
from personae.memory.exact import EXACT_MAX
from personae.testing import ScriptedChatModel, override_models, prompt_text

WORDS = (
    "magic explosion crimson demon journey friend village sword battle promise memory dragon "
    "school teacher rival family secret dream festival winter library letter storm harbor "
    "guild quest ancient spell loyal stubborn curious proud gentle brave lonely cheerful"
).split()


def synthetic_persona(name: str, characters: int, seed: int = 7) -> str:
    """Markdown with sections, subsections and paragraphs of 150-900 characters."""
    rng = random.Random(seed)
    lines = [f"# {name}", ""]
    total, section = 0, 0
    while total < characters:
        section += 1
        lines += [f"## Part {section}", ""]
        for sub in range(1, rng.randint(2, 5)):
            lines += [f"### Episode {section}.{sub}", ""]
            for _ in range(rng.randint(1, 4)):
                size = rng.randint(150, 900)
                words = []
                while sum(len(w) + 1 for w in words) < size:
                    words.append(rng.choice(WORDS))
                paragraph = " ".join(words).capitalize() + "."
                lines += [paragraph, ""]
                total += len(paragraph)
    return "\n".join(lines)


def bench_index(memory: Path, characters: int, spec: str) -> None:
    text = synthetic_persona("Megumin", characters)
    start = time.perf_counter()
    doc = parse_markdown(text, "Megumin")
    chunks = split_persona(doc)
    split = time.perf_counter() - start
    embedding = open_embedding(spec)
    embedding.embed(["warm up"])  # model loading is not indexing
    index = PersonaIndex(open_client(str(memory)), "Megumin", "acts", embedding)
    start = time.perf_counter()
    stats = index.sync(doc, chunks)
    first = time.perf_counter() - start
    start = time.perf_counter()
    again = index.sync(doc, split_persona(doc))
    unchanged = time.perf_counter() - start
    edited_text = text.replace(
        doc.sections[3].paragraphs[0], doc.sections[3].paragraphs[0] + " Edited."
    )
    edited = parse_markdown(edited_text, "Megumin")
    start = time.perf_counter()
    delta = index.sync(edited, split_persona(edited))
    one_edit = time.perf_counter() - start
    print(
        f"index ({embedding.spec}): persona {len(text):,} chars, {len(doc.sections)} sections, l_max {stats.l_max}, "
        f"l_o {stats.l_o}: {stats.chunks} chunks; split {split * 1000:.0f} ms, first index "
        f"{first:.2f} s; unchanged re-index {unchanged * 1000:.0f} ms ({again.added} added); "
        f"one paragraph edited {one_edit * 1000:.0f} ms ({delta.added} added, {delta.deleted} deleted)"
    )


def _judge(relevant: set[str]) -> ScriptedChatModel:
    def verdict(messages: list[BaseMessage]) -> dict[str, object]:
        text = prompt_text(messages)
        return {"reason": "r", "relevant": any(marker in text for marker in relevant)}

    return ScriptedChatModel(
        responders={
            "RelevanceVerdict": verdict,
            "CharacterAttributes": lambda m: {"belief_and_value": "b", "psychological_traits": "p"},
            "text": lambda m: "Explosion!",
        }
    )


async def bench_waves(memory: Path, latency: float, relevant: set[str], label: str) -> None:
    questions = [
        f"Do you {w} when you feel {v}?" for w, v in zip(WORDS[:8], WORDS[-8:], strict=True)
    ]
    slots: dict[int, list[list[str]]] = {}
    for wave in (1, 3, 10, 30):
        chat = _judge(relevant)
        chat.latency = latency
        override_models(chat)
        context = AmadeusContext(
            model="openai:bench", memory_dir=str(memory), gs_wave=wave, embedding="hashing"
        )
        graph = build_graph()
        start = time.perf_counter()
        slots[wave] = []
        failed = 0
        for question in questions:
            out = await graph.ainvoke({"character": "Megumin", "query": question}, context=context)
            slots[wave].append([c["id"] for c in out["selected"]])
            failed += bool(out["gs_failed"])
        elapsed = (time.perf_counter() - start) / len(questions)
        checks = len(chat.calls_for("RelevanceVerdict")) / len(questions)
        print(
            f"guided selection ({label}) wave {wave:>2}: {checks:.1f} checks/answer, {elapsed:.2f} s/answer "
            f"({latency * 1000:.0f} ms per call; fallback {failed}/{len(questions)})"
        )
    assert all(slots[wave] == slots[1] for wave in slots), "waves changed the slot"


def bench_retrieval(memory: Path, chunks: int) -> None:
    """``query()`` (exact up to EXACT_MAX chunks) against HNSW and a bare numpy bound."""
    index = PersonaIndex(open_client(str(memory)), "Big", "acts", HashingTextEmbedding())
    text = synthetic_persona("Big", chunks * 700, seed=11)
    doc = parse_markdown(text, "Big")
    pieces = split_persona(doc)[:chunks]
    start = time.perf_counter()
    index.sync(PersonaDoc(doc.character, doc.sections, source="synthetic"), pieces)
    built = time.perf_counter() - start
    stored = index.collection.get(include=["embeddings"])
    ids, vectors = stored["ids"], np.asarray(stored["embeddings"], dtype=np.float32)
    questions = [f"What do you think about {word}?" for word in WORDS * 3]
    index.query(questions[0], 30)  # the snapshot read once, as a process's first query does

    def bound(question: str) -> list[str]:
        """The same top 30 with nothing but the embedding and one product: the floor (one
        BLAS thread, as every search here runs: OpenBLAS's spinning threads cost more)."""
        with one_blas_thread():
            distances = 1.0 - vectors @ index.embedding.embed_one(question)
        top = np.argpartition(distances, 29)[:30]
        return [ids[i] for i in top[np.lexsort((top, distances[top]))]]

    timings: dict[str, list[float]] = {"exact": [], "hnsw": [], "bound": []}
    found: dict[str, list[list[str]]] = {"exact": [], "hnsw": [], "bound": []}
    runs = {
        "exact": lambda q: [c.id for c in index.query(q, 30)],
        "hnsw": lambda q: [c.id for c in hnsw_query(index, q)],
        "bound": bound,
    }
    for number, question in enumerate(questions):
        order = list(runs) if number % 2 else list(reversed(runs))  # alternate who goes first
        for label in order:
            start = time.perf_counter()
            found[label].append(runs[label](question))
            timings[label].append((time.perf_counter() - start) * 1000)
    p50 = {label: statistics.median(values) for label, values in timings.items()}
    p95 = {label: sorted(values)[int(len(values) * 0.95)] for label, values in timings.items()}
    recalls = [
        len(set(h) & set(b)) / 30 for h, b in zip(found["hnsw"], found["bound"], strict=True)
    ]
    same = sum(e == b for e, b in zip(found["exact"], found["bound"], strict=True))
    print(
        f"retrieval at {index.count():,} chunks (built in {built:.1f} s), top 30, query "
        f"embedding included, {len(questions)} questions: query() p50 {p50['exact']:.2f} ms, p95 "
        f"{p95['exact']:.2f} ms (exact up to {EXACT_MAX:,} chunks) = {p50['exact'] / p50['bound']:.2f}x"
        f" / {p95['exact'] / p95['bound']:.2f}x the numpy bound (p50 {p50['bound']:.2f} ms, p95 "
        f"{p95['bound']:.2f} ms; goal <= 1.2x), identical top 30 {same}/{len(questions)}; Chroma's "
        f"HNSW (ef_search {SEARCH_EF}) p50 {p50['hnsw']:.2f} ms, p95 {p95['hnsw']:.2f} ms, recall "
        f"against exact {statistics.mean(recalls):.3f} (min {min(recalls):.3f}); {load()}"
    )


def hnsw_query(index: PersonaIndex, question: str) -> list[ScoredChunk]:
    """``query()`` as it runs above EXACT_MAX chunks: Chroma's HNSW."""
    saved = persona_store.EXACT_MAX
    persona_store.EXACT_MAX = -1
    try:
        return index.query(question, 30)
    finally:
        persona_store.EXACT_MAX = saved


def bench_query_embedding(spec: str) -> None:
    """What another embedding adds to a query: embedding the question (distinct, uncached)."""
    embedding = open_embedding(spec)
    embedding.embed(["warm up"])
    timings = []
    for i, word in enumerate(WORDS * 2):
        start = time.perf_counter()
        embedding.embed_one(f"What do you think about {word}, question {i}?")
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    print(
        f"query embedding ({embedding.spec}): p50 {statistics.median(timings):.1f} ms, "
        f"p95 {timings[int(len(timings) * 0.95)]:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--persona-chars", type=int, default=65_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--chunks", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument(
        "--retrieval-only", action="store_true", help="only the retrieval timings (point 3)"
    )
    parser.add_argument("--embeddings", nargs="+", default=["hashing", "local"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        memory = Path(folder)
        if args.retrieval_only:
            for chunks in args.chunks:
                bench_retrieval(memory / f"big{chunks}", chunks)
            return
        for spec in dict.fromkeys(["hashing", *args.embeddings]):  # the waves use hashing
            bench_index(memory / "index", args.persona_chars, spec)
        # Relevant chunks rare (Part 3 and Part 17), then none at all (every answer falls back).
        rare = {"Part 3 >", "Part 17 >"}
        asyncio.run(bench_waves(memory / "index", args.latency, rare, "2 relevant sections"))
        asyncio.run(bench_waves(memory / "index", args.latency, set(), "no relevant chunk"))
        for chunks in args.chunks:
            bench_retrieval(memory / f"big{chunks}", chunks)
        for spec in args.embeddings:
            bench_query_embedding(spec)


if __name__ == "__main__":
    main()
