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

from personae.memory.bookmarks import bank as bank_module
from personae.memory.bookmarks import bank_index_file
from personae.memory.bookmarks.bank import COLLECTION_PREFIX, HISTORY_KEPT, BookmarkBank
from personae.memory.bookmarks.bank_index import (
    BankIndex,
    IndexedBookmark,
    Texts,
    forget_bank_indexes,
)
from personae.memory.bookmarks.bank_index_file import IndexFile
from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType
from personae.memory.bookmarks.lexical import content_tokens, lexical_filter
from personae.memory.chroma import open_chroma, open_collection, safe_collection_name
from personae.memory.embeddings import embed_text, open_embedding

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
    forget_bank_indexes()  # a restart in this process: the archive is read from Chroma again
    again = BookmarkBank.open("club", tmp_path / "m")
    assert again.get("bm-0", at=15).answer_at(15) == "answer 1"
    assert again.get("bm-0", at=0).answer_at(0) == ""


@pytest.mark.slow  # a second Python process
def test_archived_versions_come_back_in_a_new_process(tmp_path: Path) -> None:
    bank = BookmarkBank.open("club", tmp_path / "m")
    bookmark = bank.create(question="What is Kasumi doing?", type=S, character="Kasumi")
    for step in range(1, 3 * HISTORY_KEPT + 5):
        bookmark.answer, bookmark.position = f"answer {step}", 10 * step
        bank.save(bookmark)
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


def _club_records(count: int, seed: int = 5) -> list[Bookmark]:
    rng = random.Random(seed)
    words = ["tea", "song", "club", "stage", "guitar", "rain", "school", "star", "cake", "drum"]
    return [
        Bookmark(
            id=f"bm-{n}", question=f"What about {' and '.join(rng.sample(words, 3))} {n % 7}?",
            type=[S, B][n % 2], character=rng.choice(["Kasumi", "Arisa"]),
            position=rng.randrange(500), answer=f"a{n}",
            history=[AnswerVersion(position=0, answer=f"a{n}")],
        )
        for n in range(count)
    ]  # fmt: skip


QUERIES = [
    ("What about tea and song?", S, "Kasumi", 499),
    ("What about the guitar on stage?", B, "Arisa", 250),
    ("What about rain at school?", B, "Kasumi", 120),
    ("Drum and cake?", S, "Arisa", 60),
]


def _found(bank: BookmarkBank) -> list[list[str]]:
    return [
        [b.id for b in bank.candidates(q, type=k, character=c, synced_by=by)]
        for q, k, c, by in QUERIES
    ]


def _reopened(path: Path) -> tuple[BookmarkBank, list[Any]]:
    """The bank as a new process opens it, and every read it makes of Chroma."""
    forget_bank_indexes()
    bank = BookmarkBank.open("club", path)
    scans: list[Any] = []
    real_get = bank.collection.get

    def counting_get(*args: Any, **kwargs: Any) -> Any:
        scans.append(kwargs.get("offset", "by id"))
        return real_get(*args, **kwargs)

    object.__setattr__(bank.collection, "get", counting_get)
    return bank, scans


