"""One place that turns ``provider:model`` strings into chat models and calls them safely.

Every structured call goes through :func:`call_structured`: the answer is validated against a
pydantic schema (and an optional code-side check, e.g. "only ids we gave you"), malformed answers
are retried with the error fed back, and usage is counted so graphs can enforce budgets.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.output_parsers import BaseLLMOutputParser
from langchain_core.outputs import ChatGeneration
from langchain_core.runnables import RunnableSequence
from pydantic import BaseModel, ValidationError

from personae.answer_store import AnswerStore, model_name_of, sampling_of
from personae.backoff import backoff_delay
from personae.errors import ConfigurationError, PersonaeError, RemoteError
from personae.llm_endpoint import (
    STRUCTURED_OUTPUT_VARIABLE,
    StructuredOutput,
    answer_budget,
    configured_method,
    context_window,
    fit_prompt,
    is_openai_client,
    is_openai_itself,
    methods_to_try,
    remember_method,
    tool_call_schema,
    with_endpoint_settings,
)
from personae.llm_errors import (
    OPENAI_DEFAULT_BASE,
    RETRYABLE,
    SETTINGS_FIX,
    failure_kind,
    is_context_overflow,
    remote_error,
    retry_after,
    status_of,
)
from personae.process_caches import clears_on_reset
from personae.sampling import ROLES as ROLES  # re-exported: the sampling syntax loads light
from personae.sampling import SAMPLING_VARIABLES as SAMPLING_VARIABLES
from personae.sampling import ModelRole as ModelRole
from personae.sampling import parse_sampling as parse_sampling

SchemaT = TypeVar("SchemaT", bound=BaseModel)
AnswerT = TypeVar("AnswerT")

# langchain-openai warns before it raises when a server refuses a JSON schema; under
# PERSONAE_STRUCTURED_OUTPUT=auto a refusal is expected and the next method is tried, so the
# warning would only alarm (and it says to change code the user does not own).
warnings.filterwarnings(
    "ignore",
    message=r"(Invalid schema for|This model does not support) OpenAI's structured output",
    category=UserWarning,
)

_EVERY_SPEC = "*"
_OVERRIDES: dict[str, BaseChatModel] = {}
"""Models injected by :func:`override_models`, by spec (``*``: every spec)."""

NO_MODEL_HINT = (
    "set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any OpenAI-compatible server: vLLM, "
    "Ollama, llama.cpp), and optionally PERSONAE_MODEL / PERSONAE_FAST_MODEL as provider:model"
)


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


RETRY_SECONDS_VARIABLE = "PERSONAE_LLM_RETRY_SECONDS"
"""Environment variable holding the LLM retry budget in seconds (read at the edge)."""
DEFAULT_RETRY_SECONDS = 120.0
"""How long, in total, calls wait for an overloaded or unreachable LLM server by default."""
RETRY_BASE_SECONDS = 1.0
"""First backoff wait when the server gives no ``Retry-After``; it doubles each retry."""
RETRY_MAX_WAIT = 30.0
"""Longest single backoff wait when the server gives no ``Retry-After``."""
_RETRY_KEY = "personae_retry_seconds"
_JOURNAL_KEY = "personae_call_journal"
_sleep = asyncio.sleep
"""The wait between retries (tests record it instead of sleeping)."""


@dataclass(frozen=True)
class LLMUsage:
    """What a model call cost: calls made and tokens in and out, and model output dropped."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    dropped_ids: int = 0
    """Ids the model cited that the code never gave it, dropped from the answer."""
    cache_hits: int = 0
    """Answers an answer cache gave instead of the model (:mod:`personae.answer_store`)."""
    degraded: int = 0
    """Items whose answer was still invalid after retries: kept unchecked, dropped or failed."""
    cut_prompts: int = 0
    """Prompts cut to fit the server's context window (:mod:`personae.llm_endpoint`)."""

    @classmethod
    def from_dict(cls, counts: Mapping[str, int]) -> LLMUsage:
        """The usage :meth:`as_dict` (or a stored entry) wrote; missing counters are 0."""
        return cls(
            int(counts.get("llm_calls", 0)),
            int(counts.get("input_tokens", 0)),
            int(counts.get("output_tokens", 0)),
            int(counts.get("dropped_ids", 0)),
            int(counts.get("cache_hits", 0)),
            int(counts.get("degraded", 0)),
            int(counts.get("cut_prompts", 0)),
        )

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.dropped_ids + other.dropped_ids,
            self.cache_hits + other.cache_hits,
            self.degraded + other.degraded,
            self.cut_prompts + other.cut_prompts,
        )

    def as_dict(self) -> dict[str, int]:
        """JSON-friendly form for state and reports (the last four counters: when any)."""
        counts = {
            "llm_calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.dropped_ids:
            counts["dropped_ids"] = self.dropped_ids
        if self.cache_hits:
            counts["cache_hits"] = self.cache_hits
        if self.degraded:
            counts["degraded"] = self.degraded
        if self.cut_prompts:
            counts["cut_prompts"] = self.cut_prompts
        return counts


class InvalidAnswerError(RemoteError):
    """The model's answer was still invalid after the retries: this item degrades, not the run.

    A :class:`RemoteError` (library callers that caught those still do); the graphs catch this
    one around each item (a claim batch, a chapter, a bench instance) and keep the item
    unchecked, drop it or record it as failed, counted in ``LLMUsage.degraded``.
    """

    def __init__(self, schema: str, attempts: int, problem: str, usage: LLMUsage) -> None:
        self.schema = schema
        self.attempts = attempts
        self.reason = " ".join(problem.split())  # pydantic's errors span lines: one line here
        self.usage = usage
        """What the failed attempts cost, so the caller still counts it."""
        super().__init__(
            f"the model gave malformed {schema} output {attempts} times ({self.reason[:160]})",
            "use a stronger model (PERSONAE_MODEL) or a server with tool-calling support",
        )


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


clears_on_reset("personae.llm.model_overrides", reset_model_overrides)


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
    spec: str | BaseChatModel,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    structured_output: str = "auto",
    context_window: int | None = None,
) -> BaseChatModel:
    """Return the chat model for ``spec``: an instance, or ``openai:<model>`` on a server.

    ``openai`` covers every OpenAI-compatible server (``base_url``; OpenAI itself when unset).
    The caller passes the server, key, structured-output method and context window it read at
    the edge (:mod:`personae.llm_endpoint`): this function reads no environment. Raises
    :class:`ConfigurationError` naming the setting to fix when no model can be built.
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
    model = _openai_chat_model(name, api_key, base_url or None).model_copy()
    return with_endpoint_settings(
        model, structured_output=structured_output, context_window=context_window
    )


@functools.lru_cache(maxsize=32)
def _openai_chat_model(name: str, api_key: str | None, base_url: str | None) -> BaseChatModel:
    """One ChatOpenAI per (model, key, server).

    Nodes resolve their model on every call (a sync node per bookmark) and building a
    ChatOpenAI costs ~37 ms of event-loop time; the instance holds no per-run state. Its async
    HTTP client keeps no idle connection: a pooled one belongs to the event loop that opened
    it, and the next ``asyncio.run`` (a second character of ``arcane build-arcs``, a library caller,
    a test) would fail on it with "Event loop is closed". A call opens its own connection,
    which costs little beside a model's answer.
    """
    import httpx2
    import openai
    from langchain_openai import ChatOpenAI

    from personae.tls import shared_ssl_context

    context = shared_ssl_context()  # not one per SDK client (~40 ms of CPU each)
    one_loop_only = openai.DefaultAsyncHttpxClient(
        limits=httpx2.Limits(max_connections=1000, max_keepalive_connections=0), verify=context
    )
    return ChatOpenAI(
        model=name,
        api_key=api_key or "not-needed",  # type: ignore[arg-type]
        base_url=base_url,
        timeout=120,
        max_retries=0,  # call_structured/call_text retry, within the run's budget
        http_async_client=one_loop_only,
        http_client=openai.DefaultHttpxClient(verify=context),
    )


clears_on_reset("personae.llm.chat_models", _openai_chat_model.cache_clear)


def with_retry_budget(model: BaseChatModel, seconds: float) -> BaseChatModel:
    """``model`` (a copy) whose calls retry for at most ``seconds`` of waiting in total.

    :func:`call_structured` and :func:`call_text` retry rate limits (429), server errors (5xx)
    and connection failures with exponential backoff, honouring ``Retry-After``, until the
    next wait would pass the budget; then they say they gave up. 0 disables retries.
    """
    if seconds < 0:
        raise ConfigurationError(
            f"the LLM retry budget {seconds:g}s is negative",
            f"set {RETRY_SECONDS_VARIABLE} to 0 or more seconds",
        )
    if retry_budget(model) == seconds:
        return model
    metadata = {**(model.metadata or {}), _RETRY_KEY: float(seconds)}
    return model.model_copy(update={"metadata": metadata})


def with_call_journal(model: BaseChatModel, folder: str) -> BaseChatModel:
    """``model`` (a copy) whose answers are journaled in ``folder`` (empty: no journal).

    :func:`call_structured` and :func:`call_text` answer a prompt found in the journal from
    there, with the usage it first cost, and journal every new answer (the answer store of
    :mod:`personae.answer_store`, scoped to the step's folder): how an interrupted step resumes
    without paying again for the calls it had finished.
    """
    if not folder or call_journal(model) == folder:
        return model
    metadata = {**(model.metadata or {}), _JOURNAL_KEY: folder}
    return model.model_copy(update={"metadata": metadata})


def call_journal(model: BaseChatModel) -> str:
    """The journal folder of ``model`` (``""``: none)."""
    value = (getattr(model, "metadata", None) or {}).get(_JOURNAL_KEY)
    return value if isinstance(value, str) else ""


async def _through_stores(
    model: BaseChatModel,
    store: AnswerStore | None,
    model_name: str,
    schema: type[BaseModel] | None,
    messages: Sequence[BaseMessage],
    validate: Callable[[Any], AnswerT],
    ask: Callable[[], Awaitable[tuple[AnswerT, LLMUsage]]],
    dump: Callable[[AnswerT], Any],
) -> tuple[AnswerT, LLMUsage]:
    """``ask()`` unless ``store`` or the model's journal holds a valid answer; keep new ones.

    A cache hit costs nothing (``cache_hits=1``); a journal hit costs what it first cost.
    """
    stores = [] if store is None else [store]
    if journal := call_journal(model):
        stores.append(AnswerStore.journal(journal))
    if not stores:
        return await _paid(ask)
    name, sampling = model_name or model_name_of(model), sampling_of(model)
    keys = [s.key(name, sampling, schema, messages) for s in stores]
    for each, key in zip(stores, keys, strict=True):
        found = await each.find(key, validate)
        if found is not None:
            answer, cost = found
            usage = LLMUsage.from_dict(cost) if each.replay_usage else LLMUsage(cache_hits=1)
            return answer, usage
    answer, usage = await _paid(ask)
    for each, key in zip(stores, keys, strict=True):
        await each.keep(key, name, dump(answer), _usage_dict(usage))
    return answer, usage


class CallLimitReached(PersonaeError):
    """A run reached the model calls it was allowed (``--max-calls``) and stopped there."""

    exit_code = 3


@dataclass
class CallLimit:
    """At most ``limit`` paid model calls; answers from a cache or a journal are free."""

    limit: int
    spent: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def spend(self) -> None:
        """Count one paid call, or raise :class:`CallLimitReached` when none is left."""
        with self._lock:
            if self.spent >= self.limit:
                raise CallLimitReached(f"the limit of {self.limit} model calls was reached")
            self.spent += 1


_CALL_LIMIT: contextvars.ContextVar[CallLimit | None] = contextvars.ContextVar(
    "personae_call_limit", default=None
)


@contextlib.contextmanager
def call_limit(limit: int | None) -> Iterator[CallLimit | None]:
    """Within the block (and the tasks and threads it starts), at most ``limit`` paid calls.

    ``None``: no limit. What a command's ``--max-calls`` sets around a run: the run stops at
    the limit with :class:`CallLimitReached` before the next call is sent.
    """
    counter = CallLimit(limit) if limit is not None else None
    token = _CALL_LIMIT.set(counter)
    try:
        yield counter
    finally:
        _CALL_LIMIT.reset(token)


async def _paid(ask: Callable[[], Awaitable[AnswerT]]) -> AnswerT:
    """``ask()``, counted against the block's :func:`call_limit`."""
    counter = _CALL_LIMIT.get()
    if counter is not None:
        counter.spend()
    return await ask()


def retry_budget(model: BaseChatModel) -> float:
    """The retry budget of ``model`` in seconds (``DEFAULT_RETRY_SECONDS`` unless set)."""
    value = (getattr(model, "metadata", None) or {}).get(_RETRY_KEY)
    return float(value) if isinstance(value, int | float) else DEFAULT_RETRY_SECONDS


def parse_retry_seconds(text: str) -> float:
    """The retry budget written in ``PERSONAE_LLM_RETRY_SECONDS`` (empty: the default)."""
    if not text.strip():
        return DEFAULT_RETRY_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ConfigurationError(
            f"{RETRY_SECONDS_VARIABLE}={text!r} is not a number of seconds",
            f"set {RETRY_SECONDS_VARIABLE} to 0 or more (default {DEFAULT_RETRY_SECONDS:g})",
        )
    return seconds


def _usage_of(message: BaseMessage | None, prompt: Sequence[BaseMessage]) -> LLMUsage:
    meta = getattr(message, "usage_metadata", None) if message is not None else None
    if meta:
        return LLMUsage(1, int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0)))
    out_tokens = count_tokens_approximately([message]) if message is not None else 0
    return LLMUsage(1, count_tokens_approximately(list(prompt)), out_tokens)


