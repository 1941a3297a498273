"""The CharacterHub profile evaluation (§4 of the paper), over one or many characters.

For each character: knowledge points are extracted from the whole reference page with the
Table 9 prompt; every point is judged with the Table 10 prompt against each text under test,
the rewritten profile and the raw deep-search output (DRInfo) that ``profile.json`` keeps under
``drinfo``, as Tables 1 and 2 do; knowledge density is the number of points the same Table 9
prompt extracts from a text per 1k tokens of that text (wiki page, DRInfo, profile). Scores are
micro-averaged: the counts of all knowledge points of all characters are pooled before the rates
are taken ("averaging over all knowledge points across all characters", §5.1), overall and per
dimension, per method and text; per-character scores are reported too.

Model calls run concurrently under one semaphore and through the on-disk judge cache, so a rerun
makes no model call. :func:`evaluate_characters_into` (what ``personae characterhub
eval-profile`` runs) and :func:`evaluate_profiles` with ``out`` write the report: the JSON, a
Markdown and an HTML rendering beside it, each atomically.
"""

from __future__ import annotations

import asyncio
import re
import unicodedata
from collections import defaultdict
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlsplit

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from personae.agents.answer_schemas import ask_in_batch_or_alone
from personae.agents.characterhub.knowledge_extractor import (
    KnowledgePoint,
    character_data,
    extract_knowledge,
    merge_chunk_points,
)
from personae.agents.characterhub.support_judge import Alignment, judge_alignment
from personae.answer_store import AnswerStore
from personae.degraded import FailureBudget
from personae.errors import InputError
from personae.evals.characterhub.profile_metrics import (
    SupportScores,
    count_tokens,
    knowledge_density,
    score_by_dimension,
)
from personae.evals.characterhub.profile_reference import (
    ProfileReference,
    chunk_reference,
    reference_content,
    reference_text,
)
from personae.fanout import gather_all
from personae.files import parse_json, read_text, require_file
from personae.llm import InvalidAnswerError, LLMUsage
from personae.llm_endpoint import chosen_methods
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.progress import Progress, quiet
from personae.tools.web_search import normalize_url

T = TypeVar("T")
TextKind = Literal["drinfo", "profile"]
TEXT_KINDS: tuple[TextKind, ...] = ("drinfo", "profile")
"""The texts the paper scores per character, in Table 1's row order."""
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
    franchise: str | None = None
    method: str = "planned"
    """Profiling method (``paper`` or ``planned``); files from before methods existed: planned."""
    profile: str
    drinfo: str = ""
    """Raw deep-search output (R², "DRInfo"); empty in files from before it was kept."""
    sources: list[ProfileSource] = Field(default_factory=list)
    wiki_page: str | None = None
    excluded_urls: list[str] = Field(default_factory=list)
    """Pages the profile was made without (``--exclude-url``); empty in older files."""
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The model roles that made it, with their sampling; empty in older files."""

    def text(self, kind: TextKind) -> str:
        """The text of ``kind`` (the profile or DRInfo)."""
        return self.profile if kind == "profile" else self.drinfo


@dataclass(frozen=True, kw_only=True)
class ProfileEvalContext:
    """Run settings of one evaluation; the CLI fills them from flags and the environment."""

    judge_model: BaseChatModel
    """Model labelling knowledge points against each text (Table 10)."""
    judge_model_name: str
    """Its name in the cache key (``provider:model@server``)."""
    extractor_model: BaseChatModel
    """Model extracting knowledge points (Table 9); the judge model unless told otherwise."""
    extractor_model_name: str
    """Its name in the cache key."""
    concurrency: int = 8
    """Model calls in flight at once."""
    cache_dir: Path | None = None
    """Judge cache directory; ``None`` disables caching."""
    chunk_tokens: int | None = None
    """``None``: the whole reference page in one extraction call, as the paper does; a number
    splits the page for small-context models (cross-chunk repeats are then merged in code)."""
    judge_batch: int | None = None
    """``None``: the whole knowledge list in one judge call, as Table 10 does; a number judges
    the list in batches of that size."""
    density: bool = True
    """Extract points from the profile and DRInfo too, for their knowledge density."""
    verify_evidence: bool = False
    """Ours, opt-in: drop the points whose evidence is not a quote of their input. Off under
    the paper's protocol (Table 9's rule 2 invites evidence combined from two places, and the
    filter changes |K|); the report counts the points it would drop either way."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Models and sampling settings, recorded verbatim in the report."""
    max_failures: FailureBudget = field(default_factory=FailureBudget)
    """Degraded judgments (no valid label even alone) tolerated before the run stops."""


