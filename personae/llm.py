"""One place that turns ``provider:model`` strings into chat models and calls them safely.

Every structured call goes through :func:`call_structured`: the answer is validated against a
pydantic schema (and an optional code-side check, e.g. "only ids we gave you"), malformed answers
are retried with the error fed back, and usage is counted so graphs can enforce budgets.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import BaseModel, ValidationError

from personae.errors import ConfigurationError, RemoteError

SchemaT = TypeVar("SchemaT", bound=BaseModel)

_EVERY_SPEC = "*"
_OVERRIDES: dict[str, BaseChatModel] = {}
"""Models injected by :func:`override_models`, by spec (``*``: every spec)."""

NO_MODEL_HINT = (
    "set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any OpenAI-compatible server: vLLM, "
    "Ollama, llama.cpp), and optionally PERSONAE_MODEL / PERSONAE_FAST_MODEL as provider:model"
)


ModelRole = Literal["strong", "fast", "judge"]
"""The three model roles: strong (writing, acting), fast (routine calls), judge (evals)."""
ROLES: tuple[ModelRole, ...] = ("strong", "fast", "judge")
SAMPLING_VARIABLES = {"temperature": "PERSONAE_TEMPERATURE", "top_p": "PERSONAE_TOP_P"}
"""Sampling settings and the variable each is read from (the flags ``--temperature``/``--top-p``
win). A value is either one number for every role (``0.7``) or per role
(``judge=0,strong=0.85``), or both (``0.7,judge=0``)."""
_SAMPLING_RANGE = {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)}


def parse_sampling(text: str, setting: str) -> dict[ModelRole, float]:
    """``{role: value}`` from ``0.7``, ``judge=0,strong=0.85`` or ``0.7,judge=0``.

    Raises:
        ConfigurationError: A value is not a number in range, or names an unknown role.
    """
    low, high = _SAMPLING_RANGE[setting]
    values: dict[ModelRole, float] = {}
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
        targets: tuple[ModelRole, ...] = (role.strip(),) if sep else ROLES  # type: ignore[assignment]
        for target in targets:
            if sep or target not in values:
                values[target] = value
    return values


def with_sampling(model: BaseChatModel, sampling: Mapping[str, float]) -> BaseChatModel:
    """``model`` with its sampling fields set (a copy); models without such fields unchanged."""
    fields = type(model).model_fields
    update = {k: v for k, v in sampling.items() if k in fields}
    return model.model_copy(update=update) if update else model


def sampling_text(sampling: Mapping[ModelRole, Mapping[str, float]], setting: str) -> str:
    """``{role: {setting: value}}`` back in :func:`parse_sampling`'s form (``strong=0.7,...``)."""
    return ",".join(
        f"{role}={values[setting]}" for role, values in sampling.items() if setting in values
    )