def test_the_index_file_is_loaded_and_a_stale_or_missing_one_rebuilt_from_chroma(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = BookmarkBank.open("club", tmp_path / "m")
    bank.import_bookmarks(_club_records(300))
    moved = bank.get("bm-3")
    moved.answer, moved.position = "moved on", 480  # a logged write after the snapshot
    bank.save(moved)
    expected = _found(bank)
    assert sum(map(len, expected)) >= 10
    files = sorted(p.name for p in (tmp_path / "m/bank-index").iterdir())
    assert sorted(f.rsplit(".", 1)[-1] for f in files) == ["jsonl", "npz", "records"]

    # A new process loads the files: nothing, not even the winners, is read from Chroma.
    loaded, reads = _reopened(tmp_path / "m")
    assert _found(loaded) == expected and reads == []
    assert len(loaded._index()) == 300 and loaded.get("bm-3").position == 480

    # Missing files: rebuilt from Chroma, same candidates, written again.
    for file in (tmp_path / "m/bank-index").iterdir():
        file.unlink()
    rebuilt, reads = _reopened(tmp_path / "m")
    assert _found(rebuilt) == expected and reads
    assert {p.suffix for p in (tmp_path / "m/bank-index").iterdir()} == {".npz", ".records"}
    assert [r.id for r in rebuilt._index().rows()] == [r.id for r in loaded._index().rows()]

    # A write the log missed (a crash between Chroma and the log): the files are stale.
    monkeypatch.setattr(IndexFile, "append", lambda *args, **kwargs: False)
    late = rebuilt.create(question="What about tea and song now?", type=S, character="Kasumi")
    monkeypatch.undo()
    stale, reads = _reopened(tmp_path / "m")
    again = _found(stale)
    assert reads and late.id in again[0]
    assert again[1:] == expected[1:]

    # A damaged snapshot is rebuilt too, never trusted or fatal.
    snapshot = next((tmp_path / "m/bank-index").glob("*.npz"))
    snapshot.write_bytes(snapshot.read_bytes()[:200])
    damaged, reads = _reopened(tmp_path / "m")
    assert _found(damaged) == again and reads


def _mapped(array: np.ndarray) -> bool:
    owner: Any = array
    while not isinstance(owner, np.memmap) and isinstance(owner, np.ndarray):
        owner = owner.base
    return isinstance(owner, np.memmap)


def test_a_loaded_snapshot_maps_its_vectors_and_never_writes_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loaded vectors are mapped from the snapshot (a process holds only the pages it reads);
    a row written in place changes the process's copy, never the file."""
    rng = np.random.default_rng(4)

    def row(number: int, position: int) -> IndexedBookmark:
        v = rng.standard_normal(16).astype(np.float32)
        return IndexedBookmark(
            f"bm-{number}", "state", position, f"q{number}", v / np.linalg.norm(v)
        )

    index = BankIndex()
    index.put([row(n, n % 30) for n in range(300)])
    index.stamp = "s1"
    files = IndexFile(tmp_path, "bank", "c1")
    files.save(index, "hashing", "c1")
    before = files.snapshot_path.read_bytes()
    loaded = BankIndex()
    assert files.load(loaded, bank_index_file.Expected("c1", "hashing", "s1"))
    head = loaded._scopes["state"].head
    assert _mapped(head) and head.flags.aligned
    query = row(999, 0).vector
    assert [(r.id, d) for r, d in loaded.nearest(query, "state", 20, 10)] == [
        (r.id, d) for r, d in index.nearest(query, "state", 20, 10)
    ]
    original = [r.id for r, _ in index.nearest(query, "state", 29, 10)]
    moved = IndexedBookmark("bm-5", "state", 5, "q5", query)  # same slot, a new vector
    for changed in (index, loaded):
        changed.put([moved])
        assert changed.nearest(query, "state", 20, 1)[0][0].id == "bm-5"
    assert [r.id for r, _ in loaded.nearest(query, "state", 29, 10)] == [
        r.id for r, _ in index.nearest(query, "state", 29, 10)
    ]
    assert files.snapshot_path.read_bytes() == before
    # A snapshot whose matrices are not aligned (written before they were) is read instead.
    monkeypatch.setattr(bank_index_file, "ALIGNMENT", 1 << 40)
    read = BankIndex()
    assert files.load(read, bank_index_file.Expected("c1", "hashing", "s1"))
    assert not _mapped(read._scopes["state"].head)
    assert [r.id for r, _ in read.nearest(query, "state", 29, 10)] == original


def test_the_sorted_index_stays_exact_under_any_sequence_of_writes() -> None:
    """Positions moving on and back, scope changes, replaced vectors, exact ties, re-sorts."""
    rng = np.random.default_rng(8)
    pool = rng.standard_normal((6, 16)).astype(np.float32)  # few vectors: many exact ties
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    rows: dict[str, IndexedBookmark] = {}
    index = BankIndex()
    for round_ in range(40):
        batch = []
        for _ in range(int(rng.integers(1, 120))):
            number = int(rng.integers(0, 400))
            old = rows.get(f"bm-{number}")
            position = (
                int(rng.integers(0, 300))
                if old is None or rng.random() < 0.2
                else (old.position + int(rng.integers(0, 40)))
            )
            scope = "state" if rng.random() < 0.9 else "concept"
            vector = pool[int(rng.integers(0, len(pool)))]
            row = IndexedBookmark(f"bm-{number}", scope, position, f"q{number}", vector)
            rows[row.id] = row
            batch.append(row)
        index.put(batch)
        query = pool[round_ % len(pool)]
        for synced_by in (0, 50, 150, 299, 400):
            passing = [r for r in rows.values() if r.scope == "state" and r.position <= synced_by]
            exact = sorted(
                passing,
                key=lambda r: (round(1.0 - float(r.vector @ query), 5), int(r.id[3:])),
            )[:10]
            found = index.nearest(query, "state", synced_by, 10)
            assert [r.id for r, _ in found] == [r.id for r in exact], (round_, synced_by)
            assert all(r.position == rows[r.id].position for r, _ in found)
    assert len(index) == len(rows)


def test_a_bank_made_before_vectors_moved_to_the_metadata_keeps_its_embeddings(
    tmp_path: Path,
) -> None:
    """Older collections hold real Chroma embeddings: they are read and written that way."""
    client = open_chroma(tmp_path / "m")
    name = safe_collection_name("club", prefix=COLLECTION_PREFIX)
    open_collection(client, name, open_embedding("hashing"), {"storyline": "club"})
    old = BookmarkBank(client, "club", index_dir=tmp_path / "m/bank-index")
    old.import_bookmarks(_club_records(60))
    stored = old.collection.get(ids=["bm-5"], include=["embeddings", "metadatas"])
    assert stored["embeddings"] is not None and len(stored["embeddings"][0]) == 384
    assert stored["metadatas"] and "vector" not in stored["metadatas"][0]
    expected = _found(old)
    for file in (tmp_path / "m/bank-index").iterdir():
        file.unlink()
    forget_bank_indexes()
    again = BookmarkBank(client, "club", index_dir=tmp_path / "m/bank-index")
    assert _found(again) == expected  # rebuilt from the embeddings Chroma holds
    assert np.allclose(again.stored_vectors(["bm-5"])[0], embed_text(again.get("bm-5").question))


def test_old_record_versions_are_dropped_from_the_records_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bank_index_file, "REWRITE_SLACK", 0)
    bank = BookmarkBank.open("club", tmp_path / "m")
    bank.import_bookmarks(_club_records(40))
    for step in range(1, 4):
        synced = [bank.get(f"bm-{n}") for n in range(40)]
        for bookmark in synced:
            bookmark.answer, bookmark.position = f"step {step}", 500 + step
        bank.save_step(synced)
    records = next((tmp_path / "m/bank-index").glob("*.records"))
    grown = records.stat().st_size
    with bank_module._WRITE_LOCK:
        bank._save_index(bank._index())
    (rewritten,) = (tmp_path / "m/bank-index").glob("*.records")
    assert rewritten != records and rewritten.stat().st_size < grown / 3
    again, reads = _reopened(tmp_path / "m")
    assert [again.get(f"bm-{n}").answer for n in (0, 39)] == ["step 3", "step 3"]
    assert again.get("bm-7").answer_at(501) == "step 1" and reads == []


