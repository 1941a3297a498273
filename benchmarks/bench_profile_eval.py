"""Profile evaluation figures: judge wall time by concurrency, and a rerun from the judge cache.

Run: uv run python benchmarks/bench_profile_eval.py [--latency 0.05] [--profiles 2]

Prints (not asserts) figures for the CharacterHub protocol over a real Fandom page (the shared
``hokuto_toki_2020.html`` when ../shared exists, else the test fixture): reference chunks,
knowledge points kept/dropped by the quote check, then the wall time of a whole evaluation with
a scripted model of fixed per-call latency at several concurrency limits, and of a rerun served
from the on-disk judge cache (no model call).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from personae.evals.profile_eval import ProfileDocument, ProfileEvalContext, evaluate_profiles
from personae.evals.profile_reference import (
    ProfileReference,
    chunk_reference,
    read_reference_file,
)
from personae.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
SHARED_PAGE = ROOT.parent / "shared" / "fixtures" / "wiki" / "hokuto_toki_2020.html"
OWN_PAGE = ROOT / "tests" / "evals" / "fixtures" / "toki_small.html"
_CHUNK = re.compile(r"## Reference text \[C\d+\] \((.*?)\)\n(.*)\n\nList the knowledge", re.DOTALL)
_TYPES = ["identity", "appearance", "ability", "relationship", "experience", "personality"]


def extract(messages: list[BaseMessage]) -> dict[str, Any]:
    """One point per sentence (quoted exactly), plus one paraphrase the quote check drops."""
    match = _CHUNK.search(str(messages[-1].content))
    text = match.group(2) if match else ""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n", text) if len(s.split()) >= 4]
    points = [
        {"statement": s, "evidence": s, "type": _TYPES[i % len(_TYPES)]}
        for i, s in enumerate(sentences)
    ]
    points.append({"statement": "Toki can fly.", "evidence": "Toki flies.", "type": "other"})
    return {"points": points}


def judge(messages: list[BaseMessage]) -> dict[str, Any]:
    """A verdict drawn from a seeded distribution (the figures are about time, not scores)."""
    rng = random.Random(str(messages[-1].content))
    verdict = rng.choice(["supported", "partially_supported", "irrelevant", "contradicted"])
    return {"reason": "scripted", "verdict": verdict}


async def one_run(
    reference: ProfileReference,
    concurrency: int,
    latency: float,
    profiles: int,
    cache: Path | None,
) -> tuple[float, dict[str, Any]]:
    """Wall time of one evaluation of ``profiles`` documents (the page is parsed beforehand)."""
    model = ScriptedChatModel(
        responders={"ExtractedKnowledge": extract, "SupportJudgment": judge}, latency=latency
    )
    context = ProfileEvalContext(
        judge_model=model,
        judge_model_name="scripted",
        extractor_model=model,
        extractor_model_name="scripted",
        concurrency=concurrency,
        cache_dir=cache,
    )
    documents = [
        (
            Path(f"profile{i}.json"),
            ProfileDocument(character="Toki", profile=f"I am Toki (version {i}).", sources=[]),
        )
        for i in range(profiles)
    ]
    start = time.perf_counter()
    report = await evaluate_profiles(documents, reference, context)
    return time.perf_counter() - start, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--profiles", type=int, default=2, help="profiles judged at once")
    args = parser.parse_args()
    page = SHARED_PAGE if SHARED_PAGE.is_file() else OWN_PAGE
    reference = read_reference_file(page)
    print(f"reference: {page.name}, {len(chunk_reference(reference))} chunks")
    print(f"model latency {args.latency * 1000:.0f} ms per call, {args.profiles} profiles")
    for concurrency in (1, 4, 8, 16):
        seconds, report = asyncio.run(
            one_run(reference, concurrency, args.latency, args.profiles, None)
        )
        ref = report["reference"]
        print(
            f"concurrency {concurrency:>2}: {seconds:6.2f} s, {report['usage']['llm_calls']} calls "
            f"({ref['knowledge_points']} points kept, {ref['dropped_points']} dropped)"
        )
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder)
        cold, _ = asyncio.run(one_run(reference, 8, args.latency, args.profiles, cache))
        warm, report = asyncio.run(one_run(reference, 8, args.latency, args.profiles, cache))
        print(
            f"judge cache: first run {cold:.2f} s, rerun {warm:.3f} s with "
            f"{report['usage']['llm_calls']} calls and {report['usage']['cache_hits']} cache hits"
        )


if __name__ == "__main__":
    main()
