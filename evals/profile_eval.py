"""The CharacterHub profile evaluation: reference page → knowledge points → verdicts → scores.

Runs the paper's protocol over one or more ``profile.json`` files against one reference page:
knowledge points are extracted once from the reference (fast model), every point is judged
against every profile (judge model), concurrently under one semaphore and through the on-disk
judge cache, so a rerun makes no model call. Several profiles make the "reference allowed /
excluded" comparison: each profile's sources are checked for the reference URL (leakage).
Nothing is written here: the caller writes the report atomically once everything succeeded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from personae.agents.knowledge_extractor import (
    KnowledgePoint,
    extract_knowledge,
    merge_chunk_points,
)
from personae.agents.query_planner import DIMENSIONS
from personae.agents.support_judge import SupportJudgment, judge_support
from personae.errors import InputError, RemoteError
from personae.evals.judge_cache import JudgeCache
from personae.evals.profile_metrics import (
    count_tokens,
    knowledge_density,
    score_by_dimension,
)
from personae.evals.profile_reference import (
    DEFAULT_CHUNK_TOKENS,
    ProfileReference,
    ReferenceChunk,
    chunk_reference,
    reference_text,
)
from personae.llm import LLMUsage
from personae.tools.web_search import normalize_url

T = TypeVar("T")
Progress = Callable[[str], None]
_NOT_A_PROFILE_FIX = "pass the profile.json that `personae profile` wrote (run it first)"


class ProfileSource(BaseModel):
    """One source of a profile (fields the evaluation reads; others are kept)."""

    model_config = ConfigDict(extra="allow")

    id: str
    url: str = ""
    content: str = ""
    """Raw evidence text (profile.json files from before it was kept have none)."""


class ProfileDocument(BaseModel):
    """The parts of ``profile.json`` the evaluation needs; extra fields are allowed."""

    model_config = ConfigDict(extra="allow")

    character: str
    profile: str
    sources: list[ProfileSource] = Field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ProfileEvalContext:
    """Run settings of one evaluation; the CLI fills them from flags and the environment."""

    judge_model: BaseChatModel
    """Model judging each knowledge point against each profile (``--model``)."""
    judge_model_name: str
    """Its name in the cache key (``provider:model@server``)."""
    extractor_model: BaseChatModel
    """Model extracting knowledge points from the reference (``--fast-model``)."""
    extractor_model_name: str
    """Its name in the cache key."""
    concurrency: int = 8
    """Model calls in flight at once."""
    cache_dir: Path | None = None
    """Judge cache directory; ``None`` disables caching."""
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS
    """Largest reference chunk per extraction call."""


def load_profile_document(path: Path) -> ProfileDocument:
    """Read and validate a ``profile.json`` (a profile folder works too); ``InputError`` if bad."""
    if path.is_dir() and (path / "profile.json").is_file():
        path = path / "profile.json"
    if not path.is_file():
        raise InputError(f"profile file {path} does not exist", _NOT_A_PROFILE_FIX)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{path} is not a UTF-8 text file", _NOT_A_PROFILE_FIX) from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path} is not valid JSON ({error.msg} at line {error.lineno})", _NOT_A_PROFILE_FIX
        ) from None
    try:
        document = ProfileDocument.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputError(
            f"{path} is not a Personae profile.json ({where}: {first['msg']})",
            _NOT_A_PROFILE_FIX,
        ) from None
    if not document.profile.strip():
        raise InputError(f"{path} has an empty profile text", "rerun personae profile")
    return document


def page_key(url: str) -> str:
    """A URL reduced to host and page path, so encodings and schemes of one page compare equal."""
    normal = urlsplit(normalize_url(url.partition("#")[0]))
    path = unquote(normal.path).replace(" ", "_")
    return f"{normal.netloc}{path}".casefold() + (f"?{normal.query}" if normal.query else "")


def reference_urls(reference: ProfileReference, source: str = "") -> list[str]:
    """Every URL naming the reference page: its own URL and the URL the user gave, if any."""
    urls = [reference.url, source if urlsplit(source).scheme in ("http", "https") else ""]
    return list(dict.fromkeys(u for u in urls if u))


def leaked_source_ids(document: ProfileDocument, urls: Sequence[str]) -> list[str]:
    """Ids of the profile's sources taken from the reference page (any passage of it)."""
    wanted = {page_key(url) for url in urls}
    return [s.id for s in document.sources if s.url and page_key(s.url) in wanted]