@dataclass(frozen=True)
class CharacterCase:
    """One character to evaluate: its reference page and the profile files made for it."""

    character: str
    reference: ProfileReference
    reference_source: str
    """What the user gave (URL or file), or the URL found automatically."""
    found_by: str
    """``given`` or how the reference was found (``profile wiki page``, ``fandom``, ``web``)."""
    documents: Sequence[tuple[Path, ProfileDocument]]


def load_profile_document(path: Path) -> ProfileDocument:
    """Read and validate a ``profile.json`` (a profile folder works too); ``InputError`` if bad."""
    if path.is_dir() and (path / "profile.json").is_file():
        path = path / "profile.json"
    require_file(path, "profile file", _NOT_A_PROFILE_FIX)
    data = parse_json(read_text(path), str(path), _NOT_A_PROFILE_FIX)
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


def collect_profile_files(paths: Sequence[Path]) -> list[Path]:
    """Every ``profile.json`` named by ``paths``: files as given, folders searched recursively."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.rglob("profile.json") if p.is_file())
            if not inside:
                raise InputError(f"{path} holds no profile.json", _NOT_A_PROFILE_FIX)
            found += inside
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def run_labels(documents: Sequence[tuple[Path, ProfileDocument]]) -> list[str]:
    """A column label per profile: its method, plus what tells apart a repeated method.

    Two profiles of one character made with one method must not be pooled into one column.
    When exactly one of the two was made with ``--exclude-url`` they are the paper's
    "reference allowed / excluded" pair and are labelled so; otherwise (both or neither
    excluded pages, or more than two) each carries the folder above its character folder.
    """
    labels = [doc.method for _, doc in documents]
    groups: dict[tuple[str, str], list[ProfileDocument]] = defaultdict(list)
    for (_, doc), label in zip(documents, labels, strict=True):
        groups[(doc.character.casefold(), label)].append(doc)
    named = []
    for (path, doc), label in zip(documents, labels, strict=True):
        group = groups[(doc.character.casefold(), label)]
        if len(group) == 1:
            named.append(label)
        elif len(group) == 2 and sum(bool(d.excluded_urls) for d in group) == 1:
            named.append(f"{label} (reference {'excluded' if doc.excluded_urls else 'allowed'})")
        else:
            named.append(f"{label} ({path.parent.parent.name or path.parent.name})")
    return named


def _name_words(text: str) -> set[str]:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().casefold()
    return set(re.findall(r"[a-z0-9]+", re.sub(r"\(.*?\)", " ", folded)))


def character_mismatch(case: CharacterCase) -> str | None:
    """A warning when the profiles and the reference page name different characters.

    Scoring Kenshiro's profile against Raoh's page gives numbers that mean nothing; a typo in
    ``--references`` or an automatic find that went wrong is caught by comparing names (accents,
    case and a parenthesised qualifier ignored; one shared word is enough: "Toki" and
    "Toki (Hokuto no Ken)" or "Kenshirō" and "Kenshiro" agree).
    """
    title = case.reference.title
    if not title.strip() or _name_words(case.character) & _name_words(title):
        return None
    return (
        f"the profiles are of {case.character!r} but the reference page is {title!r} "
        f"({case.reference_source}); check the reference"
    )


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
    return await gather_all(works)


@dataclass
class _Run:
    """What every call of one evaluation shares."""

    context: ProfileEvalContext
    cache: AnswerStore
    slots: asyncio.Semaphore
    judgments: int = 0
    """Judgments planned so far (points x texts of the characters extracted)."""
    degraded: int = 0
    """Judgments no valid label came for; checked against ``context.max_failures``."""

    def count_degraded(self, degraded: int) -> None:
        """Add degraded judgments; stop the run when there are too many."""
        self.degraded += degraded
        self.context.max_failures.check(self.degraded, self.judgments, "judgments")


async def _extract(
    run: _Run, pieces: Sequence[tuple[str, str, str]]
) -> tuple[list[KnowledgePoint], int, LLMUsage]:
    """Points of ``(chunk id, JSON input, plain text)`` pieces, merged in order; dropped; usage."""

    async def one(piece: tuple[str, str, str]) -> tuple[list[KnowledgePoint], int, LLMUsage]:
        chunk_id, input_text, plain = piece
        async with run.slots:
            try:
                answer: tuple[list[KnowledgePoint], int, LLMUsage] = await extract_knowledge(
                    run.context.extractor_model,
                    input_text=input_text,
                    plain_text=plain,
                    chunk_id=chunk_id,
                    cache=run.cache,
                    model_name=run.context.extractor_model_name,
                    verify_evidence=False,  # every point kept, marked; filtered by the caller
                )
            except InvalidAnswerError as failed:  # degrade: this piece gives no point
                return [], 0, failed.usage + LLMUsage(degraded=1)
        return answer

    answers = await all_or_nothing(one(p) for p in pieces)
    points, repeated = merge_chunk_points(kept for kept, _, _ in answers)
    dropped = repeated + sum(lost for _, lost, _ in answers)
    return points, dropped, sum((used for _, _, used in answers), LLMUsage())


def reference_pieces(
    reference: ProfileReference, chunk_tokens: int | None
) -> list[tuple[str, str, str]]:
    """What the extractor reads: the whole page as one JSON, or one JSON per chunk."""
    if chunk_tokens is None:
        content = reference_content(reference)
        data = character_data(reference.title, reference.infobox, content)
        return [("C1", data, reference_text(reference))]
    pieces = []
    for chunk in chunk_reference(reference, max_tokens=chunk_tokens):
        if chunk.heading == "Infobox":
            rows = dict(line.split(": ", 1) for line in chunk.text.splitlines() if ": " in line)
            data = character_data(reference.title, rows, {})
        else:
            data = character_data(reference.title, {}, {chunk.heading: chunk.text})
        pieces.append((chunk.id, data, chunk.text))
    return pieces


def text_piece(name: str, kind: TextKind, text: str) -> tuple[str, str, str]:
    """A profile or DRInfo as Table 9's input (its content under one heading)."""
    heading = "Profile" if kind == "profile" else "Deep-search information"
    return (kind, character_data(name, {}, {heading: text}), text)