def _bank_in(path: Path, *, files: bool = True) -> BookmarkBank:
    """The bank as a new process opens it: with its index files, or as the server path does."""
    forget_bank_indexes()
    return BookmarkBank(open_chroma(path), "club", index_dir=path / "bank-index" if files else None)


def test_a_bank_of_the_metadata_layout_is_upgraded_on_open_with_the_same_candidates(
    tmp_path: Path,
) -> None:
    """Banks written before issue 30 kept each vector in their metadata (base64) beside the
    index files' copy; opened with their files, they are rewritten to keep it once."""
    old = _bank_in(tmp_path / "m", files=False)  # a bank without files is still made that way
    assert old.collection.metadata["personae_vectors"] == "metadata"
    old.import_bookmarks(_club_records(400))
    moved = old.get("bm-3")
    moved.answer, moved.position = "moved on", 480
    old.save(moved)
    expected = _found(old)
    stored = old.collection.get(ids=["bm-3"], include=["metadatas", "documents"])
    assert stored["metadatas"] and "vector" in stored["metadatas"][0]
    database = tmp_path / "m/chroma.sqlite3"
    before = database.stat().st_size

    upgraded = _bank_in(tmp_path / "m")
    assert upgraded.collection.metadata["personae_vectors"] == "index"
    metadata = upgraded.collection.get(ids=["bm-3"], include=["metadatas"])["metadatas"]
    assert metadata and sorted(metadata[0]) == ["position", "record", "scope"]
    assert _found(upgraded) == expected and upgraded.get("bm-3").answer == "moved on"
    assert database.stat().st_size < before / 2  # the freed pages given back (VACUUM)
    assert upgraded.upgrade() == 0  # once

    # A new process loads the files (nothing read from Chroma); without them, the questions
    # are embedded again: the same vectors, the same candidates.
    loaded, reads = _reopened(tmp_path / "m")
    assert _found(loaded) == expected and reads == []
    for file in (tmp_path / "m/bank-index").iterdir():
        file.unlink()
    rebuilt, reads = _reopened(tmp_path / "m")
    assert _found(rebuilt) == expected and reads
    assert np.allclose(
        rebuilt.stored_vectors(["bm-3"])[0], embed_text(rebuilt.get("bm-3").question)
    )


