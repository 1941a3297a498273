"""The bank at scale: exact candidates from the in-process index, cheap writes, bounded records."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from personae.memory.bookmarks.bank import HISTORY_KEPT, BookmarkBank
from personae.memory.bookmarks.bank_index import BankIndex, IndexedBookmark, forget_bank_indexes
from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType
from personae.memory.bookmarks.lexical import content_tokens, lexical_filter
from personae.memory.embeddings import embed_text

S, B = BookmarkType.STATE, BookmarkType.BEHAVIORAL


def test_candidates_equal_an_exact_search_of_every_record(tmp_path: Path) -> None:
    rng = random.Random(5)
    words = ["tea", "song", "club", "stage", "guitar", "rain", "school", "star", "cake", "drum"]
    records = [
        Bookmark(
            id=f"bm-{n}", question=f"What about {' and '.join(rng.sample(words, 3))} {n}?",
            type=[S, B][n % 2], character=rng.choice(["Kasumi", "Arisa"]),
            position=rng.randrange(500), answer=f"a{n}",
            history=[AnswerVersion(position=0, answer=f"a{n}")],
        )
        for n in range(400)
    ]  # fmt: skip
    bank = BookmarkBank.open("club", tmp_path / "m")
    bank.import_bookmarks(records)
    forget_bank_indexes()  # a fresh process: the index is filled from Chroma
    bank = BookmarkBank.open("club", tmp_path / "m")
    for kind, who, synced_by in [(S, "Kasumi", 499), (B, "Arisa", 250), (B, "Kasumi", 30)]:
        question = f"What about {rng.choice(words)} and {rng.choice(words)}?"
        passing = [
            r for r in records
            if r.type is kind and r.position <= synced_by and (kind is S or r.character == who)
        ]  # fmt: skip
        vector = embed_text(question)
        pool = sorted(passing, key=lambda r: 1.0 - float(vector @ embed_text(r.question)))[:50]
        expected = lexical_filter(question, pool, lambda r: r.question, k=5)
        found = bank.candidates(question, type=kind, character=who, synced_by=synced_by)
        assert {b.id for b in found} == {r.id for r in expected}, (kind, who, synced_by)
        assert all(b.answer.startswith("a") for b in found)  # whole records, read back
    # A step's questions searched together find what each finds alone; one matrix product for
    # several queries may round differently in the last float32 digit, so an exact tie (same
    # shared words, same distance) may come back in the other order.
    asked = [(f"What about {w} and {v}?", k, c) for w, v in zip(words[:7], words[3:], strict=True)
             for k, c in
             [(S, "Kasumi"), (B, "Arisa"), (B, "Kasumi")]]  # fmt: skip
    together = bank.candidates_many(asked, synced_by=300)
    alone = [bank.candidates(q, type=k, character=c, synced_by=300) for q, k, c in asked]
    assert sum(map(len, together)) > 20
    for (question, _, _), one, other in zip(asked, together, alone, strict=True):
        assert ranks(question, one) == ranks(question, other), question


def ranks(question: str, found: list[Bookmark]) -> list[tuple[int, float]]:
    """Each candidate's (shared content words, distance to 1e-5): equal lists = same ranks."""
    wanted = content_tokens(question)
    vector = embed_text(question).astype(np.float64)
    return [
        (len(wanted & content_tokens(b.question)),
         round(1.0 - float(vector @ embed_text(b.question).astype(np.float64)), 5))
        for b in found
    ]  # fmt: skip


def test_writes_read_nothing_back_and_ids_survive_a_restart(tmp_path: Path) -> None:
    bank = BookmarkBank.open("club", tmp_path / "m")
    bank.candidates("fill the index", type=S, character="Kasumi", synced_by=0)  # one scan
    reads: list[Any] = []
    real_get = bank.collection.get

    def counting_get(*args: Any, **kwargs: Any) -> Any:
        reads.append(kwargs.get("ids"))
        return real_get(*args, **kwargs)

    object.__setattr__(bank.collection, "get", counting_get)
    first = bank.create(question="Where is Kasumi?", type=S, character="Kasumi")
    child = bank.create(
        question="Where is Kasumi now?", type=S, character="Kasumi", parent_id=first.id
    )
    child.answer, child.position = "on stage", 12
    bank.save(child)
    assert bank.get(child.id).answer_at(12) == "on stage"
    assert reads == []  # no read-before-write, no counter round trip
    forget_bank_indexes()  # a restart: ids continue past every stored one
    again = BookmarkBank.open("club", tmp_path / "m")
    assert again.create(question="Who plays?", type=S, character="Arisa").id == "bm-2"


