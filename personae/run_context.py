"""The run settings every graph's context shares: the one place that applies the settings rule.

A run's context is built at the edge: by the CLI from its flags, by the LangGraph server from a
run's ``context`` dict (``langgraph dev``, Studio), by a tool factory. Whatever the run leaves
empty is filled from :class:`~personae.settings.Settings` (the environment, read once, when the
context is built) by one rule: the run's value, else the variable, else the graph's default.
Chat models (and, in :mod:`personae.graphs.store_context`, the embedding) are resolved here
from the filled fields; commands that need a model ask the context, and nodes read only
``runtime.context``.

Each graph's context is one flat class declaring its fields, grouped by comment: the run's
choices (about 15 at most), the fields that follow from another one when left empty
(:data:`DERIVED_FIELDS`) and the plumbing (:data:`PLUMBING_FIELDS`); model fields are
:data:`ModelSpec`, which shows Studio's model picker.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar, get_type_hints

from langchain_core.language_models import BaseChatModel

from personae.errors import ConfigurationError
from personae.llm import (
    DEFAULT_RETRY_SECONDS,
    SAMPLING_VARIABLES,
    ModelRole,
    parse_retry_seconds,
    parse_sampling,
    resolve_chat_model,
    with_call_journal,
    with_retry_budget,
    with_sampling,
)
from personae.settings import Settings, load_settings
from personae.urls import split_web_url

C = TypeVar("C", bound=type)
MODEL_PICKER: Mapping[str, Any] = {"__template_metadata__": {"kind": "llm"}}
"""What LangGraph Studio reads to show its model picker on a field (the LangGraph templates')."""
ModelSpec = Annotated[str, MODEL_PICKER]
"""A ``provider:model`` field: Studio shows its model picker (the JSON schema carries it)."""
PLUMBING_FIELDS: frozenset[str] = frozenset(
    {
        "openai_base_url",
        "llm_retry_seconds",
        "call_journal",
        "chroma_host",
        "chroma_port",
        "embedding",
        "memory_dir",
        "data_dir",
        "cache_dir",
        "cache_ttl",
        "tavily_base_url",
        "fandom_template",
        "contact",
        "search_concurrency",
        "concurrency",
        "gs_wave",
    }
)
"""Where a run's parts are (servers, stores, folders, caches, retries, how many calls at once),
not what the method does:
mostly filled from the environment and the same for every run of a deployment. Every other
field is the run's choice; a context keeps those to about 15."""
DERIVED_FIELDS: frozenset[str] = frozenset(
    {
        "check_citations",
        "canon_rule",
        "search_sampling",
        "rewrite_sampling",
        "search_model",
        "rewrite_model",
        "max_llm_calls",
        "max_tokens",
        "max_search_credits",
        "gs_model",
        "ae_model",
        "expert_model",
        "critic_model",
        "validator_model",
    }
)
"""Fields whose empty value follows from another field of the run (``method`` fixes the paper's
bundle, ``max_rounds`` the budgets, ``model`` the other roles' models): a run sets them only to
depart from that."""
L = TypeVar("L", bound="LLMContext")
_INHERITED: ContextVar[Settings | None] = ContextVar("personae_inherited_settings", default=None)
"""Settings a context made from another context is filled from (instead of the environment)."""


def described(cls: C) -> C:
    """Copy each field's docstring into its metadata, where JSON schema (Studio) finds it.

    Pydantic reads attribute docstrings of the class it is given only, so fields a context
    inherits would show without a description; a ``description`` in the field's metadata
    travels with the field. Apply above ``@dataclass``.
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # no source (an interactive session): schema without them
        _mark_model_fields(cls)
        return cls
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for statement, following in zip(body, body[1:], strict=False):
        is_doc = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            if is_doc and isinstance(following.value.value, str):  # type: ignore[attr-defined]
                docs[statement.target.id] = " ".join(following.value.value.split())  # type: ignore[attr-defined]
    for item in fields(cls):
        if item.name in docs and "description" not in item.metadata:
            item.metadata = MappingProxyType({**item.metadata, "description": docs[item.name]})
    _mark_model_fields(cls)
    return cls


def _mark_model_fields(cls: type) -> None:
    """Put Studio's model picker into the JSON schema of every :data:`ModelSpec` field.

    Pydantic drops a plain dict of ``Annotated`` metadata from the schema it writes, and Studio
    reads the schema (``graph.get_context_jsonschema()``); a field's ``json_schema_extra``
    travels into it.
    """
    try:
        hints = get_type_hints(cls, include_extras=True)
    except (NameError, TypeError):  # an unresolvable annotation: no picker, schema still valid
        return
    for item in fields(cls):
        if MODEL_PICKER in getattr(hints.get(item.name), "__metadata__", ()):
            extra = {**item.metadata.get("json_schema_extra", {}), **MODEL_PICKER}
            item.metadata = MappingProxyType({**item.metadata, "json_schema_extra": extra})


RENAMED_FIELDS: Mapping[str, str] = {"embeddings": "embedding"}
"""Context keys that were renamed: passing the old one is an error naming the new one."""
RETIRED_FIELDS: Mapping[str, str] = {
    "paper_queries": "the paper's 8 searches a round (ProfilerContext.paper_queries)",
    "coverage_target": "ours, 0.7 (ProfilerContext.coverage_target)",
    "queries_per_dimension": "ours, 1 (ProfilerContext.queries_per_dimension)",
    "profile_every": "the released runner's 16 (BookmarksContext.profile_every)",
    "profile_chunk": "the released runner's 64 (BookmarksContext.profile_chunk)",
    "state_chunk": "the released runner's sizes (BookmarksContext.sync_settings())",
    "behavior_batch": "the released runner's sizes (BookmarksContext.sync_settings())",
    "local_scene": "the released runner's sizes (BookmarksContext.sync_settings())",
    "concept_radius": "the released runner's sizes (BookmarksContext.sync_settings())",
    "concept_top_windows": "the released runner's sizes (BookmarksContext.sync_settings())",
}
"""Context keys a run no longer sets, each with the value the graph now derives: passing one
is an error saying so (instead of an unexplained ``unexpected keyword argument``)."""


def refuse_old_keys(context_type: type, given: Mapping[str, Any]) -> None:
    """Refuse a renamed key (naming the new one) or a retired one (naming what replaced it)."""
    for old, new in RENAMED_FIELDS.items():
        if old in given:
            raise ConfigurationError(
                f"the context field {old!r} is now {new!r}", f"pass {new!r} instead (same values)"
            )
    known = {item.name for item in fields(context_type)}
    for name, value in RETIRED_FIELDS.items():
        if name in given and name not in known:
            raise ConfigurationError(
                f"the context field {name!r} is no longer set by a run",
                f"drop it: the graph uses {value}",
            )


def check_context_keys(context_type: type, given: Mapping[str, Any]) -> None:
    """Refuse a run context holding a key ``context_type`` lacks: renamed, retired or unknown.

    In process, ``Context(**given)`` refuses them; the LangGraph server drops the keys its
    context schema lacks before the graph sees them, so a server run checks its raw context
    with this first (:mod:`personae.graphs.served`), failing as the in-process run does.
    """
    refuse_old_keys(context_type, given)
    known = [item.name for item in fields(context_type)]
    for key in given:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            fix = f"did you mean {close[0]!r}?" if close else "drop it"
            raise ConfigurationError(
                f"{context_type.__name__} has no context field {key!r}",
                f"{fix} (the graph's context schema lists its {len(known)} fields)",
            )


@described
@dataclass(frozen=True, kw_only=True)
class LLMContext:
    """Which models a run uses and on which server; empty fields come from the settings."""

    default_sampling: ClassVar[Mapping[str, str]] = {}
    """Sampling a graph uses when neither the run nor the environment sets it (by setting, in
    the form of the ``temperature`` field), e.g. the BOOKMARKS runs' temperature 0."""
    default_judge: ClassVar[str] = ""
    """The judge of an evaluation when neither the run nor ``PERSONAE_JUDGE_MODEL`` names one
    (empty: the strong model)."""

    # -- models and sampling (the run's choice)
    model: ModelSpec = ""
    """Strong model as provider:model (writing, acting). Empty: PERSONAE_MODEL, else
    openai:gpt-4.1."""
    fast_model: ModelSpec = ""
    """Cheap model for routine calls. Empty: PERSONAE_FAST_MODEL, else the model above when
    the run names one, else PERSONAE_MODEL, else openai:gpt-4.1-mini."""
    temperature: str = ""
    """Sampling temperature, one number for every role (0.7) or per role (strong=0.85,fast=0).
    Empty: PERSONAE_TEMPERATURE, else the graph's default (0 for the BOOKMARKS graphs), else
    the server's."""
    top_p: str = ""
    """Nucleus sampling top-p, in the same forms as temperature. Empty: PERSONAE_TOP_P, else
    the server's default."""
    # -- plumbing: the server, retries, the journal
    openai_base_url: str = ""
    """OpenAI-compatible server (vLLM, Ollama, llama.cpp). Empty: OPENAI_BASE_URL, else
    OpenAI. The key is read from OPENAI_API_KEY, never from a run's context."""
    llm_retry_seconds: float | None = None
    """Total seconds LLM calls may spend waiting out rate limits (429), server errors (5xx)
    and connection failures before the run gives up, saying so. Empty:
    PERSONAE_LLM_RETRY_SECONDS, else 120. 0 disables retries."""
    call_journal: str = ""
    """Folder journaling this step's finished LLM answers, so a rerun of an interrupted step
    reuses them (set by the step runner, personae.graphs.bookmarks.step_checkpoints; empty: none)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """Refuse a renamed key with a message naming the new one (Studio users' old contexts).

        The LangGraph server builds a context with ``Context(**run_context)``; without this an
        old key would fail as an unexplained ``unexpected keyword argument``.
        """
        refuse_old_keys(cls, kwargs)
        return super().__new__(cls)

    def __post_init__(self) -> None:
        """Fill what the run left empty from the settings (this is the edge)."""
        settings = _INHERITED.get() or load_settings()
        # Not a field: keys must not travel in run contexts, schemas or checkpoints.
        object.__setattr__(self, "_settings", settings)
        strong, fast = settings.model_specs(self.model, self.fast_model)
        object.__setattr__(self, "model", strong)
        object.__setattr__(self, "fast_model", fast)
        base_url = self.openai_base_url or settings.openai_base_url or ""
        if base_url and split_web_url(base_url) is None:
            where = "openai_base_url" if self.openai_base_url else "OPENAI_BASE_URL"
            raise ConfigurationError(
                f"{where} {base_url.strip()[:200]!r} is not an http(s) URL",
                "name the OpenAI-compatible server, e.g. http://localhost:8000/v1",
            )
        object.__setattr__(self, "openai_base_url", base_url)
        for setting in SAMPLING_VARIABLES:
            text = getattr(self, setting) or getattr(settings, setting)
            default = self.default_sampling.get(setting, "")
            object.__setattr__(self, setting, _sampling_with_default(text, default, setting))
        written = self.llm_retry_seconds
        budget = parse_retry_seconds(
            settings.llm_retry_seconds if written is None else str(written)
        )
        object.__setattr__(self, "llm_retry_seconds", budget)

    def replaced(self, **changes: Any) -> Self:
        """This context with ``changes``, filled from the same settings (no second reading)."""
        with _inheriting(self.settings):
            return dataclasses.replace(self, **changes)

    def derived(self, context_type: type[L], **fields: Any) -> L:
        """Another graph's context (``context_type``) built from the same settings.

        How a graph that runs another graph (the ARCANE evaluation runs the role-play graph)
        hands its settings on inside a node, where the environment is never read.
        """
        with _inheriting(self.settings):
            return context_type(**fields)

    @property
    def settings(self) -> Settings:
        """The settings this context was filled from (keys included; never serialised)."""
        settings: Settings = getattr(self, "_settings")  # noqa: B009 - set in __post_init__
        return settings

    def llm(self, role: Literal["strong", "fast"]) -> BaseChatModel:
        """The chat model of ``role`` on this context's server, with its sampling settings.

        Raises :class:`~personae.errors.ConfigurationError` when no LLM is configured.
        """
        return self.chat_model(self.model if role == "strong" else self.fast_model, role)

    def chat_model(self, spec: str, role: ModelRole) -> BaseChatModel:
        """The chat model of ``spec`` on this context's server, sampled as ``role`` is."""
        settings = self.settings
        model = resolve_chat_model(
            spec,
            base_url=self.openai_base_url or None,
            api_key=settings.openai_api_key,
            structured_output=settings.structured_output,
            context_window=settings.context_window,
        )
        budget = DEFAULT_RETRY_SECONDS if self.llm_retry_seconds is None else self.llm_retry_seconds
        model = with_retry_budget(with_sampling(model, self.sampling(role)), budget)
        return with_call_journal(model, self.call_journal)

    def sampling(self, role: ModelRole) -> dict[str, float]:
        """Temperature / top-p this context sets for ``role`` (absent: the server's default)."""
        return {
            setting: value
            for setting in SAMPLING_VARIABLES
            for named, value in parse_sampling(getattr(self, setting), setting).items()
            if named == role
        }

    def judge_spec(self, judge: str = "") -> str:
        """The judge: ``judge`` (the run's), ``PERSONAE_JUDGE_MODEL``, the graph's, the strong."""
        return self.settings.judge_spec(judge, self.default_judge, self.model)

    def cache_name(self, spec: str) -> str:
        """The name answers of ``spec`` are cached and recorded under: plus the server.

        The same model name on another OpenAI-compatible server is another model.
        """
        if spec.startswith("openai:") and self.openai_base_url:
            return f"{spec}@{self.openai_base_url}"
        return spec

    def describe(self, spec: str, role: ModelRole) -> dict[str, Any]:
        """What a report records about a model: its cache name and ``role``'s sampling."""
        return {"model": self.cache_name(spec), **self.sampling(role)}


def context_of(given: object, context_type: type[L]) -> L:
    """The run context a graph's nodes use when the graph may run as another graph's subgraph.

    LangGraph hands a subgraph its parent's context: a ``context_type`` when the parent passed
    one, else the parent's own context (another type, a dict, or ``None``). A node reading
    ``runtime.context.method`` then fails with ``AttributeError``. Here the defaults come from
    the settings, as for the CLI; a parent's :class:`LLMContext` hands on its models, server
    and sampling (and its settings, read once); a dict keeps the keys ``context_type`` knows.
    """
    if isinstance(given, context_type):
        return given
    known = {item.name for item in fields(context_type)}
    if isinstance(given, Mapping):
        return context_type(**{k: v for k, v in given.items() if k in known})
    if isinstance(given, LLMContext):
        shared = {item.name: getattr(given, item.name) for item in fields(LLMContext)}
        return given.derived(context_type, **{k: v for k, v in shared.items() if k in known})
    return context_type()


@contextmanager
def _inheriting(settings: Settings) -> Iterator[None]:
    token = _INHERITED.set(settings)
    try:
        yield
    finally:
        _INHERITED.reset(token)


def _sampling_with_default(text: str, default: str, setting: str) -> str:
    """``text`` checked; with a graph ``default``, both merged per role (``text`` wins)."""
    chosen = parse_sampling(text, setting)  # a bad value fails here, naming the setting
    if not default:
        return text
    merged = {**parse_sampling(default, setting), **chosen}
    return ",".join(f"{role}={value}" for role, value in merged.items())