def test_an_upgrade_cut_short_is_finished_at_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _bank_in(tmp_path / "m", files=False)
    old.import_bookmarks(_club_records(300))
    expected = _found(old)
    monkeypatch.setattr(bank_module, "_PAGE", 100)
    real_update = old.collection.update
    pages: list[int] = []

    def dying_update(*args: Any, **kwargs: Any) -> None:
        pages.append(len(kwargs["ids"]))
        if len(pages) == 2:
            raise RuntimeError("killed")
        real_update(*args, **kwargs)

    forget_bank_indexes()
    cut = BookmarkBank(old.client, "club")  # the collection object the upgrade will write
    object.__setattr__(cut.collection, "update", dying_update)
    cut._file = IndexFile(tmp_path / "m/bank-index", cut.collection.name, str(cut.collection.id))
    with pytest.raises(RuntimeError, match="killed"):
        cut.upgrade()
    half = old.collection.get(include=["metadatas"])["metadatas"] or []
    assert 0 < sum("vector" not in m for m in half) < len(half)  # some records rewritten
    assert old.collection.metadata["personae_vectors"] == "metadata"

    # Rebuilt from a half-upgraded collection: the records without a vector are embedded.
    for file in (tmp_path / "m/bank-index").iterdir():
        file.unlink()
    again = _bank_in(tmp_path / "m")
    assert again.collection.metadata["personae_vectors"] == "index"
    assert _found(again) == expected


def test_a_stale_index_is_rebuilt_embedding_only_the_questions_it_does_not_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = _bank_in(tmp_path / "m")
    bank.import_bookmarks(_club_records(300))
    monkeypatch.setattr(IndexFile, "append", lambda *args, **kwargs: False)  # the log missed it
    late = bank.create(question="What about the drum solo tonight?", type=S, character="Kasumi")
    monkeypatch.undo()
    embedded: list[str] = []
    embedding = type(bank.embedding)
    real_embed = embedding.embed

    def counting(self: Any, texts: Any) -> Any:
        embedded.extend(texts)
        return real_embed(self, texts)

    monkeypatch.setattr(embedding, "embed", counting)
    stale, reads = _reopened(tmp_path / "m")
    found = stale.candidates(late.question, type=S, character="Kasumi", synced_by=0)
    assert reads and [b.id for b in found][:1] == [late.id]
    assert embedded.count(late.question) == 2  # rebuilt (not in the stale files), then asked
    assert len(embedded) == 2