def _server_of(model: BaseChatModel) -> str:
    """The server a model calls, for messages: OpenAI's own when an OpenAI client has no base."""
    if not hasattr(model, "openai_api_base"):  # not an OpenAI client: no field to name
        return "the configured server"
    base: str | None = getattr(model, "openai_api_base", None)  # BaseChatModel declares none
    return base or OPENAI_DEFAULT_BASE


async def _ainvoke(
    runnable: Any, payload: Any, model: BaseChatModel, *, probing: bool = False
) -> Any:
    """``runnable.ainvoke(payload)``, retried on transient failures within the model's budget.

    Rate limits, 5xx, timeouts and dropped connections are retried; a server nobody listens at
    and any other 4xx fail at once (:mod:`personae.llm_errors`). While ``probing`` a method, a
    400/422/500/501 is the server refusing that method: :class:`_MethodRejected`, not retried.
    """
    budget = retry_budget(model)
    waited, attempt = 0.0, 0
    while True:
        try:
            return await runnable.ainvoke(payload)
        except Exception as error:
            kind = failure_kind(error)
            if kind is None:
                raise
            if probing and _rejects_method(error):
                raise _MethodRejected(error) from error
            if kind not in RETRYABLE:
                raise remote_error(error, _server_of(model), _fix_for(model, error)) from error
            told = retry_after(error)  # honoured in full: retrying earlier only fails again
            delay = backoff_delay(attempt, told, base=RETRY_BASE_SECONDS, cap=float("inf"))
            if told is None:
                delay = min(delay, RETRY_MAX_WAIT)
            if waited + delay > budget:
                raise _gave_up(error, model, attempt + 1, waited, budget, told) from error
            await _sleep(delay)
            waited += delay
            attempt += 1