@dataclass(frozen=True)
class LLMUsage:
    """What a model call cost: calls made and tokens in and out."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        """JSON-friendly form used in state and reports."""
        return {
            "llm_calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


def override_models(
    model: BaseChatModel | None = None, *, specs: Mapping[str, BaseChatModel] | None = None
) -> ModelOverride:
    """Make :func:`resolve_chat_model` answer with these models instead of building clients.

    The one way tests (and apps testing themselves) inject a model into graphs, tools and the
    CLI: ``model`` answers every spec, ``specs`` answers the named ones (``openai:judge``) and
    wins over ``model``. Takes effect at once and adds to earlier overrides; leaving the
    returned context manager (``with override_models(...)``) restores the earlier ones, and
    :func:`reset_model_overrides` clears all (Personae's test suite does it after every test).
    Re-exported by :mod:`personae.testing`.
    """
    return ModelOverride(model, dict(specs or {}))


def reset_model_overrides() -> None:
    """Forget every :func:`override_models` override."""
    _OVERRIDES.clear()


class ModelOverride:
    """An applied :func:`override_models`; as a context manager, undone on exit."""

    def __init__(self, model: BaseChatModel | None, specs: dict[str, BaseChatModel]) -> None:
        self._before = dict(_OVERRIDES)
        if model is not None:
            _OVERRIDES[_EVERY_SPEC] = model
        _OVERRIDES.update(specs)

    def __enter__(self) -> ModelOverride:
        return self

    def __exit__(self, *exc_info: object) -> None:
        _OVERRIDES.clear()
        _OVERRIDES.update(self._before)


def _parse_spec(spec: str) -> str:
    """The model name of an ``openai:<model>`` spec; a one-line error for anything else."""
    provider, sep, name = spec.partition(":")
    if not sep or not name:
        raise ConfigurationError(
            f"model {spec!r} is not a provider:model string",
            "write it like openai:gpt-4.1 (PERSONAE_MODEL / --model)",
        )
    if provider != "openai":
        raise ConfigurationError(
            f"unknown model provider {provider!r} in {spec!r}",
            "use openai:<model> with OPENAI_BASE_URL for any OpenAI-compatible server",
        )
    return name


def resolve_chat_model(
    spec: str | BaseChatModel, *, base_url: str | None = None, api_key: str | None = None
) -> BaseChatModel:
    """Return the chat model for ``spec``: an instance, or ``openai:<model>`` on a server.

    ``openai`` covers every OpenAI-compatible server (``base_url``; OpenAI itself when unset).
    The caller passes the server and key it read at the edge: this function reads no
    environment. Raises :class:`ConfigurationError` naming the setting to fix when no model can
    be built.
    """
    if isinstance(spec, BaseChatModel):
        return spec
    name = _parse_spec(spec)
    overridden = _OVERRIDES.get(spec) or _OVERRIDES.get(_EVERY_SPEC)
    if overridden is not None:
        return overridden
    if not api_key and not base_url:
        raise ConfigurationError("no LLM is configured", NO_MODEL_HINT)
    # A shallow copy (microseconds): a caller setting a field changes it for nobody else.
    return _openai_chat_model(name, api_key, base_url or None).model_copy()


@functools.lru_cache(maxsize=32)
def _openai_chat_model(name: str, api_key: str | None, base_url: str | None) -> BaseChatModel:
    """One ChatOpenAI per (model, key, server).

    Nodes resolve their model on every call (a sync node per bookmark) and building a
    ChatOpenAI costs ~37 ms of event-loop time; the instance holds no per-run state.
    """
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=name,
        api_key=api_key or "not-needed",  # type: ignore[arg-type]
        base_url=base_url,
        timeout=120,
        max_retries=2,
    )


def _usage_of(message: BaseMessage | None, prompt: Sequence[BaseMessage]) -> LLMUsage:
    meta = getattr(message, "usage_metadata", None) if message is not None else None
    if meta:
        return LLMUsage(1, int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0)))
    out_tokens = count_tokens_approximately([message]) if message is not None else 0
    return LLMUsage(1, count_tokens_approximately(list(prompt)), out_tokens)


def _remote_error(error: Exception, model: BaseChatModel) -> RemoteError:
    base = getattr(model, "openai_api_base", None) or "the configured server"
    kind = type(error).__name__
    fix = "check OPENAI_BASE_URL / OPENAI_API_KEY and that the server is running"
    if "Connection" in kind:
        return RemoteError(f"cannot reach the LLM server at {base}", fix)
    if "Timeout" in kind:
        return RemoteError(f"the LLM server at {base} timed out", fix)
    text = str(error).splitlines()[0] if str(error) else kind
    return RemoteError(f"the LLM at {base} failed: {kind}: {text[:200]}", fix)


def _is_transport_error(error: Exception) -> bool:
    module = type(error).__module__
    return module.startswith(("openai", "httpx", "httpcore", "langchain_openai")) or isinstance(
        error, ConnectionError | TimeoutError
    )


def _structured_runnable(model: BaseChatModel, schema: type[BaseModel]) -> Any:
    if type(model).__name__ == "ChatOpenAI":
        # Function calling is the mode that vLLM, Ollama and llama.cpp all support.
        return model.with_structured_output(schema, method="function_calling", include_raw=True)
    return model.with_structured_output(schema, include_raw=True)


async def call_structured(
    model: BaseChatModel,
    schema: type[SchemaT],
    messages: Sequence[BaseMessage],
    *,
    retries: int = 2,
    check: Callable[[SchemaT], None] | None = None,
) -> tuple[SchemaT, LLMUsage]:
    """Ask ``model`` for a ``schema`` answer; validate, retry malformed answers, count usage.

    ``check`` runs code-side validation (ids, positions the code gave the model) and raises
    ``ValueError`` to reject an answer; the message is fed back to the model on retry.
    """
    runnable = _structured_runnable(model, schema)
    history = list(messages)
    usage = LLMUsage()
    problem = "no answer"
    for _ in range(retries + 1):
        try:
            result = await runnable.ainvoke(history)
        except Exception as error:
            if _is_transport_error(error):
                raise _remote_error(error, model) from error
            raise
        raw = result.get("raw")
        usage = usage + _usage_of(raw, history)
        parsed = result.get("parsed")
        parse_error = result.get("parsing_error")
        if parsed is not None and parse_error is None:
            try:
                if check is not None:
                    check(parsed)
                return parsed, usage
            except (ValueError, ValidationError) as rejected:
                problem = str(rejected)
        else:
            problem = (
                str(parse_error) if parse_error else "the answer did not use the required schema"
            )
        if isinstance(raw, AIMessage):
            history.append(AIMessage(content=str(raw.content or "(tool call)")))
        history.append(
            HumanMessage(
                content=f"Your previous answer was invalid: {problem[:500]}. "
                f"Answer again with a valid {schema.__name__}."
            )
        )
    raise RemoteError(
        f"the model gave malformed {schema.__name__} output {retries + 1} times ({problem[:160]})",
        "use a stronger model (PERSONAE_MODEL) or a server with tool-calling support",
    )


async def call_text(model: BaseChatModel, messages: Sequence[BaseMessage]) -> tuple[str, LLMUsage]:
    """Ask ``model`` for free text; transport failures become a one-line :class:`RemoteError`."""
    try:
        answer = await model.ainvoke(list(messages))
    except Exception as error:
        if _is_transport_error(error):
            raise _remote_error(error, model) from error
        raise
    return str(answer.content), _usage_of(answer, messages)