def test_stored_vectors_of_an_unknown_id_raise(tmp_path: Path) -> None:
    bank = _bank_in(tmp_path / "m")
    bank.import_bookmarks(_club_records(5))
    assert bank.stored_vectors(["bm-1", "bm-4"]).shape == (2, 384)
    with pytest.raises(KeyError, match="bm-9"):
        bank.stored_vectors(["bm-1", "bm-9"])


def test_a_metadata_layout_bank_with_its_index_files_is_upgraded_from_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As written before issue 30: the metadata layout, with index files (snapshot and log)."""
    _bank_in(tmp_path / "m", files=False)  # makes the collection in the metadata layout
    with monkeypatch.context() as before_issue_30:
        before_issue_30.setattr(BookmarkBank, "upgrade", lambda self: 0)
        old = _bank_in(tmp_path / "m")
        old.import_bookmarks(_club_records(300))
        moved = old.get("bm-3")
        moved.answer, moved.position = "moved on", 480
        old.save(moved)  # logged after the snapshot
        expected = _found(old)
    assert old.collection.metadata["personae_vectors"] == "metadata"
    assert sorted(p.suffix for p in (tmp_path / "m/bank-index").iterdir()) == [
        ".jsonl",
        ".npz",
        ".records",
    ]
    upgraded, reads = _reopened(tmp_path / "m")
    assert upgraded.collection.metadata["personae_vectors"] == "index"
    assert _found(upgraded) == expected and upgraded.get("bm-3").answer == "moved on"
    assert not any(
        "vector" in m for m in upgraded.collection.get(include=["metadatas"])["metadatas"] or []
    )


def test_a_loaded_snapshot_keeps_ids_and_questions_joined_and_edits_them_exactly(
    tmp_path: Path,
) -> None:
    """A loaded scope holds its ids and questions as one joined text each (not a string
    object per row: 17 MiB at 100,000 bookmarks); reads, appends and edits stay exact."""
    rng = np.random.default_rng(9)

    def row(number: int, scope: str, position: int, question: str) -> IndexedBookmark:
        v = rng.standard_normal(8).astype(np.float32)
        return IndexedBookmark(f"bm-{number}", scope, position, question, v / np.linalg.norm(v))

    questions = {n: f"Who is ünïcode {n}?" if n % 7 == 0 else f"q{n}" for n in range(200)}
    index = BankIndex()
    index.put([row(n, ["state", "concept"][n % 2], n % 40, questions[n]) for n in range(200)])
    index.stamp = "s1"
    files = IndexFile(tmp_path, "bank", "c1")
    files.save(index, "hashing", "c1")
    loaded = BankIndex()
    assert files.load(loaded, bank_index_file.Expected("c1", "hashing", "s1"))
    for name in ("state", "concept"):
        scope = loaded._scopes[name]
        assert isinstance(scope.ids, Texts) and isinstance(scope.questions, Texts)
        assert not scope.ids._added and not scope.questions._added  # nothing split at load
    assert [(r.id, r.question, r.position) for r in loaded.rows()] == [
        (r.id, r.question, r.position) for r in index.rows()
    ]
    for changed in (index, loaded):  # an edited question, a new row, a moved one
        changed.put([row(14, "state", 39, "edited 14"), row(500, "concept", 3, "new 500")])
        changed.put([row(7, "concept", 2, "moved back 7")])
    assert loaded.get("bm-14").question == "edited 14"  # type: ignore[union-attr]
    assert loaded.get("bm-500").question == "new 500"  # type: ignore[union-attr]
    assert [(r.id, r.question) for r in loaded.rows()] == [(r.id, r.question) for r in index.rows()]
    assert loaded.synced_questions("concept", 39) == index.synced_questions("concept", 39)
    texts = loaded._scopes["concept"].questions
    assert list(texts) == [texts[i] for i in range(len(texts))] == texts[:]
    assert texts[-2:] == ["new 500", "moved back 7"]  # appended in write order
