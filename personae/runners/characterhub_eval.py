"""CharacterHub's profile evaluation (Tables 1, 9 and 10) over many characters, as one call.

``personae characterhub eval`` and apps call :func:`evaluate_profile_files`: it groups the
profiles by character, finds each character's reference page (given, from a table, else on
Fandom, then by web search), loads it, estimates the run, scores every profile and DRInfo
(:mod:`personae.evals.characterhub.profile_eval`) and writes the JSON, Markdown and HTML report.
Nothing here prints: the estimate, the paper's settings and each step go to ``progress``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from personae.errors import InputError
from personae.progress import Progress, quiet
from personae.urls import web_url

if TYPE_CHECKING:
    from personae.evals.characterhub.profile_eval import (
        CharacterCase,
        ProfileDocument,
        ProfileEvalContext,
        ProfileEvalReport,
    )
    from personae.evals.paper_settings import PaperSetting
    from personae.settings import Settings

Documents = Sequence[tuple[Path, "ProfileDocument"]]
"""Profiles as ``(path, document)`` pairs (:func:`personae.evals.load_profile_document`)."""


async def evaluate_profile_files(
    profiles: Documents,
    *,
    context: ProfileEvalContext,
    out: Path,
    reference: str | None = None,
    references: Mapping[str, str] | None = None,
    settings: Settings | None = None,
    progress: Progress = quiet,
) -> ProfileEvalReport:
    """Score ``profiles`` of one or more characters against their reference pages.

    ``reference`` is one character's page (URL, saved ``.html`` or ``.json``); ``references``
    maps case-folded character names to pages; a character with neither has its page found on
    Fandom, then by web search (``settings``: the HTTP client's, Tavily's and the Fandom
    template; default the environment's). The report goes to ``out`` (``.md`` and ``.html``
    beside it), even when every character was left out (its extracted points were paid for:
    the caller decides whether that is an error).

    Raises:
        InputError: ``reference`` given for profiles of several characters, or a page that
            cannot be read, before any model call.
        RemoteError: a model failed, or more judgments degraded than the context allows.
    """
    from personae.evals.characterhub.profile_eval import (
        ProfileEvalReport,
        evaluate_characters_into,
    )
    from personae.evals.paper_settings import rows_json, settings_text
    from personae.files import CACHE_FIX, check_writable_dir
    from personae.settings import load_settings

    settings = settings or load_settings()
    check_writable_dir(settings.cache_dir, "PERSONAE_CACHE_DIR", CACHE_FIX)  # pages, answers
    rows = paper_rows(context, [document for _, document in profiles])
    groups = group_documents(profiles)
    if reference and len(groups) > 1:
        raise InputError(
            f"--reference names one page but the profiles are of {len(groups)} characters",
            "pass --references FILE.csv with one row per character",
        )
    cases = await _cases(groups, reference, references or {}, settings, progress)
    _announce_cost(cases, context, progress)
    progress(settings_text("CharacterHub Table 1", rows).rstrip("\n"))
    record = await evaluate_characters_into(
        out,
        cases,
        context,
        paper_settings=rows_json(rows),
        progress=lambda line: progress(f"• {line}"),
    )
    return ProfileEvalReport.of(record, out)


def paper_rows(context: ProfileEvalContext, documents: list[ProfileDocument]) -> list[PaperSetting]:
    """The paper's evaluation settings beside this run's (and the profiles' own models)."""
    from personae.evals.characterhub.paper_settings import evaluation_rows

    chunks = (
        "whole page" if context.chunk_tokens is None else f"{context.chunk_tokens}-token chunks"
    )
    batch = context.judge_batch
    return evaluation_rows(
        context.settings,
        extraction=chunks,
        judge_batch="whole knowledge list" if batch is None else str(batch),
        profile_models=[document.models for document in documents],
    )


def group_documents(documents: Documents) -> dict[str, list[tuple[Path, ProfileDocument]]]:
    """Profiles grouped by character (case-insensitive), in first-seen order."""
    groups: dict[str, list[tuple[Path, ProfileDocument]]] = {}
    for path, document in documents:
        groups.setdefault(document.character.casefold(), []).append((path, document))
    return groups


async def _cases(
    groups: Mapping[str, list[tuple[Path, ProfileDocument]]],
    reference: str | None,
    table: Mapping[str, str],
    settings: Settings,
    progress: Progress,
) -> list[CharacterCase]:
    """One case per character with its reference: given, from the table, or found."""
    from personae.evals.characterhub.profile_eval import CharacterCase
    from personae.evals.characterhub.profile_reference import load_reference
    from personae.evals.characterhub.reference_finder import find_reference
    from personae.tools.http import PoliteHttpClient
    from personae.tools.web_search import TavilySearch

    wiki_pages = [d.wiki_page for docs in groups.values() for _, d in docs if d.wiki_page]
    template = settings.fandom_template.replace("{slug}", "x")
    configured = [web_url(template, "PERSONAE_FANDOM_TEMPLATE", "https://{slug}.fandom.com")]
    configured += wiki_pages
    if settings.tavily_api_key:
        configured.append(settings.tavily_base_url)
    hosts = [urlsplit(u.replace("{slug}", "x")).netloc for u in configured]
    cases = []
    async with PoliteHttpClient.from_settings(settings, allowed_hosts=hosts) as http:
        searcher = (
            TavilySearch.from_settings(settings, http=http) if settings.tavily_api_key else None
        )
        for key, documents in groups.items():
            first = documents[0][1]
            source, found_by = reference or table.get(key), "given"
            if not source:
                wiki = next((d.wiki_page for _, d in documents if d.wiki_page), None)
                root = wiki.split("/wiki/")[0] if wiki and "/wiki/" in wiki else None
                source, found_by = await find_reference(
                    first.character,
                    first.franchise,
                    http=http,
                    searcher=searcher,
                    wiki_url=root,
                    fandom_template=settings.fandom_template,
                )
                progress(f"• {first.character}: reference found by {found_by}: {source}")
            page = await load_reference(source, settings=settings)
            cases.append(CharacterCase(first.character, page, source, found_by, documents))
    return cases


def _announce_cost(
    cases: list[CharacterCase], context: ProfileEvalContext, progress: Progress
) -> None:
    """Report the estimated calls and tokens, and the models that will be paid, before a call."""
    from personae.agents.costs import estimate_line
    from personae.evals.characterhub.costs import estimate_profile_eval

    extractor = context.extractor_model_name
    if extractor == context.judge_model_name:
        extractor = "the judge"
    named = {"judge": context.judge_model_name, "extractor": extractor}
    progress(estimate_line(estimate_profile_eval(cases, context), named).rstrip("\n"))
