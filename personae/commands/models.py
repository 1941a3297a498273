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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from personae.errors import ConfigurationError

if TYPE_CHECKING:
    # Imported lazily at run time: this module is loaded for ``personae --help``.
    from langchain_core.language_models import BaseChatModel

    from personae.settings import Settings

Role = Literal["strong", "fast", "judge"]


@dataclass(frozen=True)
class CommandModels:
    """The settings with the model flags applied, and each resolved role's spec and model."""

    settings: Settings
    """Settings after the flags (``model`` and ``fast_model`` hold the strong and fast specs)."""
    specs: Mapping[Role, str]
    """The ``provider:model`` each resolved role uses, as the user named it."""
    chat_models: Mapping[Role, BaseChatModel]
    """The chat model of each resolved role."""

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
        from personae.llm import register_model

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
    from personae.llm import NO_MODEL_HINT, resolve_chat_model
    from personae.settings import load_settings

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
    chat_models = {role: resolve_chat_model(spec, settings) for role, spec in specs.items()}
    return CommandModels(settings=settings, specs=specs, chat_models=chat_models)