async def _judge(
    run: _Run, points: Sequence[KnowledgePoint], text: str
) -> tuple[list[Alignment | None], LLMUsage]:
    """One Table 10 label per point against ``text``, in point order (batched if asked).

    A batch still invalid after retries is judged one point per call; a point with no valid
    label even alone is ``None`` (left out of the scores, counted in ``usage.degraded``).
    """
    size = run.context.judge_batch or max(1, len(points))
    batches = [list(range(i, min(i + size, len(points)))) for i in range(0, len(points), size)]

    async def ask(indices: Sequence[int]) -> tuple[dict[int, Alignment], LLMUsage]:
        async with run.slots:
            labels, used = await judge_alignment(
                run.context.judge_model,
                statements=[points[i].statement for i in indices],
                text=text,
                first_id=indices[0] + 1,
                cache=run.cache,
                model_name=run.context.judge_model_name,
            )
        return dict(zip(indices, labels, strict=True)), used

    async def one(batch: Sequence[int]) -> tuple[dict[int, Alignment], LLMUsage]:
        found, used = await ask_in_batch_or_alone(batch, ask)
        run.count_degraded(used.degraded)
        return found, used

    answers = await all_or_nothing(one(b) for b in batches)
    found = {i: label for batch, _ in answers for i, label in batch.items()}
    return [found.get(i) for i in range(len(points))], sum((u for _, u in answers), LLMUsage())


