"""The checks of `personae doctor`, each one small call that a real run would make first.

Each check returns a :class:`Check` row instead of raising: the command prints every row,
so one broken setting does not hide the next. A failed row says whether the problem is a
setting (exit 2) or a remote service (exit 3).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from personae.errors import PersonaeError, RemoteError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from personae.settings import Settings

Status = Literal["ok", "warn", "fail", "skip"]
PROBE_ANSWER_TOKENS = 64
"""Answer cap of a probe call: enough for the probe's one-field JSON, and quick on any server."""
LIST_TIMEOUT = 10.0


@dataclass
class Check:
    """One row of the doctor's table."""

    name: str
    status: Status
    detail: str
    seconds: float = 0.0
    remote: bool = True
    """A failure is a remote service's (exit 3), not a setting's (exit 2)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What ``--json`` adds: the methods tried, the models listed, the folder checked."""


async def timed(name: str, check: Callable[[], Awaitable[Check]]) -> Check:
    """Run ``check`` and stamp its wall time; an unexpected PersonaeError becomes its row."""
    started = time.perf_counter()
    try:
        row = await check()
    except PersonaeError as error:
        row = Check(name, "fail", str(error), remote=isinstance(error, RemoteError))
    row.seconds = time.perf_counter() - started
    return row


# --- the LLM server and its models -------------------------------------------------------------


async def list_models(settings: Settings) -> tuple[Check, list[str] | None]:
    """GET ``/models`` of the configured server: reachable, and which models it serves."""
    import httpx

    from personae.llm_errors import SETTINGS_FIX, failure_kind
    from personae.tls import shared_ssl_context

    base = (settings.openai_base_url or "https://api.openai.com/v1").rstrip("/")
    key = settings.openai_api_key
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx.AsyncClient(timeout=LIST_TIMEOUT, verify=shared_ssl_context()) as client:
            response = await client.get(f"{base}/models", headers=headers)
    except httpx.HTTPError as error:
        kind = failure_kind(error)
        what = {
            "unreachable": "nothing answers there",
            "timeout": f"no answer within {LIST_TIMEOUT:g} s (busy, or not an LLM server)",
        }.get(kind or "", f"the connection failed ({type(error).__name__})")
        return Check("LLM server", "fail", f"{base}: {what}; {SETTINGS_FIX}"), None
    if response.status_code in (401, 403):
        detail = f"{base} refused the key (HTTP {response.status_code}); check OPENAI_API_KEY"
        return Check("LLM server", "fail", detail, remote=False), None
    names = _model_names(response)
    if names is None:
        detail = f"{base} answers, but /models gave HTTP {response.status_code}"
        return Check("LLM server", "warn", detail), None
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    row = Check("LLM server", "ok", f"{base} answers; serves {shown or 'no model'}")
    row.facts["models"] = names
    return row, names


def _model_names(response: Any) -> list[str] | None:
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [str(entry.get("id")) for entry in data if isinstance(entry, dict) and entry.get("id")]


async def check_model(
    role: str, spec: str, model: BaseChatModel, served: Sequence[str] | None
) -> Check:
    """The model exists, which structured-output method works, and one call's latency."""
    from personae.llm_endpoint import configured_method

    name = spec.partition(":")[2] or spec
    listed = served is None or name in served
    configured = configured_method(model)
    tried = await probe_methods(model)
    facts: dict[str, Any] = {"spec": spec, "listed": listed, "methods": tried}
    working = [t for t in tried if t["result"] == "ok"]
    if not working:
        reasons = "; ".join(f"{t['method']}: {t['detail']}" for t in tried)
        missing = "" if listed else f"not among the served models ({', '.join(served or [])}); "
        detail = f"{spec}: {missing}no structured-output method works ({reasons})"
        return Check(f"{role} model", "fail", detail, facts=facts)
    best = working[0]
    others = "; ".join(f"{t['method']} {t['detail']}" for t in tried if t is not best)
    chosen = "set" if configured != "auto" else "auto picks"
    detail = f"{spec}: {chosen} {best['method']} ({best['seconds']:.1f} s a call)"
    detail += f"; {others}" if others else ""
    status: Status = "ok"
    if not listed:
        status, detail = "warn", f"{detail}; not listed by the server, which answered anyway"
    return Check(f"{role} model", status, detail, facts=facts)


