"""The local MiniLM embedding against sentence-transformers itself (torch), same texts, same run.

Run: uv run python benchmarks/bench_minilm_vs_st.py [--st-python PATH] [--repeat 3]

``PERSONAE_EMBEDDINGS=local`` runs all-MiniLM-L6-v2 on numpy (personae.memory.minilm) so that
Personae needs no torch. This measures what that costs against the library users would
otherwise run: ``SentenceTransformer`` on the same checkpoint (the model package's folder),
batches of 32, on one torch thread and on two. sentence-transformers needs torch, which this
project does not install: give ``--st-python`` a Python that has both (a throwaway venv outside
the project: ``python3 -m venv /tmp/st-venv && /tmp/st-venv/bin/pip install torch==2.13.0
sentence-transformers``); without one the script says so and exits 0.

Prints, for batches (what ``amadeus index`` and ``arcane prepare`` embed): CPU time of the numpy
model as Personae runs it against sentence-transformers' better CPU time (goal: <= 1.2x), wall
time beside, and the largest difference between the two normalised vectors. CPU time (the
child's own ``process_time`` around ``encode``) is the figure to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_minilm import normalised, texts, timed
from measure import load

from personae.memory.minilm import MiniLMEmbedding, _package_model_dir

CHILD = r"""
import json, sys, time
import numpy as np, torch
from sentence_transformers import SentenceTransformer
request = json.load(sys.stdin)
torch.set_num_threads(request["threads"])
model = SentenceTransformer(request["model"], device="cpu")
out = {}
for label, batch in request["batches"].items():
    cpu, wall = [], []
    for _ in range(request["repeat"]):
        start, clock = time.process_time(), time.perf_counter()
        vectors = model.encode(batch, batch_size=32, normalize_embeddings=True)
        cpu.append(time.process_time() - start)
        wall.append(time.perf_counter() - clock)
    np.save(request["out"] + "." + label + ".npy", vectors)
    out[label] = [min(cpu), min(wall)]
out["versions"] = [torch.__version__, __import__("sentence_transformers").__version__]
print(json.dumps(out))
"""


def run_reference(
    python: str, model: Path, batches: dict[str, list[str]], threads: int, repeat: int, out: str
) -> dict[str, object]:
    """sentence-transformers in a child process of ``python``: CPU/wall per batch, versions."""
    request = {
        "model": str(model),
        "batches": batches,
        "threads": threads,
        "repeat": repeat,
        "out": out,
    }
    done = subprocess.run(
        [python, "-c", CHILD],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"sentence-transformers run failed:\n{done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def has_sentence_transformers(python: str) -> bool:
    done = subprocess.run(
        [python, "-c", "import sentence_transformers, torch"], capture_output=True, check=False
    )
    return done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--st-python", default=sys.executable, help="a Python with torch + ST")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("$ " + " ".join(["python", *sys.argv]))
    if not has_sentence_transformers(args.st_python):
        print(
            f"minilm vs sentence-transformers: skipped: {args.st_python} cannot import "
            "sentence_transformers and torch (make a venv outside the project: python3 -m venv "
            "/tmp/st-venv && /tmp/st-venv/bin/pip install torch==2.13.0 sentence-transformers; "
            "then pass --st-python /tmp/st-venv/bin/python)"
        )
        return
    model = MiniLMEmbedding.load()
    sentences, passages = texts()
    batches = {"sentences": sentences, "passages": passages}
    labels = {"sentences": "256 sentences of 8-40 words", "passages": "64 passages of 150 words"}
    with tempfile.TemporaryDirectory() as scratch:
        references = {
            threads: run_reference(
                args.st_python,
                _package_model_dir(),
                batches,
                threads,
                args.repeat,
                f"{scratch}/st{threads}",
            )
            for threads in (1, 2)
        }
        for key, batch in batches.items():
            ours_cpu, ours_wall, ours = timed(
                lambda b=batch: normalised(model.compute(b)), args.repeat
            )
            figures = sorted(
                (float(r[key][0]), float(r[key][1]), t)  # type: ignore[index]
                for t, r in references.items()
            )
            best_cpu, _, best_threads = figures[0]
            theirs = np.load(f"{scratch}/st{best_threads}.{key}.npy")
            difference = float(np.abs(ours - theirs).max())
            others = ", ".join(
                f"{t} thread(s) {c:.2f} s CPU / {w:.2f} s wall" for c, w, t in figures
            )
            print(
                f"minilm vs sentence-transformers {references[1]['versions']}: {labels[key]}: "
                f"numpy (as Personae runs it) {ours_cpu:.2f} s CPU / {ours_wall:.2f} s wall; "
                f"sentence-transformers {others}: {ours_cpu / best_cpu:.2f}x its better CPU "
                f"(goal <= 1.2x); largest vector difference {difference:.1e}; {load()}"
            )


if __name__ == "__main__":
    main()
