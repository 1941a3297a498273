"""On-disk cache of judge verdicts, so a rerun or a re-report never pays for a judgement twice.

Keyed by (judge, judge model, prediction, truth): everything the judge prompt depends on (the
character name is part of the prompt but is implied by the truth text in practice, and a
different character with identical texts would be judged identically anyway). SQLite gives
atomic single-row writes, so a crash never leaves a broken cache.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from personae.agents.action_judge import Verdict, judge_action
from personae.llm import LLMUsage

_SCHEMA = """CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    judge_model TEXT NOT NULL,
    score INTEGER NOT NULL,
    label TEXT NOT NULL,
    reason TEXT NOT NULL
)"""


def verdict_key(judge: str, judge_model: str, prediction: str, truth: str) -> str:
    """Stable hash of the cache key fields."""
    payload = json.dumps([judge, judge_model, prediction.strip(), truth.strip()])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeStore:
    """A SQLite table of verdicts; ``path=None`` keeps it in memory (tests, one-off runs)."""

    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            ":memory:" if path is None else str(path), check_same_thread=False
        )
        with self._lock, self._db:
            self._db.execute(_SCHEMA)

    def get(self, judge: str, judge_model: str, prediction: str, truth: str) -> Verdict | None:
        """The cached verdict, or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT score, label, reason FROM verdicts WHERE key = ?",
                (verdict_key(judge, judge_model, prediction, truth),),
            ).fetchone()
        return None if row is None else Verdict(int(row[0]), str(row[1]), str(row[2]))

    def put(
        self, judge: str, judge_model: str, prediction: str, truth: str, verdict: Verdict
    ) -> None:
        """Store ``verdict`` (one committed row)."""
        key = verdict_key(judge, judge_model, prediction, truth)
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?)",
                (key, judge, judge_model, verdict.score, verdict.label, verdict.reason),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        self._db.close()


class CachedJudge:
    """One judge protocol with one model, answering from the store when it can."""

    def __init__(
        self, store: JudgeStore, model: BaseChatModel, model_name: str, judge: str
    ) -> None:
        self.store = store
        self.model = model
        self.model_name = model_name
        self.judge = judge

    async def __call__(
        self, *, character: str, prediction: str, truth: str
    ) -> tuple[Verdict, LLMUsage]:
        """The verdict for ``prediction`` vs ``truth``; usage is zero for a cached verdict."""
        cached = self.store.get(self.judge, self.model_name, prediction, truth)
        if cached is not None:
            return cached, LLMUsage()
        verdict, usage = await judge_action(
            self.model, self.judge, character=character, prediction=prediction, truth=truth
        )
        self.store.put(self.judge, self.model_name, prediction, truth, verdict)
        return verdict, usage
