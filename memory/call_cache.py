"""On-disk cache of LLM answers for ARCANE's many calls: a rerun pays for nothing twice.

Keyed by the model's cache name, the answer kind (schema name or ``text``) and a SHA-256 of
every message; one JSON file per answer, written atomically. Hits and misses are counted so
commands can say what a rerun cost. ``directory=None`` disables caching.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ValidationError

from personae.files import write_json_atomic
from personae.llm import LLMUsage, call_structured, call_text

SchemaT = TypeVar("SchemaT", bound=BaseModel)


def call_key(model_name: str, kind: str, messages: Sequence[BaseMessage]) -> str:
    """SHA-256 of the model name, the answer kind and every message."""
    payload = {
        "model": model_name,
        "kind": kind,
        "messages": [[m.type, m.content] for m in messages],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class CallCache:
    """Answers on disk under ``directory`` (``None``: no cache); counts hits and misses."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / key[:2] / f"{key}.json"

    def _get(self, key: str) -> Any:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))["answer"]
        except (OSError, ValueError, KeyError):
            return None

    def _put(self, key: str, answer: Any) -> None:
        path = self._path(key)
        if path is not None:
            write_json_atomic(path, {"answer": answer})

    async def text(
        self, model: BaseChatModel, model_name: str, messages: Sequence[BaseMessage]
    ) -> tuple[str, LLMUsage]:
        """``call_text`` behind the cache."""
        return await self._cached_text(model_name, messages, lambda: call_text(model, messages))

    async def _cached_text(
        self,
        model_name: str,
        messages: Sequence[BaseMessage],
        call: Callable[[], Awaitable[tuple[str, LLMUsage]]],
    ) -> tuple[str, LLMUsage]:
        key = call_key(model_name, "text", messages)
        cached = await asyncio.to_thread(self._get, key)  # file I/O off the event loop
        if isinstance(cached, str):
            self.hits += 1
            return cached, LLMUsage()
        self.misses += 1
        answer, usage = await call()
        await asyncio.to_thread(self._put, key, answer)
        return answer, usage

    async def structured(
        self,
        model: BaseChatModel,
        model_name: str,
        schema: type[SchemaT],
        messages: Sequence[BaseMessage],
        *,
        check: Callable[[SchemaT], None] | None = None,
    ) -> tuple[SchemaT, LLMUsage]:
        """``call_structured`` behind the cache; a cached answer is re-validated and re-checked."""
        key = call_key(model_name, schema.__name__, messages)
        cached = await asyncio.to_thread(self._get, key)  # file I/O off the event loop
        if cached is not None:
            try:
                answer = schema.model_validate(cached)
                if check is not None:
                    check(answer)
                self.hits += 1
                return answer, LLMUsage()
            except (ValueError, ValidationError):
                pass
        self.misses += 1
        answer, usage = await call_structured(model, schema, messages, check=check)
        await asyncio.to_thread(self._put, key, answer.model_dump(mode="json"))
        return answer, usage