async def all_or_nothing(works: Iterable[Awaitable[T]]) -> list[T]:
    """Run ``works`` concurrently; on the first failure cancel the rest, then raise it.

    Finished answers are already in the judge cache, so a rerun resumes where this stopped.
    """
    tasks = [asyncio.ensure_future(work) for work in works]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def extract_points(
    chunks: Sequence[ReferenceChunk],
    *,
    name: str,
    context: ProfileEvalContext,
    cache: JudgeCache,
    slots: asyncio.Semaphore,
) -> tuple[list[KnowledgePoint], int, LLMUsage]:
    """Verified knowledge points of every chunk (in chunk order), points dropped, usage."""

    async def one(chunk: ReferenceChunk) -> tuple[list[KnowledgePoint], int, LLMUsage]:
        async with slots:
            answer: tuple[list[KnowledgePoint], int, LLMUsage] = await extract_knowledge(
                context.extractor_model,
                name=name,
                chunk_id=chunk.id,
                heading=chunk.heading,
                text=chunk.text,
                cache=cache,
                model_name=context.extractor_model_name,
            )
        return answer

    answers = await all_or_nothing(one(c) for c in chunks)
    points, repeated = merge_chunk_points(kept for kept, _, _ in answers)
    dropped = repeated + sum(lost for _, lost, _ in answers)
    return points, dropped, sum((used for _, _, used in answers), LLMUsage())


async def judge_points(
    points: Sequence[KnowledgePoint],
    document: ProfileDocument,
    *,
    context: ProfileEvalContext,
    cache: JudgeCache,
    slots: asyncio.Semaphore,
) -> tuple[list[SupportJudgment], LLMUsage]:
    """One verdict per point against ``document``'s profile text, in point order."""

    async def one(point: KnowledgePoint) -> tuple[SupportJudgment, LLMUsage]:
        async with slots:
            answer: tuple[SupportJudgment, LLMUsage] = await judge_support(
                context.judge_model,
                name=document.character,
                profile=document.profile,
                statement=point.statement,
                evidence=point.evidence,
                dimension=point.type,
                cache=cache,
                model_name=context.judge_model_name,
            )
        return answer

    answers = await all_or_nothing(one(p) for p in points)
    usage = sum((used for _, used in answers), LLMUsage())
    return [judgment for judgment, _ in answers], usage


def _density(points: float, text: str) -> dict[str, Any]:
    tokens = count_tokens(text)
    return {"tokens": tokens, "points": points, "per_1k_tokens": knowledge_density(points, tokens)}


def profile_result(
    path: Path,
    document: ProfileDocument,
    urls: Sequence[str],
    points: Sequence[KnowledgePoint],
    judgments: Sequence[SupportJudgment],
    usage: LLMUsage,
) -> dict[str, Any]:
    """One profile's part of the report: leakage, scores overall and per dimension, density.

    Density counts the points the profile carries (``Sup + 0.5·Par``) per 1k tokens, of the
    profile text and of the raw evidence its sources hold; their ratio is the compression.
    Leakage is ``None`` (unknown) when the reference has no URL to look for.
    """
    overall, per_dimension = score_by_dimension(
        (p.type, j.verdict) for p, j in zip(points, judgments, strict=True)
    )
    leaked = leaked_source_ids(document, urls)
    evidence = "\n\n".join(s.content for s in document.sources if s.content.strip())
    return {
        "path": str(path),
        "character": document.character,
        "reference_in_sources": bool(leaked) if urls else None,
        "leaked_source_ids": leaked,
        "overall": overall.as_dict(),
        "per_dimension": {d: per_dimension[d].as_dict() for d in DIMENSIONS},
        "density": {
            "profile": _density(overall.credited_points, document.profile),
            "evidence": _density(overall.credited_points, evidence),
        },
        "judgments": [
            {"point": f"K{number}", "verdict": j.verdict, "reason": j.reason}
            for number, j in enumerate(judgments, start=1)
        ],
        "usage": usage.as_dict(),
    }