def density_entry(points: int | None, text: str) -> dict[str, Any]:
    """``{tokens, points, per_1k_tokens}`` of a text (points ``None``: not measured)."""
    tokens = count_tokens(text)
    per_1k = None if points is None else knowledge_density(points, tokens)
    return {"tokens": tokens, "points": points, "per_1k_tokens": per_1k}


def type_counts(points: Sequence[KnowledgePoint]) -> dict[str, int]:
    """Knowledge points per dimension (the paper's Figure 4 distribution)."""
    return {d: sum(p.type == d for p in points) for d in DIMENSIONS}


async def _score_text(
    run: _Run,
    case: CharacterCase,
    points: Sequence[KnowledgePoint],
    document: ProfileDocument,
    kind: TextKind,
) -> tuple[dict[str, Any], LLMUsage]:
    text = document.text(kind)
    judged, used = await _judge(run, points, text)
    measured: int | None = None
    if run.context.density:
        own, _, extraction = await _extract(run, [text_piece(case.character, kind, text)])
        measured = None if extraction.degraded else len(_checked(run, own))
        used = used + extraction
    overall, per_dimension = score_by_dimension(
        (p.type, a.verdict) for p, a in zip(points, judged, strict=True) if a is not None
    )
    return {
        "overall": overall.as_dict(),
        "per_dimension": {d: per_dimension[d].as_dict() for d in DIMENSIONS},
        "density": density_entry(measured, text),
        "judgments": [
            {"point": f"K{n}", "verdict": a.verdict, "evidence": a.evidence}
            if a is not None
            else {"point": f"K{n}", "verdict": None, "evidence": "degraded: no valid label"}
            for n, a in enumerate(judged, start=1)
        ],
        "unjudged_points": sum(a is None for a in judged),
    }, used


async def evaluate_character(
    run: _Run, case: CharacterCase, labels: Sequence[str], progress: Progress
) -> tuple[dict[str, Any], LLMUsage]:
    """One character's part of the report: reference, points, and every text's scores."""
    pieces = reference_pieces(case.reference, run.context.chunk_tokens)
    progress(f"{case.character}: extracting knowledge points ({len(pieces)} call(s))")
    extracted, dropped, usage = await _extract(run, pieces)
    points = _checked(run, extracted)
    unquoted = sum(not p.quoted for p in extracted)
    if not points:
        return _left_out(case, extracted, dropped, unquoted, usage, run), usage
    urls = reference_urls(case.reference, case.reference_source)
    jobs: list[tuple[Path, ProfileDocument, str, TextKind]] = [
        (path, doc, label, kind)
        for (path, doc), label in zip(case.documents, labels, strict=True)
        for kind in TEXT_KINDS
        if doc.text(kind).strip()
    ]
    progress(f"{case.character}: judging {len(points)} points against {len(jobs)} text(s)")
    run.judgments += len(points) * len(jobs)
    scored = await all_or_nothing(_score_text(run, case, points, d, k) for _, d, _, k in jobs)
    texts = []
    for (path, doc, label, kind), (result, used) in zip(jobs, scored, strict=True):
        leaked = leaked_source_ids(doc, urls)
        texts.append(
            {
                "path": str(path),
                "method": label,
                "text": kind,
                "reference_in_sources": bool(leaked) if urls else None,
                "leaked_source_ids": leaked,
                **result,
            }
        )
        usage = usage + used
    missing = [str(p) for p, d in case.documents if not d.drinfo.strip()]
    return {
        "character": case.character,
        "reference": {
            "title": case.reference.title,
            "url": case.reference.url,
            "source": case.reference_source,
            "found_by": case.found_by,
            "leakage_urls": urls,
            "knowledge_points": len(points),
            "dropped_points": dropped + (unquoted if run.context.verify_evidence else 0),
            # Points whose evidence is not a quote of the page: what --verify-evidence drops.
            "unquoted_points": unquoted,
            "evidence_verified": run.context.verify_evidence,
            "density": density_entry(len(points), reference_text(case.reference)),
            "types": type_counts(points),
        },
        "knowledge_points": [{"id": f"K{n}", **asdict(p)} for n, p in enumerate(points, start=1)],
        "texts": texts,
        "without_drinfo": missing,
    }, usage


