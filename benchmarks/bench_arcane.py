"""What ARCANE costs: arc-building calls and tokens, probes kept per arc, eval wall time.

Run: uv run python benchmarks/bench_arcane.py [--latency 0.25] [--limit 9] [--rag-only]

1. Arc building for one character of Pride and Prejudice (../shared; the synthetic test novel
   when it is absent) with a scripted model: LLM calls and tokens per chapter and character
   (tokens counted approximately, as everything offline), against the estimate
   ``personae arcane build-arcs`` prints before a build.
2. Probe generation over the arcs kept: probes per arc after validation, with every validator
   passing and with Q-Voice failing a phase twice (one regeneration, then unavailable) and
   Q-World failing In-World probes (dropped).
3. ``personae arcane eval`` over that book's probes (vanilla + arc modes) with ``--latency``
   seconds injected into every model call: wall time at concurrency 1 vs 8.
4. The chapter-masked RAG search (``arcane prepare``'s chunk index, hashing embeddings) at the
   spec's chunking and at a finer one (more chunks than ``SEARCH_EF``): ``search()`` (exact in
   numpy up to EXACT_MAX chunks) and Chroma's HNSW with its filter, each with its top-6 recall
   against an exact search over the same stored vectors (goal >= 0.99) and its latency, beside
   the numpy bound's (``--rag-only`` runs this part alone).
Prints figures; asserts only that the runs produced what they should.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from arcane_world import ProbeScript, arc_responders, imported_novel  # noqa: E402
from measure import load  # noqa: E402

from personae.agents.arcane.costs import estimate_arc_build  # noqa: E402
from personae.evals.arcane.eval_graph import ArcaneEvalContext  # noqa: E402
from personae.evals.arcane.eval_graph import build_graph as eval_graph  # noqa: E402
from personae.graphs.arcane.arc_build import ArcBuildContext  # noqa: E402
from personae.graphs.arcane.arc_build import build_graph as arc_graph  # noqa: E402
from personae.graphs.arcane.probe_build import build_graph as probe_graph  # noqa: E402
from personae.graphs.arcane.probe_cell import ProbeBuildContext  # noqa: E402
from personae.memory.arcane.novel_store import Novel, open_novel, save_novel  # noqa: E402
from personae.memory.arcane.records import load_arcs  # noqa: E402
from personae.testing import ScriptedChatModel, override_models, prompt_text  # noqa: E402
from personae.tools.arcane.novel_text import segment_novel  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared/data/coser/src/books_example.jsonl"


def load_book(data: Path) -> tuple[Novel, str]:
    """Pride and Prejudice from ../shared, else the synthetic novel."""
    if SHARED.is_file():
        for line in SHARED.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["title"] == "Pride and Prejudice":
                seg = segment_novel(record["content"])
                save_novel(
                    data,
                    title=record["title"],
                    segmentation=seg,
                    source=str(SHARED),
                    raw_sha256="-",
                )
                return open_novel(data, "Pride and Prejudice"), "Elizabeth Bennet"
    return imported_novel(data), "Ada"


async def build_arcs(novel: Novel, character: str, data: Path) -> dict[str, Any]:
    model = ScriptedChatModel(responders=arc_responders())
    context = ArcBuildContext(data_dir=str(data), model="openai:bench", cache_dir=str(data / "c1"))
    with override_models(model):
        payload: Any = {"novel": novel.slug, "character": character, "split": "train"}
        result: dict[str, Any] = await arc_graph().ainvoke(payload, context=context)
    return result


async def build_probes(
    novel: Novel, character: str, data: Path, script: ProbeScript, cache: str
) -> list[int]:
    kept = []
    model = ScriptedChatModel(responders=script.responders())
    context = ProbeBuildContext(
        data_dir=str(data), model="openai:bench", cache_dir=str(data / cache)
    )
    with override_models(model):
        for arc in load_arcs(novel.folder):
            payload: Any = {
                "novel": novel.slug,
                "character": character,
                "axis_id": arc.axis_id,
                "types": ["in_scenario", "in_world", "out_of_world"],
            }
            result = await probe_graph().ainvoke(payload, context=context)
            kept.append(len(result["probes"]))
    return kept


def judge_model(latency: float) -> ScriptedChatModel:
    def text(messages: Any) -> str:
        prompt = prompt_text(messages)
        return (
            "Chapter: unknown"
            if "Chapter: N" in prompt
            else "Presence: present"
            if "Presence:" in prompt
            else "She waits."
        )

    return ScriptedChatModel(
        latency=latency,
        responders={
            "text": text,
            "PhaseJudgement": lambda m: {"scores": {"apf": 70, "rpf": 60, "rae": 50}},
            "TrajectoryJudgement": lambda m: {
                "scores": {"ptf_alignment": 40, "ptf_direction": 50, "ptf_shape": 60}
            },
        },
    )


async def timed_eval(
    novel: Novel, data: Path, concurrency: int, latency: float, limit: int
) -> tuple[float, int]:
    out = data / f"eval-{concurrency}"
    # No answer cache: every unit pays its calls (the probes share a scenario, so would hit it).
    context = ArcaneEvalContext(
        data_dir=str(data), model="openai:bench", cache_dir="none", concurrency=concurrency
    )
    payload: Any = {
        "novels": [novel.slug],
        "modes": ["vanilla", "arc"],
        "limit": limit,
        "out_dir": str(out),
    }
    with override_models(judge_model(latency)):
        start = time.perf_counter()
        result = await eval_graph().ainvoke(payload, context=context)
    return time.perf_counter() - start, len(result["done"])


def rag_recall(novel: Novel, data: Path, size: int, overlap: int) -> None:
    """Chapter-masked top-6 search against an exact search over the same stored vectors."""
    import random
    import statistics

    import numpy as np

    from personae.memory.arcane import novel_chunks
    from personae.memory.arcane.novel_chunks import MAX_QUERY_CHARS, ChunkIndex
    from personae.memory.blas import one_blas_thread
    from personae.memory.chroma import SEARCH_EF
    from personae.memory.embeddings import HashingTextEmbedding
    from personae.memory.exact import EXACT_MAX

    embedding = HashingTextEmbedding()
    index = ChunkIndex.open(novel, embedding)
    started = time.perf_counter()
    index.build(novel, size=size, overlap=overlap)
    built = time.perf_counter() - started
    stored = index.collection.get(include=["embeddings", "metadatas", "documents"])
    vectors = np.asarray(stored["embeddings"], dtype=np.float32)
    chapters = np.array([int(str(m["chapter"])) for m in stored["metadatas"] or []])
    documents = list(stored["documents"] or [])
    rng = random.Random(4)
    recalls: dict[str, list[float]] = {"exact": [], "hnsw": []}
    timings: dict[str, list[float]] = {"exact": [], "hnsw": [], "bound": []}
    for _ in range(60):
        chapter = rng.randrange(2, novel.count + 1)
        words = novel.chapter(rng.randrange(1, chapter + 1)).text.split()
        start = rng.randrange(max(1, len(words) - 40))
        query = " ".join(words[start : start + 40])
        found = {}
        for label, limit in (("exact", novel_chunks.EXACT_MAX), ("hnsw", -1)):
            saved, novel_chunks.EXACT_MAX = novel_chunks.EXACT_MAX, limit
            clock = time.perf_counter()
            found[label] = index.search(query, max_chapter=chapter)
            timings[label].append((time.perf_counter() - clock) * 1000)
            novel_chunks.EXACT_MAX = saved
        clock = time.perf_counter()
        with one_blas_thread():
            distances = 1.0 - vectors @ embedding.embed_one(query[:MAX_QUERY_CHARS])
        distances[chapters > chapter] = np.inf
        sixth = np.partition(distances, 5)[5]
        timings["bound"].append((time.perf_counter() - clock) * 1000)
        # A chunk tied with the 6th nearest counts as found (repeated text, identical vectors).
        by_text = {documents[i]: distances[i] for i in range(len(documents))}
        for label, chunks in found.items():
            recalls[label].append(sum(by_text[c.text] <= sixth + 1e-6 for c in chunks) / 6)
    p50 = {label: statistics.median(values) for label, values in timings.items()}
    print(
        f"4. RAG retrieval, {len(documents):,} chunks of {size} characters (built in "
        f"{built:.1f} s, hashing): chapter-masked top-6 p50 {p50['exact']:.2f} ms (exact up to "
        f"{EXACT_MAX:,} chunks), recall against exact search {statistics.mean(recalls['exact']):.3f}"
        f"; Chroma's HNSW (ef_search {SEARCH_EF}) with its filter p50 {p50['hnsw']:.2f} ms, recall "
        f"{statistics.mean(recalls['hnsw']):.3f} (min {min(recalls['hnsw']):.3f}); the numpy "
        f"bound p50 {p50['bound']:.2f} ms; {load()}"
    )
    index.collection.delete(ids=list(stored["ids"]))


async def main(latency: float, limit: int, rag_only: bool = False) -> None:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        novel, character = load_book(data)
        if rag_only:
            for size, overlap in ((1500, 300), (300, 60)):
                rag_recall(novel, data, size, overlap)
            return
        started = time.perf_counter()
        built = await build_arcs(novel, character, data)
        seconds = time.perf_counter() - started
        usage, c = built["usage"], novel.count
        estimate = estimate_arc_build(novel, [character])
        print(
            f"1. Arc build: {novel.title}, {character}, {c} chapters, {len(built['arcs'])} arcs kept "
            f"({seconds:.1f} s with a scripted model)"
        )
        print(
            f"   actual: {usage['llm_calls']} LLM calls, {usage['input_tokens'] + usage['output_tokens']:,} tokens "
            f"= {usage['llm_calls'] / c:.2f} calls and {(usage['input_tokens'] + usage['output_tokens']) / c:,.0f} "
            "tokens per chapter and character"
        )
        calls_est, tokens_est = estimate.per_chapter_and_character
        print(
            f"   estimate printed before a build: {estimate.calls} calls, ~{estimate.tokens:,} tokens "
            f"= {calls_est:.2f} calls, ~{tokens_est:,.0f} tokens per chapter and character"
        )
        clean = await build_probes(novel, character, data, ProbeScript(), "c2")
        harsh = ProbeScript()
        harsh.voice_fails = {1: 10**6}
        harsh.world = "fail"
        tough = await build_probes(novel, character, data, harsh, "c3")
        n = len(load_arcs(novel.folder)[0].trajectory)
        print(
            f"2. Probes per arc after validation (3N = {3 * n} cells per arc): all validators pass: "
            f"{clean}; Q-Voice failing phase 1 and Q-World failing: {tough}"
        )
        await build_probes(novel, character, data, ProbeScript(), "c2")  # restore the clean set
        for size, overlap in ((1500, 300), (300, 60)):
            rag_recall(novel, data, size, overlap)
        one, units = await timed_eval(novel, data, 1, latency, limit)
        eight, _ = await timed_eval(novel, data, 8, latency, limit)
        print(
            f"3. Eval of {units} (probe, mode) units with {latency * 1000:.0f} ms per model call: "
            f"concurrency 1 {one:.2f} s, concurrency 8 {eight:.2f} s ({one / eight:.1f}x)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.25, help="seconds per model call")
    parser.add_argument("--limit", type=int, default=9, help="probes per book in the eval")
    parser.add_argument("--rag-only", action="store_true", help="only the RAG retrieval line")
    args = parser.parse_args()
    asyncio.run(main(args.latency, args.limit, args.rag_only))
