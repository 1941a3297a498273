"""The run settings every graph's context shares, filled from the environment at construction.

A run's context is built at the edge: by the CLI from its flags, by the LangGraph server from a
run's ``context`` dict (``langgraph dev``, Studio), by a tool factory. Whatever the run leaves
empty is read from the environment there, once, by the same rule for all three
(:func:`~personae.settings.model_specs`); nodes read only ``runtime.context``.
"""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Literal, TypeVar

from langchain_core.language_models import BaseChatModel

from personae.llm import (
    DEFAULT_RETRY_SECONDS,
    RETRY_SECONDS_VARIABLE,
    SAMPLING_VARIABLES,
    ModelRole,
    parse_retry_seconds,
    parse_sampling,
    resolve_chat_model,
    with_call_journal,
    with_retry_budget,
    with_sampling,
)
from personae.llm_endpoint import (
    CONTEXT_WINDOW_VARIABLE,
    STRUCTURED_OUTPUT_VARIABLE,
    parse_context_window,
    parse_structured_output,
)
from personae.settings import model_specs

C = TypeVar("C", bound=type)


def env_names_fast_model() -> bool:
    """True when ``PERSONAE_FAST_MODEL`` names a fast model (it beats a run's strong model)."""
    return bool(os.environ.get("PERSONAE_FAST_MODEL", "").strip())


def described(cls: C) -> C:
    """Copy each field's docstring into its metadata, where JSON schema (Studio) finds it.

    Pydantic reads attribute docstrings of the class it is given only, so fields a context
    inherits would show without a description; a ``description`` in the field's metadata
    travels with the field. Apply above ``@dataclass``.
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # no source (an interactive session): schema without them
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
    return cls


@described
@dataclass(frozen=True, kw_only=True)
class LLMContext:
    """Which models a run uses and on which server; empty fields come from the environment."""

    model: str = ""
    """Strong model as provider:model (writing, acting). Empty: PERSONAE_MODEL, else
    openai:gpt-4.1."""
    fast_model: str = ""
    """Cheap model for routine calls. Empty: PERSONAE_FAST_MODEL, else the model above when
    the run names one, else PERSONAE_MODEL, else openai:gpt-4.1-mini."""
    openai_base_url: str = ""
    """OpenAI-compatible server (vLLM, Ollama, llama.cpp). Empty: OPENAI_BASE_URL, else
    OpenAI. The key is read from OPENAI_API_KEY, never from a run's context."""
    temperature: str = ""
    """Sampling temperature, one number for every role (0.7) or per role (strong=0.85,fast=0).
    Empty: PERSONAE_TEMPERATURE, else the server's default."""
    top_p: str = ""
    """Nucleus sampling top-p, in the same forms as temperature. Empty: PERSONAE_TOP_P, else
    the server's default."""
    llm_retry_seconds: float | None = None
    """Total seconds LLM calls may spend waiting out rate limits (429), server errors (5xx)
    and connection failures before the run gives up, saying so. Empty:
    PERSONAE_LLM_RETRY_SECONDS, else 120. 0 disables retries."""
    call_journal: str = ""
    """Folder journaling this step's finished LLM answers, so a rerun of an interrupted step
    reuses them (set by the step runner, personae.graphs.bookmarks.step_checkpoints; empty: none)."""

    def __post_init__(self) -> None:
        """Fill what the run left empty from the environment (this is the edge)."""
        env = os.environ
        strong, fast = model_specs(self.model, self.fast_model, env)
        object.__setattr__(self, "model", strong)
        object.__setattr__(self, "fast_model", fast)
        base_url = self.openai_base_url or env.get("OPENAI_BASE_URL", "").strip()
        object.__setattr__(self, "openai_base_url", base_url)
        for setting, variable in SAMPLING_VARIABLES.items():
            text = getattr(self, setting) or env.get(variable, "").strip()
            parse_sampling(text, setting)  # a bad value fails here, naming the setting
            object.__setattr__(self, setting, text)
        if self.llm_retry_seconds is None:
            budget = parse_retry_seconds(env.get(RETRY_SECONDS_VARIABLE, ""))
        else:
            budget = parse_retry_seconds(str(self.llm_retry_seconds))
        object.__setattr__(self, "llm_retry_seconds", budget)
        # Not a field: a secret must not travel in run contexts, schemas or checkpoints.
        object.__setattr__(self, "_openai_api_key", env.get("OPENAI_API_KEY", "").strip())
        # Facts about the server (personae.llm_endpoint), not choices a run makes.
        endpoint = {
            "structured_output": parse_structured_output(env.get(STRUCTURED_OUTPUT_VARIABLE, "")),
            "context_window": parse_context_window(env.get(CONTEXT_WINDOW_VARIABLE, "")),
        }
        object.__setattr__(self, "_endpoint", endpoint)

    def llm(self, role: Literal["strong", "fast"]) -> BaseChatModel:
        """The chat model of ``role`` on this context's server, with its sampling settings.

        Raises :class:`~personae.errors.ConfigurationError` when no LLM is configured.
        """
        return self.chat_model(self.model if role == "strong" else self.fast_model, role)

    def chat_model(self, spec: str, role: ModelRole) -> BaseChatModel:
        """The chat model of ``spec`` on this context's server, sampled as ``role`` is."""
        key: str = getattr(self, "_openai_api_key", "")
        model = resolve_chat_model(
            spec,
            base_url=self.openai_base_url or None,
            api_key=key or None,
            **getattr(self, "_endpoint", {}),
        )
        sampling = {
            setting: value
            for setting in SAMPLING_VARIABLES
            for role_named, value in parse_sampling(getattr(self, setting), setting).items()
            if role_named == role
        }
        budget = DEFAULT_RETRY_SECONDS if self.llm_retry_seconds is None else self.llm_retry_seconds
        model = with_retry_budget(with_sampling(model, sampling), budget)
        return with_call_journal(model, self.call_journal)