def _checked(run: _Run, points: Sequence[KnowledgePoint]) -> list[KnowledgePoint]:
    """The points scored: all of them, or with ``verify_evidence`` only the quoted ones."""
    return [p for p in points if p.quoted or not run.context.verify_evidence]


def _left_out(
    case: CharacterCase,
    extracted: Sequence[KnowledgePoint],
    dropped: int,
    unquoted: int,
    usage: LLMUsage,
    run: _Run,
) -> dict[str, Any]:
    """A character with no point to score: why, and the points extracted (paid for, kept)."""
    failed = f", {usage.degraded} extraction(s) failed" if usage.degraded else ""
    if extracted:
        reason = (
            f"no knowledge point of {case.reference.title!r} survived --verify-evidence "
            f"({unquoted} with evidence not found in the reference{failed})"
        )
    else:
        reason = f"no knowledge point extracted from {case.reference.title!r} ({dropped} dropped{failed})"
    return {
        "character": case.character,
        "left_out": reason,
        "reference": {
            "title": case.reference.title,
            "url": case.reference.url,
            "source": case.reference_source,
            "found_by": case.found_by,
        },
        "knowledge_points": [{"id": f"K{n}", **asdict(p)} for n, p in enumerate(extracted, 1)],
        "evidence_verified": run.context.verify_evidence,
    }


