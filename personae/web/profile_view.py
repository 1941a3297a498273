"""What the profile page shows of a ``profile.json``: facts with their sources and verdicts.

Every field :func:`personae.profile_document` writes is shown, and only those: the prose, the
facts by dimension (each with its sources, each source with its passage), the citation check's
verdicts (supported, unchecked, dropped) and counts, the notices, the dropped model output, the
rounds, the usage and the raw deep-search notes. A field a run left out is an empty section,
never an invented value. Built here, not in the template, so a test reads the same values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from markupsafe import Markup

from personae.memory.characterhub.profile_store import DROPPED_RESULTS, dropped_output
from personae.web.markup import markdown_html


@dataclass(frozen=True)
class SourceView:
    """One source as a fact's link and the Sources table show it."""

    id: str
    title: str
    url: str
    """The URL as written (shown as text)."""
    href: str | None
    """The URL when it is http(s), else None (no ``javascript:`` link from a web page)."""
    origin: str
    passage: str
    """The evidence text the profiler read from it (what the citation check compared)."""


@dataclass(frozen=True)
class FactView:
    """One fact, its verdict and its sources."""

    text: str
    verdict: str
    """supported, unchecked or dropped."""
    sources: list[SourceView]
    missing: list[str] = field(default_factory=list)
    """Cited ids with no source record (shown, not hidden)."""
    quote: str = ""
    """The exact words the summarizer quoted, when the record keeps them."""


@dataclass(frozen=True)
class ProfileView:
    """Everything the profile page shows."""

    key: str
    name: str
    franchise: str
    method: str
    draft: bool
    draft_reason: str
    prose: Markup
    canon: str
    canon_rule: str
    stop_reason: str
    wiki_page: str
    notices: list[str]
    dimensions: list[tuple[str, list[FactView]]]
    dropped: list[tuple[str, list[FactView]]]
    counts: dict[str, int]
    prose_check: dict[str, Any]
    dropped_output: list[str]
    conflicts: list[str]
    sources: list[SourceView]
    rounds: list[dict[str, Any]]
    usage: list[tuple[str, Any]]
    models: list[tuple[str, str]]
    structured_output: list[tuple[str, str]]
    excluded_urls: list[str]
    drinfo: Markup


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def http_href(url: str) -> str | None:
    """``url`` when it is an http(s) URL with a host, else None (then shown as text only)."""
    parts = urlsplit(url.strip())
    return url.strip() if parts.scheme in ("http", "https") and parts.netloc else None


def source_views(document: Mapping[str, Any]) -> dict[str, SourceView]:
    """The document's sources by id."""
    views: dict[str, SourceView] = {}
    for source in _list(document.get("sources")):
        if not isinstance(source, Mapping) or not source.get("id"):
            continue
        url = str(source.get("url") or "")
        views[str(source["id"])] = SourceView(
            id=str(source["id"]),
            title=str(source.get("title") or url),
            url=url,
            href=http_href(url),
            origin=str(source.get("origin") or ""),
            passage=str(source.get("content") or ""),
        )
    return views


def _fact(record: Mapping[str, Any], verdict: str, sources: Mapping[str, SourceView]) -> FactView:
    ids = [str(i) for i in _list(record.get("source_ids"))]
    return FactView(
        text=str(record.get("text") or ""),
        verdict=verdict,
        sources=[sources[i] for i in ids if i in sources],
        missing=[i for i in ids if i not in sources],
        quote=str(record.get("quote") or ""),
    )


def _by_dimension(
    records: list[Any], verdict: str, sources: Mapping[str, SourceView]
) -> list[tuple[str, list[FactView]]]:
    grouped: dict[str, list[FactView]] = {}
    for record in records:
        if isinstance(record, Mapping):
            dimension = str(record.get("dimension") or "other")
            grouped.setdefault(dimension, []).append(_fact(record, verdict, sources))
    return list(grouped.items())


def profile_view(key: str, document: Mapping[str, Any]) -> ProfileView:
    """The page's view of one profile (or draft) document."""
    sources = source_views(document)
    usage = _dict(document.get("usage"))
    draft = document.get("checked") is False
    unchecked = {
        (str(f.get("dimension")), str(f.get("text")))
        for f in _list(document.get("unchecked_facts"))
        if isinstance(f, Mapping)
    }
    checked = bool(usage.get("facts_checked")) and not draft
    dimensions: list[tuple[str, list[FactView]]] = []
    for dimension, facts in _dict(document.get("dimensions")).items():
        views = [
            _fact(
                fact,
                "supported"
                if checked and (dimension, str(fact.get("text"))) not in unchecked
                else "unchecked",
                sources,
            )
            for fact in _list(facts)
            if isinstance(fact, Mapping)
        ]
        if views:
            dimensions.append((str(dimension), views))
    kept = [fact for _, facts in dimensions for fact in facts]
    dropped = _by_dimension(_list(document.get("unsupported_facts")), "dropped", sources)
    counts = {
        "supported": sum(fact.verdict == "supported" for fact in kept),
        "unchecked": sum(fact.verdict == "unchecked" for fact in kept),
        "dropped": sum(len(facts) for _, facts in dropped),
    }
    phrases = dropped_output(usage)
    if usage.get("results_dropped"):
        phrases.append(f"{usage['results_dropped']} {DROPPED_RESULTS}")
    return ProfileView(
        key=key,
        name=str(document.get("character") or key),
        franchise=str(document.get("franchise") or ""),
        method=str(document.get("method") or ""),
        draft=draft,
        draft_reason=str(document.get("reason") or ""),
        prose=markdown_html(str(document.get("profile") or "")),
        canon=str(document.get("canon") or ""),
        canon_rule=str(document.get("canon_rule") or ""),
        stop_reason=str(document.get("stop_reason") or ""),
        wiki_page=str(document.get("wiki_page") or ""),
        notices=[str(n) for n in _list(document.get("notices"))],
        dimensions=dimensions,
        dropped=dropped,
        counts=counts,
        prose_check=_dict(document.get("prose_check")),
        dropped_output=phrases,
        conflicts=[str(c) for c in _list(document.get("conflicts"))],
        sources=list(sources.values()),
        rounds=[_dict(r) for r in _list(document.get("rounds"))],
        usage=sorted(usage.items()),
        models=[(role, _model_line(spec)) for role, spec in _dict(document.get("models")).items()],
        structured_output=[
            (k, str(v)) for k, v in _dict(document.get("structured_output")).items()
        ],
        excluded_urls=[str(u) for u in _list(document.get("excluded_urls"))],
        drinfo=markdown_html(str(document.get("drinfo") or "")),
    )


def _model_line(spec: Any) -> str:
    if not isinstance(spec, Mapping):
        return str(spec)
    return ", ".join(f"{name}={value}" for name, value in spec.items())