async def evaluate_profiles(
    profiles: Sequence[tuple[Path, ProfileDocument]],
    reference: ProfileReference,
    context: ProfileEvalContext,
    *,
    reference_source: str = "",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The full report for ``profiles`` against ``reference`` (nothing is written here).

    Raises:
        RemoteError: A model failed, or no knowledge point survived verification.
    """
    say = progress or (lambda _line: None)
    cache = JudgeCache(context.cache_dir)
    slots = asyncio.Semaphore(max(1, context.concurrency))
    chunks = chunk_reference(reference, max_tokens=context.chunk_tokens)
    say(f"extracting knowledge points from {len(chunks)} reference chunks")
    points, dropped, extraction_usage = await extract_points(
        chunks, name=reference.title, context=context, cache=cache, slots=slots
    )
    if not points:
        raise RemoteError(
            f"no knowledge point of {reference.title!r} survived verification "
            f"({dropped} dropped: evidence not found in the reference)",
            "use a stronger --fast-model that quotes the reference exactly",
        )
    say(f"judging {len(points)} knowledge points against {len(profiles)} profile(s)")
    judged = await all_or_nothing(
        judge_points(points, document, context=context, cache=cache, slots=slots)
        for _, document in profiles
    )
    urls = reference_urls(reference, reference_source)
    results = [
        profile_result(path, document, urls, points, judgments, used)
        for (path, document), (judgments, used) in zip(profiles, judged, strict=True)
    ]
    total = sum((used for _, used in judged), extraction_usage)
    ref_text = reference_text(reference)
    return {
        "protocol": "CharacterHub profile evaluation",
        "reference": {
            "title": reference.title,
            "url": reference.url,
            "source": reference_source,
            "leakage_urls": urls,
            "chunks": len(chunks),
            "knowledge_points": len(points),
            "dropped_points": dropped,
            "density": _density(len(points), ref_text),
        },
        "models": {"judge": context.judge_model_name, "extractor": context.extractor_model_name},
        "knowledge_points": [
            {"id": f"K{number}", **asdict(point)} for number, point in enumerate(points, start=1)
        ],
        "profiles": results,
        "usage": {**total.as_dict(), "cache_hits": cache.hits, "cache_misses": cache.misses},
    }


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _score_row(label: str, scores: dict[str, Any]) -> str:
    counts = [
        scores[k] for k in ("n", "supported", "partially_supported", "irrelevant", "contradicted")
    ]
    rates = [_rate(scores[k]) for k in ("support_score", "irrelevant_rate", "contradiction_rate")]
    return f"{label:<13}" + "".join(f"{c:>5}" for c in counts) + "".join(f"{r:>14}" for r in rates)


def _leakage(result: dict[str, Any], *, detailed: bool = False) -> str:
    if result["reference_in_sources"] is None:
        return "unknown (the reference has no URL)" if detailed else "unknown"
    if not result["reference_in_sources"]:
        return "no"
    return f"yes ({', '.join(result['leaked_source_ids'])})" if detailed else "yes"


def _density_text(density: dict[str, Any]) -> str:
    per_1k = density["per_1k_tokens"]
    shown = "-" if per_1k is None else f"{per_1k:.2f}"
    return f"{shown} ({density['tokens']:,} tokens)"


def format_report(report: dict[str, Any]) -> str:
    """The readable table printed after a run: per profile scores, then a comparison."""
    ref = report["reference"]
    lines = [
        f"Reference: {ref['title']} ({ref['url'] or ref['source']}): "
        f"{ref['knowledge_points']} knowledge points from {ref['chunks']} chunks, "
        f"{ref['dropped_points']} dropped",
    ]
    header = (
        f"{'dimension':<13}"
        + "".join(f"{h:>5}" for h in ("N", "Sup", "Par", "Irr", "Con"))
        + "".join(f"{h:>14}" for h in ("support", "irrelevant", "contradiction"))
    )
    for result in report["profiles"]:
        lines += [
            "",
            f"{result['path']} ({result['character']}); reference page in sources: "
            + _leakage(result, detailed=True),
            header,
            _score_row("overall", result["overall"]),
            *(_score_row(d, s) for d, s in result["per_dimension"].items()),
            "knowledge density (points per 1k tokens): profile "
            f"{_density_text(result['density']['profile'])}, evidence "
            f"{_density_text(result['density']['evidence'])}",
        ]
    if len(report["profiles"]) > 1:
        lines += ["", "Comparison (reference allowed vs excluded)"]
        lines.append(
            f"{'leakage':<9}{'support':>9}{'irrelevant':>12}{'contradiction':>15}  profile"
        )
        for result in report["profiles"]:
            overall = result["overall"]
            lines.append(
                f"{_leakage(result):<9}"
                f"{_rate(overall['support_score']):>9}{_rate(overall['irrelevant_rate']):>12}"
                f"{_rate(overall['contradiction_rate']):>15}  {result['path']}"
            )
    usage = report["usage"]
    lines += [
        "",
        f"LLM calls {usage['llm_calls']}, cache hits {usage['cache_hits']}, "
        f"tokens {usage['input_tokens'] + usage['output_tokens']:,}",
    ]
    return "\n".join(lines)