def micro_average(characters: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{method: {text: {overall, per_dimension, characters, density}}}`` pooled over points.

    Counts of all characters are summed before the rates are taken (micro-average), so a
    character with many points weighs more, as in the paper. Density is the mean over
    characters of each text's points per 1k tokens.
    """
    pooled: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for character in characters:
        for text in character["texts"]:
            pooled[(text["method"], text["text"])].append(text)
    summary: dict[str, dict[str, Any]] = defaultdict(dict)
    for (method, kind), texts in pooled.items():
        densities = [t["density"]["per_1k_tokens"] for t in texts]
        measured = [d for d in densities if d is not None]
        summary[method][kind] = {
            "characters": len(texts),
            "overall": _pool(t["overall"] for t in texts).as_dict(),
            "per_dimension": {
                d: _pool(t["per_dimension"][d] for t in texts).as_dict() for d in DIMENSIONS
            },
            "mean_density": sum(measured) / len(measured) if measured else None,
        }
    return dict(summary)


def _pool(scores: Iterable[Mapping[str, Any]]) -> SupportScores:
    keys = ("n", "supported", "partially_supported", "irrelevant", "contradicted")
    totals = dict.fromkeys(keys, 0)
    for score in scores:
        for key in keys:
            totals[key] += int(score[key])
    return SupportScores(**totals)


async def evaluate_characters(
    cases: Sequence[CharacterCase],
    context: ProfileEvalContext,
    *,
    progress: Progress = quiet,
) -> dict[str, Any]:
    """The full report for ``cases`` (nothing is written here).

    Raises:
        RemoteError: A model failed, more judgments degraded than ``max_failures`` allows
            (:class:`~personae.errors.TooManyFailuresError`). A character whose reference
            gives no point to score is not an error: it is listed under ``left_out`` with its
            extracted points, and the caller decides (every character left out: nothing usable).
    """
    say = progress
    warnings = [w for w in (character_mismatch(case) for case in cases) if w]
    for warning in warnings:
        say(f"warning: {warning}")
    run = _Run(
        context, AnswerStore(context.cache_dir), asyncio.Semaphore(max(1, context.concurrency))
    )
    answers = await all_or_nothing(
        evaluate_character(run, case, run_labels(case.documents), say) for case in cases
    )
    total = sum((used for _, used in answers), LLMUsage())
    # One character with nothing to score is reported and left out; the others are scored.
    characters = [character for character, _ in answers if "left_out" not in character]
    left_out = [character for character, _ in answers if "left_out" in character]
    for character in left_out:
        say(f"{character['character']}: left out: {character['left_out']}")
    reference_density = [c["reference"]["density"]["per_1k_tokens"] for c in characters]
    measured = [d for d in reference_density if d is not None]
    return {
        "protocol": "CharacterHub profile evaluation (Tables 9 and 10, micro-averaged)",
        "settings": dict(context.settings)
        or {
            "judge": {"model": context.judge_model_name},
            "extractor": {"model": context.extractor_model_name},
        },
        "extraction": "whole page" if context.chunk_tokens is None else context.chunk_tokens,
        "judge_batch": context.judge_batch or "whole knowledge list",
        # How the structured answers were asked for, per model@server (personae.llm_endpoint).
        "structured_output": chosen_methods(),
        "warnings": warnings,
        "summary": micro_average(characters),
        "reference_mean_density": sum(measured) / len(measured) if measured else None,
        "characters": characters,
        "left_out": left_out,
        "evidence_verified": context.verify_evidence,
        "degraded": {
            "total": total.degraded + len(left_out),
            "judgments": run.degraded,
            "characters_left_out": len(left_out),
        },
        "usage": {
            **total.as_dict(),
            "cache_hits": run.cache.hits,
            "cache_misses": run.cache.misses,
        },
    }


@dataclass(frozen=True)
class ProfileEvalReport:
    """A profile evaluation: the report (what its JSON file holds) and what a caller checks."""

    record: dict[str, Any]
    """The report as written to ``out``: per character and text the support and density
    scores (Tables 9-10), the micro average, the settings, the usage."""
    scored: int
    """Characters scored."""
    left_out: int
    """Characters left out: their reference gave no point to score (their points are kept)."""
    degraded: int
    """Judgments left out after retries, plus the characters left out."""
    out: Path | None = None
    """The report's JSON file (``.md`` and ``.html`` beside it), None when nothing was written."""

    @classmethod
    def of(cls, record: dict[str, Any], out: Path | None) -> ProfileEvalReport:
        """The typed result of a report :func:`evaluate_characters` made."""
        return cls(
            record=record,
            scored=len(record["characters"]),
            left_out=len(record["left_out"]),
            degraded=int(record["degraded"]["total"]),
            out=out,
        )


async def evaluate_profiles(
    profiles: Sequence[tuple[Path, ProfileDocument]],
    reference: ProfileReference,
    *,
    context: ProfileEvalContext,
    reference_source: str = "",
    out: Path | None = None,
    progress: Progress = quiet,
) -> ProfileEvalReport:
    """Score profiles of one character against one reference page (CharacterHub Tables 9-10).

    ``profiles`` are ``(path, document)`` pairs (:func:`load_profile_document`). With ``out``
    (a ``.json`` path) the report is also written there, with ``.md`` and ``.html`` renderings
    beside it (:func:`evaluate_characters_into`).
    """
    case = CharacterCase(
        character=profiles[0][1].character if profiles else reference.title,
        reference=reference,
        reference_source=reference_source,
        found_by="given",
        documents=profiles,
    )
    if out is not None:
        written = await evaluate_characters_into(out, [case], context, progress=progress)
        return ProfileEvalReport.of(written, out)
    return ProfileEvalReport.of(await evaluate_characters([case], context, progress=progress), None)


async def evaluate_characters_into(
    out: Path,
    cases: Sequence[CharacterCase],
    context: ProfileEvalContext,
    *,
    paper_settings: list[dict[str, Any]] | None = None,
    progress: Progress = quiet,
) -> dict[str, Any]:
    """Evaluate ``cases`` and write the report: ``out`` (JSON), ``out.md`` and ``out.html``.

    ``paper_settings`` (the paper's settings beside this run's) is kept in the report. The
    report is written even when every character was left out: its extracted points were paid
    for (the caller decides whether that is an error).
    """
    from personae.evals.characterhub.profile_report import html_report, markdown_report
    from personae.files import write_json_atomic, write_text_atomic

    report = await evaluate_characters(cases, context, progress=progress)
    if paper_settings is not None:
        report["paper_settings"] = paper_settings
    write_text_atomic(out.with_suffix(".md"), markdown_report(report))
    write_text_atomic(out.with_suffix(".html"), html_report(report))
    write_json_atomic(out, report)
    return report