_PARSED_IN_CLIENT = (
    ValidationError,
    openai.LengthFinishReasonError,
    openai.ContentFilterFinishReasonError,
)
"""What the openai client raises for a json_schema answer it cannot parse (malformed, cut
short by the answer cap, filtered): a bad answer to retry with feedback, not a crash."""


class _MethodRejected(Exception):
    """The server refused a structured-output method (``auto`` tries the next one)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _rejects_method(error: Exception) -> bool:
    status = status_of(error)
    return status in (400, 422, 500, 501) and not is_context_overflow(error)


def _fix_for(model: BaseChatModel, error: Exception) -> str:
    if configured_method(model) != "auto" and status_of(error) in (400, 422, 500, 501):
        return (
            f"the server may not take {configured_method(model)}: set "
            f"{STRUCTURED_OUTPUT_VARIABLE}=auto or another method (personae doctor tells which "
            "work), and check OPENAI_BASE_URL / OPENAI_API_KEY"
        )
    return SETTINGS_FIX


def _gave_up(
    error: Exception,
    model: BaseChatModel,
    attempts: int,
    waited: float,
    budget: float,
    told: float | None,
) -> RemoteError:
    cause = remote_error(error, _server_of(model)).problem
    asked = f"; it asked to wait {told:g}s more" if told is not None else ""
    fix = _fix_for(model, error)
    if fix == SETTINGS_FIX:
        fix = (
            "check that the server runs (OPENAI_BASE_URL / OPENAI_API_KEY) and try again later, "
            f"or raise the retry budget ({RETRY_SECONDS_VARIABLE}, now {budget:g}s)"
        )
    return RemoteError(
        f"{cause}; gave up after {attempts} attempt{'s' * (attempts > 1)} and {waited:.0f}s "
        f"of retrying{asked}",
        fix,
    )


def _structured_runnable(
    model: BaseChatModel, schema: type[BaseModel], method: StructuredOutput
) -> Any:
    if not is_openai_client(model):
        return _structured(model, schema)
    # Without patterns, which grammars misread; parsed as a dict, validated by _as_schema.
    tool = tool_call_schema(schema)
    if method == "function_calling":
        return _structured(model, tool, method=method)
    if method == "json_schema" and not is_openai_itself(model):
        function = tool["function"]
        response_format = {
            "name": function["name"],
            "description": function.get("description", ""),
            "schema": function["parameters"],
        }
        return _structured(model, response_format, method=method)
    return _structured(model, schema, method=method)


def _structured(model: BaseChatModel, target: Any, **options: Any) -> Any:
    """``model.with_structured_output(target, include_raw=True, **options)``, made lean.

    A :class:`_StructuredCall` when LangChain's chain without ``include_raw`` has the usual
    ``model | parser`` shape; LangChain's own ``include_raw`` chain for any other shape.
    """
    chain = model.with_structured_output(target, **options)
    steps = getattr(chain, "steps", None)
    if isinstance(chain, RunnableSequence) and steps and len(steps) == 2:
        return _StructuredCall(steps[0], steps[1])
    return model.with_structured_output(target, include_raw=True, **options)


class _StructuredCall:
    """``with_structured_output(..., include_raw=True)`` without the chain LangChain builds for it.

    Why: that chain (a map, two passthrough assigns and a fallback around the parser) runs its
    sync lambdas and the parser each in a worker thread when awaited, four or five thread
    hand-offs with their callbacks per structured call: 4.4 ms of CPU a call against 0.6 ms
    here (``benchmarks/bench_structured_call.py``), paid on every call of a benchmark, and most
    of a test run's system time. Here the same bound
    model (``with_structured_output(...)`` without ``include_raw`` is ``model | parser``) is
    awaited and its parser run inline. Same result and the same rule: ``raw``, ``parsed``
    and ``parsing_error`` (an exception from the parser, with ``parsed`` None); an exception
    from the model propagates.
    """

    def __init__(self, model: Any, parser: Any) -> None:
        self.model = model
        self.parser = parser

    async def ainvoke(self, payload: Any) -> dict[str, Any]:
        raw = await self.model.ainvoke(payload)
        try:
            if isinstance(self.parser, BaseLLMOutputParser):
                parsed = self.parser.parse_result([ChatGeneration(message=raw)])
            else:
                parsed = await self.parser.ainvoke(raw)
        except Exception as error:  # LangChain's include_raw: any parser error is kept
            return {"raw": raw, "parsed": None, "parsing_error": error}
        return {"raw": raw, "parsed": parsed, "parsing_error": None}


def _as_schema(result: dict[str, Any], schema: type[BaseModel]) -> dict[str, Any]:
    """``result`` with its ``parsed`` tool arguments validated against ``schema``.

    A tool call's arguments come back as a dict (:func:`tool_call_schema` sends no pydantic
    class): they become a ``schema`` instance, or a ``parsing_error`` fed back on retry.
    """
    parsed = result.get("parsed")
    if not isinstance(parsed, dict) or result.get("parsing_error") is not None:
        return result
    try:
        return {**result, "parsed": schema.model_validate(parsed)}
    except ValidationError as invalid:
        return {**result, "parsed": None, "parsing_error": invalid}


def _format_instruction(
    messages: Sequence[BaseMessage], schema: type[BaseModel]
) -> list[BaseMessage]:
    """JSON mode constrains the answer to JSON only: the schema goes in the system message."""
    shape = json.dumps(schema.model_json_schema(), separators=(",", ":"))
    instruction = (
        f"Answer with one JSON object, and nothing else, that matches this JSON schema "
        f"({schema.__name__}):\n{shape}"
    )
    history = list(messages)
    if history and isinstance(history[0], SystemMessage) and isinstance(history[0].content, str):
        first = history[0]
        return [SystemMessage(content=f"{first.content}\n\n{instruction}"), *history[1:]]
    return [SystemMessage(content=instruction), *history]


async def _capped(
    model: BaseChatModel, messages: Sequence[BaseMessage], extra: Any = None
) -> tuple[BaseChatModel, list[BaseMessage], int]:
    """``model`` with its answer cap in a form the server honours, the prompt cut to fit.

    langchain-openai sends ``max_tokens`` as ``max_completion_tokens``, which llama.cpp's and
    other OpenAI-compatible servers ignore (a 30-token cap gave 3,300 tokens): those get
    ``max_tokens`` as well. With a known context window the prompt is cut to leave room for
    the answer, and the answer is capped to that room. Returns the prompts cut (0 or 1).
    """
    if not is_openai_client(model):
        return model, list(messages), 0
    cap = getattr(model, "max_tokens", None)
    window = await context_window(model)
    fitted, cut = list(messages), False
    if window is not None:
        fitted, cut = fit_prompt(model, messages, window, cap, extra)
        cap = min(cap or window, answer_budget(window, cap))
    if cap is None:
        return model, fitted, int(cut)
    update: dict[str, Any] = {"max_tokens": cap}
    if not is_openai_itself(model):
        update["extra_body"] = {**(getattr(model, "extra_body", None) or {}), "max_tokens": cap}
    return model.model_copy(update=update), fitted, int(cut)


async def call_structured(
    model: BaseChatModel,
    schema: type[SchemaT],
    messages: Sequence[BaseMessage],
    *,
    retries: int = 2,
    check: Callable[[SchemaT], None] | None = None,
    repair: Callable[[SchemaT], tuple[SchemaT, int]] | None = None,
    store: AnswerStore | None = None,
    model_name: str = "",
) -> tuple[SchemaT, LLMUsage]:
    """Ask ``model`` for a ``schema`` answer; validate, retry malformed answers, count usage.

    ``check`` runs code-side validation (ids, positions the code gave the model) and raises
    ``ValueError`` to reject an answer; the message is fed back to the model on retry.
    ``repair`` salvages a rejected answer instead: it returns the answer without the parts the
    check refused (ids the model invented) and how many it dropped, counted in
    ``LLMUsage.dropped_ids``. One invented id then costs nothing but itself, where retrying
    could fail the whole run on a model that keeps copying an id it read in a passage.
    Transport failures (429, 5xx, connection) are retried within the model's retry budget
    (:func:`with_retry_budget`). With a journal (:func:`with_call_journal`) a journaled answer
    that still passes ``schema`` and ``check`` is returned with the usage it first cost; with
    ``store`` (an answer cache, keyed by ``model_name`` or the model's own name) at no cost.
    """

    def validate(stored: Any) -> SchemaT:
        answer = schema.model_validate(stored)
        if check is not None:
            check(answer)
        return answer

    return await _through_stores(
        model,
        store,
        model_name,
        schema,
        messages,
        validate,
        lambda: _call_structured(model, schema, messages, retries, check, repair),
        lambda answer: answer.model_dump(mode="json"),
    )


def _usage_dict(usage: LLMUsage) -> dict[str, int]:
    return {**usage.as_dict(), "dropped_ids": usage.dropped_ids}


async def _call_structured(
    model: BaseChatModel,
    schema: type[SchemaT],
    messages: Sequence[BaseMessage],
    retries: int,
    check: Callable[[SchemaT], None] | None,
    repair: Callable[[SchemaT], tuple[SchemaT, int]] | None,
) -> tuple[SchemaT, LLMUsage]:
    history = list(messages)
    usage = LLMUsage()
    problem = "no answer"
    for _ in range(retries + 1):
        result, sent, cut = await _invoke_structured(model, schema, history)
        raw = result.get("raw")
        usage = usage + _usage_of(raw, sent) + LLMUsage(cut_prompts=cut)
        parsed = result.get("parsed")
        parse_error = result.get("parsing_error")
        if parsed is not None and parse_error is None:
            try:
                if check is not None:
                    check(parsed)
                return parsed, usage
            except (ValueError, ValidationError) as rejected:
                problem = str(rejected)
                salvaged = _salvage(parsed, check, repair)
                if salvaged is not None:
                    fixed, dropped = salvaged
                    return fixed, usage + LLMUsage(dropped_ids=dropped)
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
    raise InvalidAnswerError(schema.__name__, retries + 1, problem, usage)


async def _invoke_structured(
    model: BaseChatModel, schema: type[BaseModel], history: Sequence[BaseMessage]
) -> tuple[dict[str, Any], list[BaseMessage], int]:
    """One structured answer (``raw``/``parsed``/``parsing_error``), the prompt sent, cuts.

    Tries the endpoint's method (:func:`~personae.llm_endpoint.methods_to_try`); under
    ``auto`` a method the server refuses moves on to the next, and the first it takes is
    remembered. A refusal costs no tokens and is not counted as a call.
    """
    methods = methods_to_try(model)
    refused: list[tuple[StructuredOutput, Exception]] = []
    # The schema counts toward the prompt only where _capped fits one to a window (~0.5 ms).
    shape = schema.model_json_schema() if is_openai_client(model) else None
    for method in methods:
        prompt = _format_instruction(history, schema) if method == "json_mode" else list(history)
        capped, sent, cut = await _capped(model, prompt, shape)
        runnable = _structured_runnable(capped, schema, method)
        try:
            result = await _ainvoke(runnable, sent, model, probing=len(methods) > 1)
        except _MethodRejected as rejected:
            refused.append((method, rejected.error))
            continue
        except _PARSED_IN_CLIENT as malformed:
            if not is_openai_client(model):
                raise
            # json_schema answers are parsed inside the client: a malformed one, or one cut
            # short by the answer cap, raises there instead of landing in parsing_error.
            remember_method(model, method)
            return {"raw": None, "parsed": None, "parsing_error": malformed}, sent, cut
        remember_method(model, method)
        return _as_schema(result, schema), sent, cut
    raise _refused_every_method(model, refused)


def _refused_every_method(
    model: BaseChatModel, refused: Sequence[tuple[StructuredOutput, Exception]]
) -> RemoteError:
    reasons = "; ".join(
        f"{method}: HTTP {status_of(error)} {str(error).splitlines()[0][:120] if str(error) else ''}"
        for method, error in refused
    )
    return RemoteError(
        f"the LLM server at {_server_of(model)} refused every structured-output method ({reasons})",
        f"use a server or model with tool calling or JSON schema support, or set "
        f"{STRUCTURED_OUTPUT_VARIABLE} (personae doctor shows what works)",
    )


def _salvage(
    answer: SchemaT,
    check: Callable[[SchemaT], None] | None,
    repair: Callable[[SchemaT], tuple[SchemaT, int]] | None,
) -> tuple[SchemaT, int] | None:
    """The repaired answer and its drop count, when ``repair`` makes it pass ``check``."""
    if repair is None:
        return None
    fixed, dropped = repair(answer)
    try:
        if check is not None:
            check(fixed)
    except (ValueError, ValidationError):
        return None  # not what repair fixes (an empty profile): retry as usual
    return fixed, dropped


async def call_text(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    store: AnswerStore | None = None,
    model_name: str = "",
) -> tuple[str, LLMUsage]:
    """Ask ``model`` for free text; transport failures become a one-line :class:`RemoteError`.

    Rate limits, server errors and connection failures are retried within the model's budget;
    a journaled or stored answer is reused as in :func:`call_structured`.
    """

    async def ask() -> tuple[str, LLMUsage]:
        capped, sent, cut = await _capped(model, messages)
        answer = await _ainvoke(capped, sent, model)
        return str(answer.content), _usage_of(answer, sent) + LLMUsage(cut_prompts=cut)

    return await _through_stores(
        model, store, model_name, None, messages, _stored_text, ask, lambda text: text
    )


def _stored_text(stored: Any) -> str:
    if not isinstance(stored, str):
        raise TypeError(f"a text answer was stored as {type(stored).__name__}")
    return stored
