"""One store of LLM answers on disk: the judges' cache, ARCANE's cache and a step's journal.

Why one: an evaluation makes hundreds of judge calls and ARCANE thousands of role-play and
probe calls; rerunning them (to compare a new method against the same reference, after an
interruption) must not pay for them again. A BOOKMARKS step killed mid-way must likewise find
the answers it had finished. These were three stores with three key recipes that drifted
apart (one hashed the schema, one did not; none held the sampling), so answers leaked between
prompts that only looked alike. Now there is one recipe and one entry shape:

- the key is a SHA-256 of the store version, the model's name, its sampling settings, the
  answer kind (``text``, or the schema's name and JSON schema), an optional scope (a run mode
  whose prompts may coincide with another's, e.g. ARCANE's Vanilla and TimeChara) and every
  message (type and content);
- an entry is one JSON file ``<directory>/<key[:2]>/<key>.json`` holding the model name, the
  answer and the usage it cost, written atomically (a kill never leaves a torn entry;
  concurrent runs at worst write the same answer twice);
- an entry is read back through the caller's validation (schema, code-side checks): one that
  no longer validates is a miss, logged, and asked again;
- hits and misses are counted, so a report can show that a rerun was free.

A cache (``PERSONAE_CACHE_DIR/judge``, ``PERSONAE_CACHE_DIR/arcane``) answers a hit at no cost;
the step journal (``<memory>/.step_calls/<thread>/``, see
:mod:`personae.graphs.bookmarks.step_checkpoints`) is the same store with
``replay_usage=True``: a hit comes back with the usage it first cost, so a resumed step's
counters are those of a step that never died. The model calls themselves go through
:func:`personae.llm.call_structured` and :func:`personae.llm.call_text` (``store=``), which
sit above this module.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ValidationError

from personae.files import remove_stale_temporaries, write_json_atomic
from personae.process_caches import clears_on_reset

logger = logging.getLogger(__name__)

T = TypeVar("T")

STORE_VERSION = 2
"""Bumped when the key recipe or the entry shape changes, so old entries are simply not found."""

SAMPLING_FIELDS = (
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "max_tokens",
    "max_completion_tokens",
    "frequency_penalty",
    "presence_penalty",
    "n",
    "stop",
    "reasoning_effort",
    "model_kwargs",
    "extra_body",
)
"""Model attributes that change what a model answers: part of every key when set."""

INVALID_ENTRY = (OSError, ValueError, KeyError, TypeError, ValidationError)
"""What reading or validating an entry may raise: the entry is then a miss."""


def sampling_of(model: Any) -> dict[str, Any]:
    """The sampling settings ``model`` carries (unset and empty ones left out)."""
    found = {name: getattr(model, name, None) for name in SAMPLING_FIELDS}
    return {name: value for name, value in found.items() if value not in (None, {}, [])}


def model_name_of(model: Any) -> str:
    """The name a model answers to (its ``model_name``/``model`` field, else its class)."""
    for name in ("model_name", "model"):
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


@functools.cache
def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A schema's JSON schema, built once: every stored structured call hashes it."""
    return schema.model_json_schema()


clears_on_reset("personae.answer_store.json_schemas", _json_schema.cache_clear)


@functools.cache
def _swept(directory: Path) -> int:
    """Stale temporaries removed from ``directory`` (the first store opened on it sweeps)."""
    return remove_stale_temporaries(directory) if directory.is_dir() else 0


clears_on_reset("personae.answer_store.swept_folders", _swept.cache_clear)


def answer_key(
    model_name: str,
    sampling: Mapping[str, Any],
    schema: type[BaseModel] | None,
    messages: Sequence[BaseMessage],
    scope: str = "",
) -> str:
    """SHA-256 of the one key recipe (``schema=None``: a free-text answer)."""
    kind: Any = "text"
    if schema is not None:
        kind = {"schema": schema.__name__, "json_schema": _json_schema(schema)}
    payload = {
        "version": STORE_VERSION,
        "model": model_name,
        "sampling": dict(sampling),
        "kind": kind,
        "scope": scope,
        "messages": [[m.type, m.content] for m in messages],
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Counts:
    """Lookups of a store and of every scoped view of it."""

    hits: int = 0
    misses: int = 0


@dataclass(frozen=True)
class AnswerStore:
    """LLM answers on disk under ``directory`` (``None``: nothing stored, every lookup a miss).

    ``replay_usage``: a hit reports the usage the answer first cost (the step journal) rather
    than none (a cache). ``scope``: keys of this view differ from every other scope's.
    """

    directory: Path | None
    replay_usage: bool = False
    scope: str = ""
    _counts: _Counts = field(default_factory=_Counts, repr=False, compare=False)

    @classmethod
    def journal(cls, folder: str | Path) -> AnswerStore:
        """The step journal in ``folder``: a hit replays what the answer cost."""
        return cls(Path(folder), replay_usage=True)

    @property
    def hits(self) -> int:
        """Lookups answered from the store (this store and its scoped views)."""
        return self._counts.hits

    @property
    def misses(self) -> int:
        """Lookups that had to ask the model."""
        return self._counts.misses

    def scoped(self, scope: str) -> AnswerStore:
        """A view whose keys never meet another scope's; counts are shared with this store."""
        return AnswerStore(self.directory, self.replay_usage, scope, self._counts)

    def key(
        self,
        model_name: str,
        sampling: Mapping[str, Any],
        schema: type[BaseModel] | None,
        messages: Sequence[BaseMessage],
    ) -> str:
        """This store's key for one call (:func:`answer_key` with the store's scope)."""
        return answer_key(model_name, sampling, schema, messages, self.scope)

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / key[:2] / f"{key}.json"

    def _read(self, key: str, validate: Callable[[Any], T]) -> tuple[T, dict[str, int]] | None:
        if self.directory is not None:
            # What a killed writer left is removed at the first lookup (once per folder and
            # process), here in the reading thread: a store is built inside async nodes.
            _swept(self.directory.resolve())
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            answer = validate(entry["answer"])
            usage = {str(k): int(v) for k, v in (entry.get("usage") or {}).items()}
        except INVALID_ENTRY as error:
            # The prompt's schema or checks changed since it was stored, or the file was
            # damaged by hand: asked again, never trusted.
            logger.info("stored answer %s no longer valid, asking again: %s", path, error)
            return None
        return answer, usage

    async def find(self, key: str, validate: Callable[[Any], T]) -> tuple[T, dict[str, int]] | None:
        """The stored answer for ``key`` passed through ``validate``, and what it first cost.

        ``validate`` turns the stored JSON into the answer and raises (``ValueError``,
        ``ValidationError``, ``TypeError``) when it no longer holds: that is a miss. The file is
        read in a thread, off the event loop. A miss is counted here; a hit also.
        """
        found = await asyncio.to_thread(self._read, key, validate)
        if found is None:
            self._counts.misses += 1
            return None
        self._counts.hits += 1
        return found

    async def keep(self, key: str, model_name: str, answer: Any, usage: Mapping[str, int]) -> None:
        """Store one answer (JSON) and what it cost, atomically, in a thread."""
        path = self._path(key)
        if path is not None:
            entry = {"model": model_name, "answer": answer, "usage": dict(usage)}
            await asyncio.to_thread(write_json_atomic, path, entry)