def test_long_histories_stay_bounded_and_lose_nothing(tmp_path: Path) -> None:
    bank = BookmarkBank.open("club", tmp_path / "m")
    bookmark = bank.create(question="What is Kasumi doing?", type=S, character="Kasumi")
    for step in range(1, 3 * HISTORY_KEPT + 5):
        bookmark.answer, bookmark.position = f"answer {step}", 10 * step
        bank.save(bookmark)
    stored = bank.collection.get(ids=[bookmark.id], include=["metadatas"])["metadatas"]
    assert stored is not None
    record = json.loads(str(stored[0]["record"]))
    assert len(record["history"]) <= 2 * HISTORY_KEPT and record["archived"]
    latest = bank.get(bookmark.id)
    assert latest.answer_at(10 * (3 * HISTORY_KEPT + 4)) == f"answer {3 * HISTORY_KEPT + 4}"
    assert latest.answer_at(15) == ""  # not held inline: unknown, never a later answer
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from personae.memory.bookmarks.bank import BookmarkBank\n"
        "bank = BookmarkBank.open('club', Path(sys.argv[1]))\n"
        "print(bank.get('bm-0', at=15).answer_at(15), '|', bank.get('bm-0', at=0).answer_at(0))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "m")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "answer 1 |"  # archived versions come back after a restart


@pytest.mark.parametrize("synced_by", [0, 5, 100])
def test_near_reads_positions_from_the_index(tmp_path: Path, synced_by: int) -> None:
    bank = BookmarkBank.open("club", tmp_path / "m")
    for position in (0, 3, 5, 6, 100):
        made = bank.create(question=f"Q at {position}?", type=S, character="Kasumi")
        made.position = position
        bank.save(made)
    near = bank.near(synced_by, character="Kasumi", window=5)
    positions = [b.position for b in near]
    assert positions == sorted(
        (p for p in (0, 3, 5, 6, 100) if synced_by - 5 <= p <= synced_by), reverse=True
    )


def test_a_repeated_query_reuses_its_products_and_sees_every_change() -> None:
    rng = np.random.default_rng(3)

    def row(number: int, position: int, vector: np.ndarray | None = None) -> IndexedBookmark:
        v = rng.standard_normal(16).astype(np.float32) if vector is None else vector
        return IndexedBookmark(
            f"bm-{number}", "state", position, f"q{number}", v / np.linalg.norm(v)
        )

    def fresh(rows: dict[str, IndexedBookmark], query: np.ndarray, by: int) -> list[str]:
        index = BankIndex()
        index.put(rows.values())
        return [r.id for r, _ in index.nearest(query, "state", by, 10)]

    rows = {f"bm-{n}": row(n, n % 50) for n in range(200)}
    index = BankIndex()
    index.put(rows.values())
    query = row(999, 0).vector
    assert [r.id for r, _ in index.nearest(query, "state", 40, 10)] == fresh(rows, query, 40)
    added = {f"bm-{n}": row(n, n % 50) for n in range(200, 260)}  # new rows: only they are computed
    moved = {"bm-3": row(3, 45, rows["bm-3"].vector)}  # a position moves on, same vector
    changed = {"bm-7": row(7, 1, query)}  # a vector replaced: the cached products are void
    for update in (added, moved, changed):
        rows.update(update)
        index.put(update.values())
        for by in (10, 40, 49):
            assert [r.id for r, _ in index.nearest(query, "state", by, 10)] == fresh(
                rows, query, by
            )
    assert index.nearest(query, "state", 49, 10)[0][0].id == "bm-7"
