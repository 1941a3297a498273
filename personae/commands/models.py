"""The model flags every command shares, and the one rule that turns them into chat models.

Each role takes the first that is set, flag before environment before default:

- strong: ``--model``, ``PERSONAE_MODEL``, ``openai:gpt-4.1``;
- fast: ``--fast-model``, ``PERSONAE_FAST_MODEL``, ``--model``, ``PERSONAE_MODEL``,
  ``openai:gpt-4.1-mini`` (so ``--model`` alone serves both roles, as ``PERSONAE_MODEL`` does);
- judge: ``--judge-model``, ``PERSONAE_JUDGE_MODEL``, then the command's own default judge
  (``bench``: ``openai:gpt-4.1``, the BOOKMARKS paper's judge, never silently the acting model,
  which would grade its own predictions), else the strong model.

Strong and fast are :func:`~personae.settings.model_specs`, the rule a graph's run context
applies when the LangGraph server or a tool factory builds it: one rule for every way in.
Graph contexts carry the specs, their server and the sampling settings, not model instances.

Commands resolve the roles they use before any fetch or model call, so a bad setting fails at
once with its one-line :class:`~personae.errors.ConfigurationError`. Kept in one place because
four commands each had their own copy, and the copies disagreed.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from personae.errors import ConfigurationError

if TYPE_CHECKING:
    # Imported inside the functions at run time: this module loads for ``personae --help``.
    from langchain_core.language_models import BaseChatModel

    from personae.settings import Settings

Role = Literal["strong", "fast", "judge"]
"""A model role (the same literal as :data:`personae.llm.ModelRole`, kept here to stay light)."""


@dataclass(frozen=True)
class CommandModels:
    """The settings with the model flags applied, and each resolved role's spec and model."""

    settings: Settings
    """Settings after the flags (``model`` and ``fast_model`` hold the strong and fast specs)."""
    specs: Mapping[Role, str]
    """The ``provider:model`` each resolved role uses, as the user named it."""
    chat_models: Mapping[Role, BaseChatModel]
    """The chat model of each resolved role."""
    sampling: Mapping[Role, Mapping[str, float]] = field(default_factory=dict)
    """Temperature / top-p set for each role (absent: the server's default)."""

    def describe(self, role: Role) -> dict[str, Any]:
        """What a report records about ``role``: its model and sampling settings."""
        return {"model": self.cache_name(role), **self.sampling.get(role, {})}

    def cache_name(self, role: Role) -> str:
        """The name answers of ``role`` are cached under: spec, plus server for ``openai:``.

        The same model name on another OpenAI-compatible server is another model.
        """
        spec = self.specs[role]
        if spec.startswith("openai:") and self.settings.openai_base_url:
            return f"{spec}@{self.settings.openai_base_url}"
        return spec

    def sampling_text(self, setting: str) -> str:
        """``setting`` (``temperature``/``top_p``) of every role, as a run context carries it."""
        from personae.llm import sampling_text

        return sampling_text(self.sampling, setting)


def add_model_flags(parser: Any, *, judge: bool = False, fast_help: str = "cheap model") -> None:
    """Add ``--model`` and ``--fast-model`` (and ``--judge-model`` when ``judge``)."""
    parser.add_argument("--model", help="strong model provider:model (PERSONAE_MODEL)")
    parser.add_argument(
        "--fast-model",
        help=f"{fast_help} provider:model (PERSONAE_FAST_MODEL; default --model)",
    )
    if judge:
        parser.add_argument(
            "--judge-model",
            help="judge model provider:model (PERSONAE_JUDGE_MODEL; default the strong model)",
        )
    parser.add_argument(
        "--temperature",
        help="sampling temperature, one number or per role: judge=0,strong=0.85 "
        "(PERSONAE_TEMPERATURE; default the server's)",
    )
    parser.add_argument(
        "--top-p", help="nucleus sampling top-p, same forms as --temperature (PERSONAE_TOP_P)"
    )


def sampling_settings(
    args: argparse.Namespace, roles: tuple[Role, ...], source: Mapping[str, str]
) -> dict[Role, dict[str, float]]:
    """Temperature / top-p per role from the flags, else ``PERSONAE_TEMPERATURE``/``_TOP_P``."""
    from personae.llm import SAMPLING_VARIABLES, parse_sampling

    chosen: dict[Role, dict[str, float]] = {}
    for setting, variable in SAMPLING_VARIABLES.items():
        flag = getattr(args, setting, None)
        text = flag if flag is not None else source.get(variable, "").strip()
        for role, value in parse_sampling(text, setting).items():
            if role in roles:
                chosen.setdefault(role, {})[setting] = value
    return chosen


def resolve_models(
    args: argparse.Namespace,
    roles: tuple[Role, ...],
    *,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
    default_sampling: Mapping[str, float] | None = None,
    default_judge: str | None = None,
) -> CommandModels:
    """Apply the flags of :func:`add_model_flags` to the settings and resolve ``roles``.

    ``base_url`` is a flag overriding ``OPENAI_BASE_URL``; ``env`` defaults to ``os.environ``.
    ``default_sampling`` fills each role's sampling settings the flags and environment leave
    unset (the benchmark's near-deterministic temperature 0); ``default_judge`` is the judge
    when neither flag nor environment names one (else the strong model).
    Raises :class:`ConfigurationError` when no LLM is configured or a spec cannot be resolved.
    """
    from personae.llm import (
        NO_MODEL_HINT,
        RETRY_SECONDS_VARIABLE,
        parse_retry_seconds,
        resolve_chat_model,
        with_retry_budget,
        with_sampling,
    )
    from personae.settings import load_settings, model_specs

    source = os.environ if env is None else env
    strong, fast = model_specs(args.model, args.fast_model, source)
    settings = load_settings(source).with_overrides(
        model=strong, fast_model=fast, openai_base_url=base_url
    )
    if args.model or base_url:
        settings = settings.with_overrides(model_configured=True)
    if not settings.model_configured:
        raise ConfigurationError("no LLM is configured", NO_MODEL_HINT)
    judge = getattr(args, "judge_model", None) or source.get("PERSONAE_JUDGE_MODEL", "").strip()
    every: dict[Role, str] = {
        "strong": settings.model,
        "fast": settings.fast_model,
        "judge": judge or default_judge or settings.model,
    }
    specs = {role: every[role] for role in roles}
    sampling = sampling_settings(args, roles, source)
    for role in roles if default_sampling else ():
        sampling[role] = {**(default_sampling or {}), **sampling.get(role, {})}
    budget = parse_retry_seconds(source.get(RETRY_SECONDS_VARIABLE, ""))
    chat_models = {
        role: with_retry_budget(
            with_sampling(
                resolve_chat_model(
                    spec,
                    base_url=settings.openai_base_url,
                    api_key=settings.openai_api_key,
                    structured_output=settings.structured_output,
                    context_window=settings.context_window,
                ),
                sampling.get(role, {}),
            ),
            budget,
        )
        for role, spec in specs.items()
    }
    return CommandModels(settings=settings, specs=specs, chat_models=chat_models, sampling=sampling)
