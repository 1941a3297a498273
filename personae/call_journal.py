"""A step's journal of finished LLM answers, so a resumed step pays only for calls in flight.

Why beside the checkpoint: LangGraph's checkpoint keeps finished nodes and finished ``Send``
tasks, but one task can be tens of calls (a behavioral sync checks every action of the
character since the bookmark's position, one call each). The journal keeps each answer as it
arrives; a rerun of the same interrupted step asks the same prompts and finds them here.

Scoped to one step (:mod:`personae.graphs.bookmarks.step_checkpoints` gives each interrupted step its own folder
and deletes it when the step finishes), so it never replaces a fresh sample in a later step.
Entries are keyed by the schema and a hash of the exact prompt, written atomically (a kill
never leaves a truncated entry), and hold the validated answer with the usage it cost, so the
resumed step's counters are those of a step that never died. A damaged entry is asked again.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from personae.files import write_json_atomic

logger = logging.getLogger(__name__)


def entry_key(kind: str, messages: Sequence[BaseMessage]) -> str:
    """SHA-256 of the answer kind (schema name or ``text``) and every message."""
    payload = {"kind": kind, "messages": [[m.type, m.content] for m in messages]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _path(folder: str, key: str) -> Path:
    return Path(folder) / f"{key}.json"


def read_entry(folder: str, key: str) -> dict[str, Any] | None:
    """The journaled ``{"answer": ..., "usage": {...}}`` for ``key``; ``None`` when absent."""
    path = _path(folder, key)
    if not path.is_file():
        return None
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        logger.info("journal entry unreadable, asking again: %s", error)
        return None
    return entry if isinstance(entry, dict) and "answer" in entry else None


def write_entry(folder: str, key: str, answer: Any, usage: dict[str, int]) -> None:
    """Journal one finished answer and what it cost."""
    write_json_atomic(_path(folder, key), {"answer": answer, "usage": usage})
