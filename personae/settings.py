"""Settings read once from the environment at the edge (CLI, server), never inside nodes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from personae.errors import ConfigurationError
from personae.llm_endpoint import parse_context_window, parse_structured_output

DEFAULT_MODEL = "openai:gpt-4.1"
DEFAULT_FAST_MODEL = "openai:gpt-4.1-mini"
DEFAULT_JUDGE_MODEL = "openai:gpt-4.1"
"""The judge of the BOOKMARKS paper ("We use gpt-4.1 as the judge")."""
DEFAULT_TAVILY_BASE_URL = "https://api.tavily.com"
DEFAULT_CONTACT = "https://github.com/personae-ai/personae"
DEFAULT_EMBEDDINGS = "hashing"
LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
"""The one local embedding model shipped today (sentence-transformers' all-MiniLM-L6-v2)."""
EMBEDDINGS_HINT = (
    "set PERSONAE_EMBEDDINGS to hashing, local (all-MiniLM-L6-v2 on numpy) or "
    "openai:<model> (the /embeddings endpoint of OPENAI_BASE_URL)"
)
DEFAULT_FANDOM_TEMPLATE = "https://{slug}.fandom.com"


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything Personae reads from the environment; CLI flags override single fields."""

    openai_api_key: str | None
    """Key for the OpenAI-compatible server (``OPENAI_API_KEY``)."""
    openai_base_url: str | None
    """Base URL of any OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp."""
    model: str
    """Strong model for writing, as ``provider:model`` (``PERSONAE_MODEL``)."""
    fast_model: str
    """Cheap model for routine calls, as ``provider:model`` (``PERSONAE_FAST_MODEL``)."""
    model_configured: bool
    """True when the user set a model or an API key/base URL, i.e. an LLM can be reached."""
    tavily_api_key: str | None
    """Tavily key (``TAVILY_API_KEY``); without it the profiler uses wikis only."""
    tavily_base_url: str
    """Tavily API base URL (``TAVILY_BASE_URL``)."""
    cache_dir: Path
    """On-disk HTTP and judge cache (``PERSONAE_CACHE_DIR``)."""
    contact: str
    """Contact put in the User-Agent of every web request (``PERSONAE_CONTACT``)."""
    chroma_host: str | None
    """Chroma server host (``CHROMA_HOST``); unset means embedded Chroma on disk."""
    chroma_port: int
    """Chroma server port (``CHROMA_PORT``)."""
    embeddings: str = DEFAULT_EMBEDDINGS
    """Text embedding of the Chroma stores (``PERSONAE_EMBEDDINGS``): ``hashing``,
    ``openai:<model>`` or ``local`` (see :mod:`personae.memory.embeddings`)."""
    fandom_template: str = DEFAULT_FANDOM_TEMPLATE
    """Where a Fandom wiki with subdomain ``{slug}`` lives (``PERSONAE_FANDOM_TEMPLATE``)."""
    cache_ttl: float | None = None
    """Seconds after which a cached page is fetched again (``PERSONAE_CACHE_TTL``); ``None``:
    cached pages never expire."""
    structured_output: str = "auto"
    """How structured answers are asked for (``PERSONAE_STRUCTURED_OUTPUT``): ``auto`` (probe
    the endpoint), ``json_schema``, ``function_calling`` or ``json_mode``."""
    context_window: int | None = None
    """The LLM server's context window in tokens (``PERSONAE_CONTEXT_WINDOW``); ``None``: read
    from the server where it states it. Longer prompts are cut to fit."""

    def with_overrides(self, **changes: object) -> Settings:
        """Return a copy with the non-None ``changes`` applied (CLI flags)."""
        kept = {key: value for key, value in changes.items() if value is not None}
        return replace(self, **kept)  # type: ignore[arg-type]


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


def model_specs(
    model: str | None, fast_model: str | None, env: Mapping[str, str]
) -> tuple[str, str]:
    """The strong and fast model specs: the one rule of the CLI, the server and the tools.

    ``model`` and ``fast_model`` are what the run named (flags, a run's context, a tool
    factory's arguments), empty when it named nothing. Strong: ``model``, ``PERSONAE_MODEL``,
    ``openai:gpt-4.1``. Fast: ``fast_model``, ``PERSONAE_FAST_MODEL``, ``model``,
    ``PERSONAE_MODEL``, ``openai:gpt-4.1-mini``: a model named alone also serves as the fast
    model, as ``PERSONAE_MODEL`` alone does.
    """
    env_model = env.get("PERSONAE_MODEL", "").strip()
    env_fast = env.get("PERSONAE_FAST_MODEL", "").strip()
    strong = model or env_model or DEFAULT_MODEL
    fast = fast_model or env_fast or model or env_model or DEFAULT_FAST_MODEL
    return strong, fast


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read settings from ``env`` (default ``os.environ``); empty strings count as unset."""
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
        model_configured=bool(model or api_key or base_url),
        tavily_api_key=get("TAVILY_API_KEY"),
        tavily_base_url=get("TAVILY_BASE_URL") or DEFAULT_TAVILY_BASE_URL,
        cache_dir=Path(get("PERSONAE_CACHE_DIR") or _cache_home(source)),
        contact=get("PERSONAE_CONTACT") or DEFAULT_CONTACT,
        chroma_host=chroma_host,
        chroma_port=int(port) if valid_port else 8000,
        embeddings=check_embeddings_spec(get("PERSONAE_EMBEDDINGS") or DEFAULT_EMBEDDINGS),
        fandom_template=get("PERSONAE_FANDOM_TEMPLATE") or DEFAULT_FANDOM_TEMPLATE,
        cache_ttl=parse_duration(get("PERSONAE_CACHE_TTL"), "PERSONAE_CACHE_TTL"),
        structured_output=parse_structured_output(get("PERSONAE_STRUCTURED_OUTPUT") or ""),
        context_window=parse_context_window(get("PERSONAE_CONTEXT_WINDOW") or ""),
    )


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
    if kind == "registered" and name:
        return value
    raise ConfigurationError(f"unknown embeddings {spec!r}", EMBEDDINGS_HINT)


def user_agent(settings: Settings | str) -> str:
    """The honest User-Agent sent with every web request (``settings`` or a contact)."""
    from personae import __version__

    contact = settings if isinstance(settings, str) else settings.contact
    return f"Personae/{__version__} (+{contact}; character-profiling research bot)"
