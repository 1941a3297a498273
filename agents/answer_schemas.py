"""Answer schemas built per call: what the code checks in an answer, the schema states.

A model that follows the JSON schema it is given (OpenAI strict schemas, llama.cpp, vLLM and
Ollama grammars) can then only give answers the code accepts: the ids of this call as required
keys or as an enum, lists of the length the code needs, text that is not blank, numbers within
their bounds. Models whose schema depends on the call (the claim ids of one batch, the source
ids of one round) are built here with pydantic's ``create_model`` and cached, so the same ids
give the same class (the answer caches hash its JSON schema).

Shared by the four papers' roles, so it sits at the root of ``agents/``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from personae.llm import InvalidAnswerError, LLMUsage
from personae.process_caches import clears_on_reset

logger = logging.getLogger(__name__)
KeyT = TypeVar("KeyT")
ValueT = TypeVar("ValueT")
ModelT = TypeVar("ModelT", bound=BaseModel)

NON_BLANK = r"\S"
"""The pattern of text that must say something (search semantics, as JSON schema's).

A tool call does not carry it: grammars read patterns on the raw JSON text
(:func:`personae.llm_endpoint.tool_call_schema`), so there the schema says ``minLength: 1``
and validation applies the pattern."""


def non_blank(description: str) -> Any:
    """A required string field that is not empty nor only spaces."""
    return Field(min_length=1, pattern=NON_BLANK, description=description)


def one_of(values: Sequence[Any]) -> Any:
    """``Literal[values...]``: the type whose JSON schema is an enum of exactly these values."""
    if not values:
        raise ValueError("an enum needs at least one value")
    return Literal[tuple(values)]


def bounded(low: int, high: int, description: str | None = None, *, tenths: bool = False) -> Any:
    """A number field within ``low..high`` whose schema also lists every allowed value.

    Tool-call grammars (llama.cpp, Ollama) ignore ``minimum``/``maximum`` but enforce an
    ``enum``, so the bounds the code relies on reach the model as the values ``low..high``
    (integers, or every tenth with ``tenths``: a score with one decimal). Validation keeps the
    bounds, so a model that was not constrained may still answer 2.35.
    """
    if high < low:
        raise ValueError(f"no number lies in {low}..{high}")
    values: list[Any] = (
        [n / 10 for n in range(low * 10, high * 10 + 1)] if tenths else list(range(low, high + 1))
    )
    return Field(ge=low, le=high, description=description, json_schema_extra={"enum": values})


def list_of(item: Any) -> Any:
    """``list[item]`` for an item type built at run time (an enum of this call's ids)."""
    return list.__class_getitem__(item)


BuilderT = TypeVar("BuilderT", bound=Callable[..., Any])


def per_call_schema(maxsize: int) -> Callable[[BuilderT], BuilderT]:
    """Memoise a schema builder (the same ids give the same class) and register its clear.

    The classes depend only on the builder's arguments, but :func:`personae.testing.reset_runtime`
    still empties them, as it does every process-global cache (``tests/core/test_process_caches``).
    """

    def decorate(build: BuilderT) -> BuilderT:
        cached = functools.lru_cache(maxsize=maxsize)(build)
        clears_on_reset(f"{build.__module__}.{build.__qualname__}", cached.cache_clear)
        return cached  # type: ignore[return-value]

    return decorate


CLOSED = ConfigDict(json_schema_extra={"additionalProperties": False})
"""Keys beyond the ones listed are ignored when parsing, and the schema says none may be given."""


@per_call_schema(maxsize=256)
def keyed_answers(
    name: str, doc: str, keys: tuple[str, ...], value: Any, description: str
) -> type[BaseModel]:
    """A model with one required field per key: each id of the call answered exactly once.

    ``keys`` are the ids as the prompt shows them (``"A1"``, ``"3"``); ``value`` the type of
    each answer; ``description`` says what one answer is (``{key}`` is replaced by the key).
    Read answers with :func:`answers_by_key`.
    """
    if not keys:
        raise ValueError(f"{name} needs at least one key")
    fields: dict[str, Any] = {
        key: (value, Field(description=description.format(key=key))) for key in keys
    }
    return create_model(name, __config__=CLOSED, __doc__=doc, **fields)


def answers_by_key(answer: BaseModel) -> dict[str, Any]:
    """``{key: answer}`` of a :func:`keyed_answers` model."""
    return {key: getattr(answer, key) for key in type(answer).model_fields}


async def ask_in_batch_or_alone(
    keys: Sequence[KeyT],
    ask: Callable[[Sequence[KeyT]], Awaitable[tuple[Mapping[KeyT, ValueT], LLMUsage]]],
) -> tuple[dict[KeyT, ValueT], LLMUsage]:
    """``ask(keys)`` once; if still invalid after its retries, ``ask([key])`` for each key.

    A batch of verdicts that fails degrades into one call per item, so one item the model
    cannot answer costs only itself. Keys whose own call is still invalid are left out of
    the answers (the caller keeps them unchecked, or drops them, per its method) and counted
    in ``usage.degraded``; the usage of the failed calls is counted too.
    """
    try:
        answers, usage = await ask(keys)
        return dict(answers), usage
    except InvalidAnswerError as failed:
        usage = failed.usage
        if len(keys) == 1:
            logger.warning("degraded one item: %s", failed)
            return {}, usage + LLMUsage(degraded=1)
    found: dict[KeyT, ValueT] = {}
    for key in keys:
        try:
            one, used = await ask([key])
        except InvalidAnswerError as alone:
            logger.warning("degraded one item: %s", alone)
            usage = usage + alone.usage + LLMUsage(degraded=1)
            continue
        found.update(one)
        usage = usage + used
    return found, usage


def exactly(count: int, description: str = "") -> Any:
    """A list field of exactly ``count`` items (``minItems`` = ``maxItems``)."""
    return Field(min_length=count, max_length=count, description=description or None)


def numbered(items: Sequence[ModelT], field: str, start: int = 0) -> list[ModelT]:
    """``items`` with ``field`` set to their position (from ``start``): what the code knows."""
    return [item.model_copy(update={field: n}) for n, item in enumerate(items, start=start)]
