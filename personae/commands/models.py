"""The model and embedding flags every command shares, and how they reach a run context.

A command turns its flags into run-context fields (:func:`model_fields`), builds the context of
the graph it runs, and asks that context for chat models and the embedding. The context applies
the one settings rule (flag, else environment, else default; :mod:`personae.run_context`), the
same rule the LangGraph server and the tool factories go through:

- strong: ``--model``, ``PERSONAE_MODEL``, ``openai:gpt-4.1``;
- fast: ``--fast-model``, ``PERSONAE_FAST_MODEL``, ``--model``, ``PERSONAE_MODEL``,
  ``openai:gpt-4.1-mini`` (so ``--model`` alone serves both roles, as ``PERSONAE_MODEL`` does);
- judge: ``--judge-model``, ``PERSONAE_JUDGE_MODEL``, then the evaluation's own default judge
  (``bench``: ``openai:gpt-4.1``, the BOOKMARKS paper's judge, never silently the acting model,
  which would grade its own predictions), else the strong model;
- sampling: ``--temperature`` / ``--top-p``, else ``PERSONAE_TEMPERATURE`` / ``PERSONAE_TOP_P``,
  else the graph's default (temperature 0 for the BOOKMARKS runs), else the server's;
- embedding: ``--embedding``, ``PERSONAE_EMBEDDINGS``, ``hashing``.

Commands ask their context for the models they use before any fetch or model call, so a bad
setting fails at once with its one-line :class:`~personae.errors.ConfigurationError`. This
module imports nothing heavy: it loads for ``personae --help``.
"""

from __future__ import annotations

import argparse
from typing import Any, TypedDict

EMBEDDING_HELP = (
    "hashing, local or openai:MODEL (default PERSONAE_EMBEDDINGS, else hashing); "
    "each embedding keeps its own collections"
)


class ModelFields(TypedDict):
    """The run-context fields the model flags set (empty: the context fills them)."""

    model: str
    fast_model: str
    openai_base_url: str
    temperature: str
    top_p: str


def add_model_flags(
    parser: Any,
    *,
    judge: bool = False,
    fast_help: str = "cheap model",
    judge_default: str = "the strong model",
    temperature_default: str = "the server's",
) -> None:
    """Add ``--model`` and ``--fast-model`` (and ``--judge-model`` when ``judge``).

    ``judge_default`` and ``temperature_default`` say in ``--help`` what the command uses when
    neither the flag nor the variable is set (an evaluation's own judge, a graph's sampling).
    """
    parser.add_argument("--model", help="strong model provider:model (PERSONAE_MODEL)")
    parser.add_argument(
        "--fast-model",
        help=f"{fast_help} provider:model (PERSONAE_FAST_MODEL; default --model)",
    )
    if judge:
        parser.add_argument(
            "--judge-model",
            help=f"judge model provider:model (PERSONAE_JUDGE_MODEL; default {judge_default})",
        )
    parser.add_argument(
        "--temperature",
        help="sampling temperature, one number or per role: judge=0,strong=0.85 "
        f"(PERSONAE_TEMPERATURE; default {temperature_default})",
    )
    parser.add_argument(
        "--top-p", help="nucleus sampling top-p, same forms as --temperature (PERSONAE_TOP_P)"
    )


def add_embedding_flag(parser: Any, help_text: str = EMBEDDING_HELP) -> None:
    """Add ``--embedding`` (the run context's ``embedding`` field)."""
    parser.add_argument("--embedding", default="", help=help_text)


def name_models_alike(parser: argparse.ArgumentParser) -> None:
    """Every ``--*-model`` flag of ``parser`` shows ``PROVIDER:MODEL`` in ``--help``.

    argparse would show each flag's own ``dest`` (``MODEL``, ``JUDGE_MODEL``, ``GS_MODEL``):
    one value shape, one name for it.
    """
    for action in parser._actions:
        if action.metavar is None and any(f.endswith("-model") for f in action.option_strings):
            action.metavar = "PROVIDER:MODEL"


def check_model_flags(args: argparse.Namespace) -> None:
    """Check the sampling and server flags a command was given, before any heavy import.

    ``--temperature abc`` or ``--base-url ftp://x`` then fails in milliseconds with one line,
    not after LangChain has loaded (tens of seconds on a busy machine) or after a minute of
    retries against a URL no client can reach.
    """
    from personae.errors import ConfigurationError
    from personae.sampling import parse_sampling
    from personae.urls import split_web_url

    for setting in ("temperature", "top_p"):
        value = getattr(args, setting, None)
        if value:
            parse_sampling(value, setting)
    base_url = getattr(args, "base_url", None)
    if base_url and split_web_url(base_url) is None:
        raise ConfigurationError(
            f"--base-url {base_url.strip()[:200]!r} is not an http(s) URL",
            "pass the OpenAI-compatible server's address, e.g. http://localhost:8000/v1",
        )


def model_fields(args: argparse.Namespace) -> ModelFields:
    """The run-context fields of the model flags, as given ("" where a flag is absent).

    Only a translation: what a flag leaves empty the context fills from the settings.
    ``--base-url`` (``personae profile``) names the server.
    """
    return ModelFields(
        model=getattr(args, "model", None) or "",
        fast_model=getattr(args, "fast_model", None) or "",
        openai_base_url=getattr(args, "base_url", None) or "",
        temperature=getattr(args, "temperature", None) or "",
        top_p=getattr(args, "top_p", None) or "",
    )
