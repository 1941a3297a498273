"""The model flags every command shares, and the one rule that turns them into chat models.

Each role takes the first that is set, flag before environment before default:

- strong: ``--model``, ``PERSONAE_MODEL``, ``openai:gpt-4.1``;
- fast: ``--fast-model``, ``PERSONAE_FAST_MODEL``, ``--model``, ``PERSONAE_MODEL``,
  ``openai:gpt-4.1-mini`` (so ``--model`` alone serves both roles, as ``PERSONAE_MODEL`` does);
- judge: ``--judge-model``, ``PERSONAE_JUDGE_MODEL``, the strong model.

Commands resolve the roles they use before any fetch or model call, so a bad setting fails at
once with its one-line :class:`~personae.errors.ConfigurationError`. Kept in one place because
four commands each had their own copy, and the copies disagreed.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from personae.errors import ConfigurationError
from personae.llm import NO_MODEL_HINT, register_model, resolve_chat_model
from personae.settings import Settings, load_settings

Role = Literal["strong", "fast", "judge"]
ROLES: tuple[Role, ...] = ("strong", "fast", "judge")
SAMPLING_VARIABLES = {"temperature": "PERSONAE_TEMPERATURE", "top_p": "PERSONAE_TOP_P"}
"""Sampling settings and the variable each is read from (the flags ``--temperature``/``--top-p``
win). A value is either one number for every role (``0.7``) or per role
(``judge=0,strong=0.85``), or both (``0.7,judge=0``)."""
_SAMPLING_RANGE = {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)}


def parse_sampling(text: str, setting: str) -> dict[Role, float]:
    """``{role: value}`` from ``0.7``, ``judge=0,strong=0.85`` or ``0.7,judge=0``.

    Raises:
        ConfigurationError: A value is not a number in range, or names an unknown role.
    """
    low, high = _SAMPLING_RANGE[setting]
    values: dict[Role, float] = {}
    fix = f"write {setting} as 0.7 or judge=0,strong=0.85 (roles: {', '.join(ROLES)})"
    for part in (p.strip() for p in text.split(",") if p.strip()):
        role, sep, number = part.rpartition("=") if "=" in part else ("", "", part)
        try:
            value = float(number)
        except ValueError:
            raise ConfigurationError(f"{setting} {part!r} is not a number", fix) from None
        if not low <= value <= high:
            raise ConfigurationError(f"{setting} {value} is outside {low}-{high}", fix)
        if sep and role.strip() not in ROLES:
            raise ConfigurationError(f"{setting} names an unknown role {role!r}", fix)
        targets: tuple[Role, ...] = (role.strip(),) if sep else ROLES  # type: ignore[assignment]
        for target in targets:
            if sep or target not in values:
                values[target] = value
    return values


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

    def register(self, prefix: str) -> dict[Role, str]:
        """Register every role as ``<prefix>-<role>``; return the ``registered:`` specs.

        Graph contexts carry model specs (strings), so the resolved instances travel this way.
        """
        for role, model in self.chat_models.items():
            register_model(f"{prefix}-{role}", model)
        return {role: f"registered:{prefix}-{role}" for role in self.chat_models}


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
    chosen: dict[Role, dict[str, float]] = {}
    for setting, variable in SAMPLING_VARIABLES.items():
        flag = getattr(args, setting, None)
        text = flag if flag is not None else source.get(variable, "").strip()
        for role, value in parse_sampling(text, setting).items():
            if role in roles:
                chosen.setdefault(role, {})[setting] = value
    return chosen


def with_sampling(model: BaseChatModel, sampling: Mapping[str, float]) -> BaseChatModel:
    """``model`` with its sampling fields set (a copy); models without such fields unchanged."""
    fields = type(model).model_fields
    update = {k: v for k, v in sampling.items() if k in fields}
    return model.model_copy(update=update) if update else model


def resolve_models(
    args: argparse.Namespace,
    roles: tuple[Role, ...],
    *,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> CommandModels:
    """Apply the flags of :func:`add_model_flags` to the settings and resolve ``roles``.

    ``base_url`` is a flag overriding ``OPENAI_BASE_URL``; ``env`` defaults to ``os.environ``.
    Raises :class:`ConfigurationError` when no LLM is configured or a spec cannot be resolved.
    """
    source = os.environ if env is None else env
    fast_flag = args.fast_model
    if not fast_flag and not source.get("PERSONAE_FAST_MODEL", "").strip():
        fast_flag = args.model
    settings = load_settings(source).with_overrides(
        model=args.model, fast_model=fast_flag, openai_base_url=base_url
    )
    if args.model or base_url:
        settings = settings.with_overrides(model_configured=True)
    if not settings.model_configured:
        raise ConfigurationError("no LLM is configured", NO_MODEL_HINT)
    judge = getattr(args, "judge_model", None) or source.get("PERSONAE_JUDGE_MODEL", "").strip()
    every: dict[Role, str] = {
        "strong": settings.model,
        "fast": settings.fast_model,
        "judge": judge or settings.model,
    }
    specs = {role: every[role] for role in roles}
    sampling = sampling_settings(args, roles, source)
    chat_models = {
        role: with_sampling(resolve_chat_model(spec, settings), sampling.get(role, {}))
        for role, spec in specs.items()
    }
    return CommandModels(settings=settings, specs=specs, chat_models=chat_models, sampling=sampling)
