"""The local MiniLM embedding against a reference implementation of the same model, same run.

Run: uv run python benchmarks/bench_minilm.py [--repeat 3]

``PERSONAE_EMBEDDINGS=local`` runs all-MiniLM-L6-v2 on numpy (personae.memory.minilm). The
reference is the same network as sentence-transformers computes it (BertModel: padded batches
with an attention mask, exact-erf GELU; mean pooling, normalisation) run by onnxruntime, the
inference engine in this environment (a chromadb dependency; torch is not installed): the graph
is built here from the checkpoint's weights (benchmarks/onnx_minilm.py). Both get the same
tokens and the same batches of 32, sorted by length.

Prints, for batches (what ``amadeus index`` and ``arcane prepare`` embed) and for single
queries: CPU time of the numpy model as Personae runs it, against the reference with one and
with two intra-op threads (goal: <= 1.2x the better reference's CPU time), wall time beside,
and the largest difference between the two models' normalised vectors (goal: unchanged,
<= 1e-6). CPU time is the figure to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from measure import load
from onnx_minilm import OnnxMiniLM

from personae.memory.minilm import MiniLMEmbedding

README = Path(__file__).resolve().parents[1] / "README.md"


def texts() -> tuple[list[str], list[str]]:
    """Sentences of the README (short texts) and 150-word passages of it (persona chunks)."""
    words = re.sub(r"[`|*#\[\]()]", " ", README.read_text(encoding="utf-8")).split()
    rng = random.Random(5)
    sentences = [" ".join(words[i : i + rng.randint(8, 40)]) for i in range(0, 40 * 256, 40)]
    passages = [" ".join(words[i : i + 150]) for i in range(0, 150 * 64, 150)]
    return sentences[:256], passages[:64]


def timed(run: Callable[[], np.ndarray], repeat: int) -> tuple[float, float, np.ndarray]:
    """Best CPU and wall seconds of ``repeat`` runs, and the vectors."""
    cpu, wall, vectors = [], [], np.zeros(0)
    for _ in range(repeat):
        start, clock = time.process_time(), time.perf_counter()
        vectors = run()
        cpu.append(time.process_time() - start)
        wall.append(time.perf_counter() - clock)
    return min(cpu), min(wall), vectors


def normalised(vectors: np.ndarray) -> np.ndarray:
    result: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("$ " + " ".join(["python", *sys.argv]))
    model = MiniLMEmbedding.load()
    references = {threads: OnnxMiniLM(model, threads) for threads in (1, 2)}
    sentences, passages = texts()
    for label, batch in (
        ("256 sentences of 8-40 words", sentences),
        ("64 passages of 150 words", passages),
    ):
        ours_cpu, ours_wall, ours = timed(lambda b=batch: normalised(model.compute(b)), args.repeat)
        figures = []
        for threads, reference in references.items():
            cpu, wall, theirs = timed(lambda b=batch, r=reference: r.embed(b), args.repeat)
            figures.append((cpu, wall, threads, theirs))
        best = min(figures)
        difference = float(np.abs(ours - best[3]).max())
        others = ", ".join(
            f"{threads} thread(s) {cpu:.2f} s CPU / {wall:.2f} s wall"
            for cpu, wall, threads, _ in figures
        )
        print(
            f"minilm: {label}: numpy (as Personae runs it) {ours_cpu:.2f} s CPU / "
            f"{ours_wall:.2f} s wall; reference onnxruntime {others}: "
            f"{ours_cpu / best[0]:.2f}x the better reference's CPU (goal <= 1.2x); largest "
            f"vector difference {difference:.1e} (goal <= 1e-6); {load()}"
        )
    queries = sentences[:40]
    ours_ms, theirs_ms = [], []
    for text in queries:
        start = time.process_time()
        model.compute([text])
        ours_ms.append((time.process_time() - start) * 1000)
        start = time.process_time()
        references[1].embed([text])
        theirs_ms.append((time.process_time() - start) * 1000)
    print(
        f"minilm: one query at a time ({len(queries)} sentences): numpy p50 "
        f"{statistics.median(ours_ms):.1f} ms CPU, reference (1 thread) p50 "
        f"{statistics.median(theirs_ms):.1f} ms CPU; {load()}"
    )


if __name__ == "__main__":
    main()