async def probe_methods(model: BaseChatModel) -> list[dict[str, Any]]:
    """One tiny structured call per method (the set one only, when the settings set one)."""
    from langchain_core.messages import HumanMessage, SystemMessage
    from pydantic import BaseModel, Field

    from personae.llm import call_structured, with_retry_budget, with_sampling
    from personae.llm_endpoint import METHODS, configured_method, with_endpoint_settings

    class DoctorProbe(BaseModel):
        """A yes/no answer."""

        answer: Literal["yes", "no"] = Field(description="yes or no")

    messages = [
        SystemMessage("You answer questions with yes or no."),
        HumanMessage("Is water wet?"),
    ]
    configured = configured_method(model)
    tried: list[dict[str, Any]] = []
    for method in (configured,) if configured != "auto" else METHODS:
        probe = with_endpoint_settings(
            with_retry_budget(with_sampling(model, {"max_tokens": PROBE_ANSWER_TOKENS}), 0),
            structured_output=method,
        )
        started = time.perf_counter()
        try:
            await call_structured(probe, DoctorProbe, messages, retries=0)
            result, detail = "ok", "works"
        except RemoteError as error:
            result, detail = "fail", _short(error)
        seconds = time.perf_counter() - started
        tried.append({"method": method, "result": result, "detail": detail, "seconds": seconds})
    return tried


def _short(error: RemoteError) -> str:
    """``HTTP 500: <what the server said>`` for a refusal, else the error's problem."""
    from personae.llm_errors import status_of

    cause = error.__cause__
    status = status_of(cause) if cause is not None else None
    if cause is not None and status is not None:
        body = getattr(cause, "body", None)
        said = body.get("message") if isinstance(body, dict) else None
        text = " ".join(str(said or cause).split())
        return _cut(f"HTTP {status}: {text}")
    return _cut(" ".join(error.problem.removeprefix("the model gave ").split()))


def _cut(text: str, limit: int = 120) -> str:
    """``text`` in at most ``limit`` characters, cut at a word with an ellipsis when longer."""
    from personae.tools.page_text import cut_at_word

    return text if len(text) <= limit else cut_at_word(text, limit - 1) + "…"


# --- the other services ------------------------------------------------------------------------


async def check_checkpointer(settings: Settings) -> Check:
    """``PERSONAE_CHECKPOINTER``: its form, and a Postgres server answering a query.

    Every checkpointing command (``profile``, ``chat``, ``bookmarks act``, ``arcane build-arcs``) opens it first;
    an unreachable database would fail each of them with exit 3.
    """
    from personae.checkpointers import describe_checkpointer

    return Check("checkpointer", "ok", await describe_checkpointer(settings))


async def check_embedding(settings: Settings) -> Check:
    """The configured embedding loads and embeds one text."""
    import asyncio

    from personae.memory.embeddings import open_embedding

    embedding = open_embedding(settings.embedding, settings)
    vector = await asyncio.to_thread(embedding.embed_one, "Kenshiro walks the wasteland.")
    detail = f"{settings.embedding}: {len(vector)} dimensions"
    return Check("embedding", "ok", detail)


async def check_tavily(settings: Settings) -> Check:
    """One basic search (one credit) proves the key: Tavily has no free authenticated call."""
    from personae.tools.web_search import TavilySearch

    if not settings.tavily_api_key:
        detail = "TAVILY_API_KEY is not set: profile searches wikis only"
        return Check("Tavily", "warn", detail, remote=False)
    http = _http(settings, settings.tavily_base_url)
    async with http:
        search = TavilySearch.from_settings(
            settings, http=http, fetch_missing_content=False, max_content_chars=200
        )
        await search.search("Kenshiro Fist of the North Star", max_results=1)
    return Check("Tavily", "ok", f"{settings.tavily_base_url} accepts the key (1 credit spent)")


async def check_wiki(settings: Settings, url: str) -> Check:
    """The wiki URL is a reachable MediaWiki."""
    from personae.errors import InputError
    from personae.tools.wiki import probe_mediawiki
    from personae.tools.wiki_discovery import wiki_root

    async with _http(settings, url) as http:
        site = await probe_mediawiki(http, wiki_root(url))
    if site is None:
        raise InputError(f"{url} is not a MediaWiki site", "pass the wiki's root URL as --wiki")
    return Check("wiki", "ok", f"{url}: {site.sitename or 'MediaWiki'} (API {site.api_url})")


def _http(settings: Settings, url: str) -> Any:
    from urllib.parse import urlsplit

    from personae.settings import user_agent
    from personae.tools.http import PoliteHttpClient

    host = urlsplit(url).netloc
    return PoliteHttpClient(
        user_agent=user_agent(settings),
        cache_dir=None,
        allowed_hosts=[host] if host else [],
        max_retries=0,
        timeout=LIST_TIMEOUT,
    )


def check_folder(label: str, path: Path) -> Check:
    """``path`` is a folder Personae can write to (created later if it does not exist yet)."""
    from personae.errors import InputError
    from personae.files import check_writable_dir

    try:
        check_writable_dir(path, label)
    except InputError as error:
        return Check(f"folder {label}", "fail", str(error), remote=False)
    state = "writable" if path.is_dir() else "can be created"
    return Check(f"folder {label}", "ok", f"{path} {state}", remote=False)
