"""Every environment variable Personae reads, read here and nowhere else.

The environment is read at the edge: when a command starts, when the LangGraph server or a tool
factory builds a run's context (:mod:`personae.run_context`). :func:`load_settings` is the one
function that looks at ``os.environ``; :data:`VARIABLES` names every variable it reads and the
:class:`Settings` field that holds it (a test scans the package for any other reader and checks
``.env.example`` lists them all). Values are kept as the user wrote them where checking them
belongs to their one user (sampling, the retry budget: checked when a run context is built), so
a stray variable never breaks a command that does not use it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from personae.credentials import masked_setting
from personae.errors import ConfigurationError
from personae.llm_endpoint import parse_context_window, parse_structured_output

DEFAULT_MODEL = "openai:gpt-4.1"
DEFAULT_FAST_MODEL = "openai:gpt-4.1-mini"
DEFAULT_JUDGE_MODEL = "openai:gpt-4.1"
"""The judge of the BOOKMARKS paper ("We use gpt-4.1 as the judge")."""
DEFAULT_TAVILY_BASE_URL = "https://api.tavily.com"
DEFAULT_CONTACT = "https://github.com/personae-ai/personae"
DEFAULT_EMBEDDINGS = "hashing"
DEFAULT_DATA_DIR = "data"
"""Where ARCANE keeps its novels unless ``PERSONAE_DATA_DIR`` or ``--data`` says otherwise."""
LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
"""The one local embedding model shipped today (sentence-transformers' all-MiniLM-L6-v2)."""
EMBEDDINGS_HINT = (
    "set PERSONAE_EMBEDDINGS to hashing, local (all-MiniLM-L6-v2 on numpy) or "
    "openai:<model> (the /embeddings endpoint of OPENAI_BASE_URL)"
)
DEFAULT_FANDOM_TEMPLATE = "https://{slug}.fandom.com"
DEFAULT_CHECKPOINTER = "sqlite"
CHECKPOINTER_HINT = (
    "set PERSONAE_CHECKPOINTER to sqlite (the default) or a Postgres URL "
    "(postgresql://user:password@host:5432/db)"
)

VARIABLES: Mapping[str, str] = {
    "OPENAI_API_KEY": "openai_api_key",
    "OPENAI_BASE_URL": "openai_base_url",
    "PERSONAE_MODEL": "model",
    "PERSONAE_FAST_MODEL": "fast_model",
    "PERSONAE_JUDGE_MODEL": "judge_model",
    "PERSONAE_TEMPERATURE": "temperature",
    "PERSONAE_TOP_P": "top_p",
    "PERSONAE_LLM_RETRY_SECONDS": "llm_retry_seconds",
    "TAVILY_API_KEY": "tavily_api_key",
    "TAVILY_BASE_URL": "tavily_base_url",
    "PERSONAE_CACHE_DIR": "cache_dir",
    "PERSONAE_CACHE_TTL": "cache_ttl",
    "PERSONAE_CONTACT": "contact",
    "PERSONAE_FANDOM_TEMPLATE": "fandom_template",
    "PERSONAE_DATA_DIR": "data_dir",
    "CHROMA_HOST": "chroma_host",
    "CHROMA_PORT": "chroma_port",
    "PERSONAE_EMBEDDINGS": "embedding",
    "PERSONAE_STRUCTURED_OUTPUT": "structured_output",
    "PERSONAE_CONTEXT_WINDOW": "context_window",
    "HF_ENDPOINT": "hf_endpoint",
    "HF_TOKEN": "hf_token",
    "PERSONAE_CHECKPOINTER": "checkpointer",
    "PERSONAE_WEB_TOKEN": "web_token",
}
"""Every variable Personae reads → the :class:`Settings` field holding it."""
SYSTEM_VARIABLES: Mapping[str, str] = {"XDG_CACHE_HOME": "cache_dir", "HOME": "cache_dir"}
"""The system's own variables consulted for ``cache_dir``'s default (``HOME`` through
``Path.home()``); not ours to list in ``.env.example``."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything Personae reads from the environment (:data:`VARIABLES`), read once.

    The model fields hold the environment's side of the model rule; a run's own values (flags,
    a run's context) are applied by :meth:`model_specs` and :meth:`judge_spec`, in a run
    context (:class:`~personae.run_context.LLMContext`), the one place that does.
    """

    openai_api_key: str | None = None
    """Key for the OpenAI-compatible server (``OPENAI_API_KEY``)."""
    openai_base_url: str | None = None
    """Base URL of any OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp."""
    model: str = DEFAULT_MODEL
    """Strong model for writing, as ``provider:model`` (``PERSONAE_MODEL``)."""
    fast_model: str = DEFAULT_FAST_MODEL
    """Cheap model for routine calls (``PERSONAE_FAST_MODEL``, else ``PERSONAE_MODEL``)."""
    fast_model_set: bool = False
    """``PERSONAE_FAST_MODEL`` is set: it then beats a run's strong model for the fast role."""
    judge_model: str = ""
    """Judge of the evaluations (``PERSONAE_JUDGE_MODEL``); empty: each evaluation's default."""
    model_configured: bool = False
    """True when the user set a model or an API key/base URL, i.e. an LLM can be reached."""
    temperature: str = ""
    """Sampling temperature as written (``PERSONAE_TEMPERATURE``: ``0.7`` or
    ``judge=0,strong=0.85``); checked when a run context is built."""
    top_p: str = ""
    """Nucleus sampling top-p as written (``PERSONAE_TOP_P``), in the same forms."""
    llm_retry_seconds: str = ""
    """LLM retry budget in seconds as written (``PERSONAE_LLM_RETRY_SECONDS``; empty: 120)."""
    tavily_api_key: str | None = None
    """Tavily key (``TAVILY_API_KEY``); without it the profiler uses wikis only."""
    tavily_base_url: str = DEFAULT_TAVILY_BASE_URL
    """Tavily API base URL (``TAVILY_BASE_URL``)."""
    cache_dir: Path
    """On-disk HTTP, judge and LLM answer cache (``PERSONAE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/personae``, else ``~/.cache/personae``)."""
    cache_ttl: float | None = None
    """Seconds after which a cached page is fetched again (``PERSONAE_CACHE_TTL``); ``None``:
    cached pages never expire."""
    contact: str = DEFAULT_CONTACT
    """Contact put in the User-Agent of every web request (``PERSONAE_CONTACT``)."""
    fandom_template: str = DEFAULT_FANDOM_TEMPLATE
    """Where a Fandom wiki with subdomain ``{slug}`` lives (``PERSONAE_FANDOM_TEMPLATE``)."""
    data_dir: Path = Path(DEFAULT_DATA_DIR)
    """The folder holding ARCANE's ``novels/`` (``PERSONAE_DATA_DIR``)."""
    chroma_host: str | None = None
    """Chroma server host (``CHROMA_HOST``); unset means embedded Chroma on disk."""
    chroma_port: int = 8000
    """Chroma server port (``CHROMA_PORT``)."""
    embedding: str = DEFAULT_EMBEDDINGS
    """Text embedding of the Chroma stores (``PERSONAE_EMBEDDINGS``): ``hashing``,
    ``openai:<model>`` or ``local`` (see :mod:`personae.memory.embeddings`)."""
    hf_endpoint: str | None = None
    """Hugging Face Hub mirror for ``personae bookmarks fetch`` (``HF_ENDPOINT``)."""
    hf_token: str | None = None
    """Hugging Face Hub token (``HF_TOKEN``); sent only to the Hub."""
    structured_output: str = "auto"
    """How structured answers are asked for (``PERSONAE_STRUCTURED_OUTPUT``): ``auto`` (probe
    the endpoint), ``json_schema``, ``function_calling`` or ``json_mode``."""
    context_window: int | None = None
    """The LLM server's context window in tokens (``PERSONAE_CONTEXT_WINDOW``); ``None``: read
    from the server where it states it. Longer prompts are cut to fit."""
    checkpointer: str = DEFAULT_CHECKPOINTER
    """Where commands keep their LangGraph checkpoints (``PERSONAE_CHECKPOINTER``): ``sqlite``
    (a file beside each command's output) or a ``postgresql://`` URL, as written; checked by
    :func:`check_checkpointer_spec` when a command opens its checkpointer
    (:mod:`personae.checkpointers`)."""
    web_token: str | None = None
    """Token ``personae web`` asks of every request (``PERSONAE_WEB_TOKEN``); required when it
    listens beyond loopback (``--host``), optional on 127.0.0.1."""

    def with_overrides(self, **changes: object) -> Settings:
        """Return a copy with the non-None ``changes`` applied (CLI flags)."""
        kept = {key: value for key, value in changes.items() if value is not None}
        return replace(self, **kept)  # type: ignore[arg-type]

    def model_specs(self, model: str = "", fast_model: str = "") -> tuple[str, str]:
        """The strong and fast model specs: the one rule of the CLI, the server and the tools.

        ``model`` and ``fast_model`` are what the run named (flags, a run's context, a tool
        factory's arguments), empty when it named nothing. Strong: ``model``, ``PERSONAE_MODEL``,
        ``openai:gpt-4.1``. Fast: ``fast_model``, ``PERSONAE_FAST_MODEL``, ``model``,
        ``PERSONAE_MODEL``, ``openai:gpt-4.1-mini``: a model named alone also serves as the fast
        model, as ``PERSONAE_MODEL`` alone does.
        """
        strong = model or self.model
        if fast_model or self.fast_model_set:
            return strong, fast_model or self.fast_model
        return strong, model or self.fast_model

    def judge_spec(self, judge: str, default: str, strong: str) -> str:
        """The judge: ``judge`` (the run's), ``PERSONAE_JUDGE_MODEL``, ``default``, ``strong``.

        ``default`` is an evaluation's own judge (the BOOKMARKS benchmark's ``openai:gpt-4.1``,
        never silently the acting model, which would grade its own predictions).
        """
        return judge or self.judge_model or default or strong


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str | None, name: str) -> float | None:
    """Seconds in ``text`` (``3600``, ``90s``, ``30m``, ``12h``, ``7d``); empty gives ``None``.

    Raises:
        ConfigurationError: ``text`` is not a non-negative duration (``name`` says which setting).
    """
    value = (text or "").strip().lower()
    if not value:
        return None
    number, unit = (value[:-1], value[-1]) if value[-1] in _DURATION_UNITS else (value, "s")
    try:
        seconds = float(number) * _DURATION_UNITS[unit]
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ConfigurationError(
            f"{name}={text!r} is not a duration", f"set {name} to seconds or 30m, 12h, 7d"
        )
    return seconds


