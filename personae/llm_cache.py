"""On-disk cache of structured LLM calls, so rerunning an evaluation costs no model call.

Beside :mod:`personae.llm` (not in ``evals/``) because the roles in ``agents/`` that judge and
extract use it, and folders import downward only. An evaluation makes hundreds of judge calls; rerunning it to compare a new profile against the
same reference, or after an interruption, must not pay for them again. Answers are keyed by the
model name, the schema and a hash of the exact prompt, and stored one JSON file per answer,
written atomically (a crash never leaves a truncated entry; concurrent runs at worst write the
same answer twice). Only the validated answer is stored: code-side filtering reruns on a hit.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ValidationError

from personae.files import write_json_atomic
from personae.llm import LLMUsage, call_structured

logger = logging.getLogger(__name__)

SchemaT = TypeVar("SchemaT", bound=BaseModel)

CACHE_VERSION = 1
"""Bumped when the key recipe or entry shape changes, so old entries are simply not found."""


@functools.cache
def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A schema's JSON schema, built once: every cached call hashes it."""
    return schema.model_json_schema()


def prompt_key(model_name: str, schema: type[BaseModel], messages: Sequence[BaseMessage]) -> str:
    """SHA-256 of the model name, the schema (name and JSON schema) and every message."""
    payload = {
        "version": CACHE_VERSION,
        "model": model_name,
        "schema": schema.__name__,
        "json_schema": _json_schema(schema),
        "messages": [[m.type, m.content] for m in messages],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class LLMCallCache:
    """Structured answers on disk under ``directory``; ``None`` disables caching.

    ``hits`` and ``misses`` count lookups, so a report can show that a rerun was free.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, schema: type[SchemaT]) -> SchemaT | None:
        """The cached answer for ``key``; ``None`` if absent, unreadable or no longer valid."""
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            return schema.model_validate(entry["answer"])
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as error:
            logger.info("judge cache entry unreadable, asking again: %s", error)
            return None  # a stale or damaged entry is re-asked, never trusted

    def put(self, key: str, model_name: str, answer: BaseModel) -> None:
        """Store ``answer`` for ``key`` atomically."""
        path = self._path(key)
        if path is not None:
            entry = {"model": model_name, "answer": answer.model_dump(mode="json")}
            write_json_atomic(path, entry)

    async def call_structured(
        self,
        model: BaseChatModel,
        model_name: str,
        schema: type[SchemaT],
        messages: Sequence[BaseMessage],
        *,
        check: Callable[[SchemaT], None] | None = None,
    ) -> tuple[SchemaT, LLMUsage]:
        """``personae.llm.call_structured`` with a cache in front; a hit costs no call.

        A cached answer is re-validated with ``schema`` and ``check``; one that fails is asked
        again (the prompt or the checks changed since it was stored).
        """
        key = prompt_key(model_name, schema, messages)
        cached = self.get(key, schema)
        if cached is not None:
            try:
                if check is not None:
                    check(cached)
            except ValueError:
                cached = None
        if cached is not None:
            self.hits += 1
            return cached, LLMUsage()
        self.misses += 1
        answer, usage = await call_structured(model, schema, messages, check=check)
        self.put(key, model_name, answer)
        return answer, usage
