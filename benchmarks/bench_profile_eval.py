"""Profile evaluation figures: judge wall time by concurrency, and a rerun from the judge cache.

Run: uv run python benchmarks/bench_profile_eval.py [--latency 0.05] [--profiles 2]

Prints (not asserts) figures for the CharacterHub protocol over a real Fandom page (the shared
``hokuto_toki_2020.html`` when ../shared exists, else the test fixture): reference chunks,
knowledge points kept/dropped by the quote check (the page cut into 700-token chunks and the
judge given batches of 10 points, so there is parallel work), then the wall time of a whole
evaluation of each profile and its DRInfo with
a scripted model of fixed per-call latency at several concurrency limits, and of a rerun served
from the on-disk judge cache (no model call).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from personae.evals.characterhub.profile_eval import (
    ProfileDocument,
    ProfileEvalContext,
    evaluate_profiles,
)
from personae.evals.characterhub.profile_reference import (
    ProfileReference,
    chunk_reference,
    read_reference_file,
)
from personae.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
SHARED_PAGE = ROOT.parent / "shared" / "fixtures" / "wiki" / "hokuto_toki_2020.html"
OWN_PAGE = ROOT / "tests" / "evals" / "fixtures" / "toki_small.html"
_INPUT = re.compile(r"Input Data:\n```\n(.*)\n```\Z", re.DOTALL)
_LIST = re.compile(r"`knowledge_list`: (\[.*?\])\n\n`text`", re.DOTALL)
_TYPES = ["identity", "appearance", "ability", "relationship", "experience", "personality"]


def extract(messages: list[BaseMessage]) -> dict[str, Any]:
    """One point per sentence (quoted exactly), plus one paraphrase the quote check drops."""
    match = _INPUT.search(str(messages[0].content))
    data = json.loads(match.group(1)) if match else {"content": {}}
    text = "\n".join(data["content"].values())
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n", text) if len(s.split()) >= 4]
    points = [
        {"knowledge": s, "evidence": s, "type": _TYPES[i % len(_TYPES)]}
        for i, s in enumerate(sentences)
    ]
    points.append({"knowledge": "Toki can fly.", "evidence": "Toki flies.", "type": "other"})
    return {"entity": "Toki", "knowledge_points": points}


def judge(messages: list[BaseMessage]) -> dict[str, Any]:
    """Labels drawn from a seeded distribution (the figures are about time, not scores)."""
    match = _LIST.search(str(messages[0].content))
    items = json.loads(match.group(1)) if match else []
    rng = random.Random(str(messages[0].content))
    labels = ["supported", "partially supported", "irrelevant", "contradicted"]
    # the judge's answer is keyed by knowledge id (``alignment_schema``: required keys)
    return {str(i["id"]): {"evaluation": rng.choice(labels)} for i in items}


async def one_run(
    reference: ProfileReference,
    concurrency: int,
    latency: float,
    profiles: int,
    cache: Path | None,
) -> tuple[float, dict[str, Any]]:
    """Wall time of one evaluation of ``profiles`` documents (the page is parsed beforehand)."""
    model = ScriptedChatModel(
        responders={"ExtractedKnowledge": extract, "AlignmentList": judge}, latency=latency
    )
    context = ProfileEvalContext(
        judge_model=model,
        judge_model_name="scripted",
        extractor_model=model,
        extractor_model_name="scripted",
        concurrency=concurrency,
        cache_dir=cache,
        chunk_tokens=700,
        judge_batch=10,
    )
    documents = [
        (
            Path(f"profile{i}.json"),
            ProfileDocument(
                character="Toki",
                profile=f"I am Toki (version {i}). I heal the sick of the wasteland.",
                drinfo=f"# Toki\nToki (version {i}) is the second of the four Hokuto brothers.",
            ),
        )
        for i in range(profiles)
    ]
    start = time.perf_counter()
    report = await evaluate_profiles(documents, reference, context=context)
    return time.perf_counter() - start, report.record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--profiles", type=int, default=2, help="profiles judged at once")
    args = parser.parse_args()
    page = SHARED_PAGE if SHARED_PAGE.is_file() else OWN_PAGE
    reference = read_reference_file(page)
    print(f"reference: {page.name}, {len(chunk_reference(reference))} chunks of 700 tokens")
    print("judge batches of 10 points; profile and DRInfo of each profile judged")
    print(f"model latency {args.latency * 1000:.0f} ms per call, {args.profiles} profiles")
    for concurrency in (1, 4, 8, 16):
        seconds, report = asyncio.run(
            one_run(reference, concurrency, args.latency, args.profiles, None)
        )
        ref = report["characters"][0]["reference"]
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