def _cache_home(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "personae"


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read settings from ``env`` (default ``os.environ``); empty strings count as unset.

    The only reader of the environment in Personae (a test checks).
    """
    source = os.environ if env is None else env

    def get(name: str) -> str | None:
        value = source.get(name, "").strip()
        return value or None

    model = get("PERSONAE_MODEL")
    fast_model = get("PERSONAE_FAST_MODEL")
    api_key = get("OPENAI_API_KEY")
    base_url = get("OPENAI_BASE_URL")
    port = get("CHROMA_PORT") or "8000"
    chroma_host = get("CHROMA_HOST")
    # Checked only when a server is configured: a stray CHROMA_PORT must not break commands
    # that never talk to Chroma.
    valid_port = port.isdecimal() and 0 < int(port) < 65536  # isdigit() admits "²"
    if chroma_host and not valid_port:
        raise ConfigurationError(
            f"CHROMA_PORT={port!r} is not a port number", "set CHROMA_PORT to 1-65535 or unset it"
        )
    return Settings(
        openai_api_key=api_key,
        openai_base_url=base_url,
        model=model or DEFAULT_MODEL,
        fast_model=fast_model or model or DEFAULT_FAST_MODEL,
        fast_model_set=fast_model is not None,
        judge_model=get("PERSONAE_JUDGE_MODEL") or "",
        model_configured=bool(model or api_key or base_url),
        temperature=get("PERSONAE_TEMPERATURE") or "",
        top_p=get("PERSONAE_TOP_P") or "",
        llm_retry_seconds=get("PERSONAE_LLM_RETRY_SECONDS") or "",
        tavily_api_key=get("TAVILY_API_KEY"),
        tavily_base_url=get("TAVILY_BASE_URL") or DEFAULT_TAVILY_BASE_URL,
        cache_dir=Path(get("PERSONAE_CACHE_DIR") or _cache_home(source)),
        cache_ttl=parse_duration(get("PERSONAE_CACHE_TTL"), "PERSONAE_CACHE_TTL"),
        contact=get("PERSONAE_CONTACT") or DEFAULT_CONTACT,
        fandom_template=get("PERSONAE_FANDOM_TEMPLATE") or DEFAULT_FANDOM_TEMPLATE,
        data_dir=Path(get("PERSONAE_DATA_DIR") or DEFAULT_DATA_DIR),
        chroma_host=chroma_host,
        chroma_port=int(port) if valid_port else 8000,
        embedding=check_embeddings_spec(get("PERSONAE_EMBEDDINGS") or DEFAULT_EMBEDDINGS),
        hf_endpoint=get("HF_ENDPOINT"),
        hf_token=get("HF_TOKEN"),
        structured_output=parse_structured_output(get("PERSONAE_STRUCTURED_OUTPUT") or ""),
        context_window=parse_context_window(get("PERSONAE_CONTEXT_WINDOW") or ""),
        checkpointer=get("PERSONAE_CHECKPOINTER") or DEFAULT_CHECKPOINTER,
        web_token=get("PERSONAE_WEB_TOKEN"),
    )


def check_checkpointer_spec(spec: str) -> str:
    """A ``PERSONAE_CHECKPOINTER`` value checked for its form (no connection is made here).

    ``sqlite`` or a ``postgres://`` / ``postgresql://`` URL with a host or a socket folder,
    whose ports, ``sslmode`` and escapes libpq would accept: a typo there is a malformed
    setting (exit 2), not a database to start (exit 3). The value is echoed masked
    (:func:`~personae.credentials.masked_setting`): it may hold a password.
    """
    value = spec.strip()
    if value.casefold() == DEFAULT_CHECKPOINTER:
        return DEFAULT_CHECKPOINTER
    scheme, sep, rest = value.partition("://")
    problem = "is not a checkpointer"
    if sep and scheme.casefold() in ("postgres", "postgresql") and rest.strip("/"):
        found = _postgres_url_problem(rest)
        if found is None:
            return value
        problem = f"is not a valid Postgres URL ({found})"
    raise ConfigurationError(
        f"PERSONAE_CHECKPOINTER={masked_setting(value)!r} {problem}", CHECKPOINTER_HINT
    )


SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
"""libpq's ``sslmode`` values."""


def _postgres_url_problem(rest: str) -> str | None:
    """What libpq would refuse in a Postgres URL after its ``://``; never quotes the URL."""
    from urllib.parse import parse_qsl

    before_query, _, query = rest.partition("?")
    authority = before_query.partition("/")[0]
    if any(c.isspace() for c in rest):
        return "it holds a space; write it as %20"
    if re.search(r"%(?![0-9A-Fa-f]{2})", rest):
        return "a '%' is not followed by two hex digits"
    if authority.count("@") > 1:
        return "more than one '@' before the host; write an '@' in the password as %40"
    ports = [_port_of(host) for host in authority.rpartition("@")[2].split(",")]
    params = parse_qsl(query, keep_blank_values=True)
    ports += [port for k, v in params if k == "port" for port in v.split(",")]
    if any(p is None for p in ports):
        return "an IPv6 host lacks its closing ']'"
    if any(p and not (p.isdecimal() and 1 <= int(p) <= 65535) for p in ports):
        return "a port is not a number from 1 to 65535"
    if any(k == "sslmode" and v not in SSL_MODES for k, v in params):
        return f"sslmode is not one of {', '.join(SSL_MODES)}"
    return None


def _port_of(host: str) -> str | None:
    """The port written after ``host`` (``""`` when none), or None for an unclosed ``[``."""
    if host.startswith("["):
        closing = host.find("]")
        return None if closing < 0 else host[closing + 1 :].removeprefix(":")
    return host.partition(":")[2]


def check_embeddings_spec(spec: str) -> str:
    """The canonical form of a ``PERSONAE_EMBEDDINGS`` value; ``ConfigurationError`` if unknown.

    Checks the syntax only (no model is loaded, no server called), so settings and contexts can
    reject a typo at once.
    """
    value = spec.strip()
    kind, sep, name = value.partition(":")
    if value == "hashing":
        return value
    if kind == "hashing" and name.isdecimal() and 8 <= int(name) <= 8192:
        return f"hashing:{int(name)}"
    if kind == "openai" and name.strip():
        return f"openai:{name.strip()}"
    if kind == "local" and (not sep or name == LOCAL_EMBEDDING_MODEL):
        return f"local:{LOCAL_EMBEDDING_MODEL}"
    raise ConfigurationError(f"unknown embeddings {spec!r}", EMBEDDINGS_HINT)


def user_agent(settings: Settings | str) -> str:
    """The honest User-Agent sent with every web request (``settings`` or a contact)."""
    from personae.version import __version__

    contact = settings if isinstance(settings, str) else settings.contact
    return f"Personae/{__version__} (+{contact}; character-profiling research bot)"
