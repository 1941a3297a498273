"""The bookmark bank on real Chroma: ids, history, candidates, near, atomic saves, restarts."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from personae.errors import InputError
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import (
    AnswerVersion,
    Bookmark,
    BookmarkType,
    StateTransition,
)
from personae.memory.chroma import open_chroma
from personae.memory.embeddings import embed_text

B, C, S = BookmarkType.BEHAVIORAL, BookmarkType.CONCEPT, BookmarkType.STATE


@pytest.fixture
def bank(tmp_path: Path) -> BookmarkBank:
    # Chroma's in-memory client is one per process: a fresh directory isolates each test.
    return BookmarkBank.open("Poppin'Party", tmp_path / "db")


def test_create_assigns_sequential_ids_and_first_history(bank: BookmarkBank) -> None:
    a = bank.create(question="Who leads the band?", type=C, character="Kasumi", keyword="band")
    b = bank.create(
        question="Who leads the band now?",
        type=C,
        character="Arisa",
        answer="Kasumi",
        position=40,
        parent_id=a.id,
    )
    assert (a.id, b.id) == ("bm-0", "bm-1")
    assert bank.get(b.id).parent_id == "bm-0"
    assert [(v.position, v.answer) for v in bank.get(b.id).history] == [(40, "Kasumi")]
    assert bank.get("bm-0").keyword == "band" and len(bank) == 2
    with pytest.raises(KeyError):
        bank.get("bm-99")
    with pytest.raises(KeyError):
        bank.create(question="x y", type=C, character="Kasumi", parent_id="bm-42")
    with pytest.raises(InputError, match="non-empty question"):
        bank.create(question="  ", type=C, character="Kasumi")


def test_save_keeps_answer_history_and_never_leaks_later_answers(bank: BookmarkBank) -> None:
    bm = bank.create(question="Where is the band practising?", type=S, character="Kasumi")
    for position, answer in [
        (64, "in the storage room"),
        (128, "in the storage room"),
        (192, "at SPACE"),
    ]:
        bm.position, bm.answer = position, answer
        bank.save(bm)
    stored = bank.get(bm.id)
    assert [(v.position, v.answer) for v in stored.history] == [
        (0, ""),
        (64, "in the storage room"),
        (192, "at SPACE"),
    ]
    assert stored.answer_at(63) == "" and stored.answer_at(191) == "in the storage room"
    assert stored.answer_at(192) == "at SPACE" and bm.history == stored.history
    bm.answer = "on the roof"  # same position again: replaces that position's version
    bank.save(bm)
    assert bank.get(bm.id).history[-1].answer == "on the roof" and len(bank.get(bm.id).history) == 3
    bm.position = 100
    with pytest.raises(ValueError, match="only sync forward"):
        bank.save(bm)
    assert bank.get(bm.id).position == 192


def test_state_sync_over_several_chunks_keeps_each_chunk_answer(bank: BookmarkBank) -> None:
    bm = bank.create(question="Where is the band practising?", type=S, character="Kasumi")
    bm.position, bm.answer = 64, "in the storage room"
    bm.transitions = [StateTransition(position=64, operation="update", answer=bm.answer)]
    bank.save(bm)
    # One sync from 64 to 256 in three chunks: each chunk's answer becomes a version.
    bm.transitions += [
        StateTransition(position=128, operation="update", answer="at SPACE"),
        StateTransition(position=192, operation="no_change", answer="at SPACE"),
        StateTransition(position=256, operation="update", answer="on the roof"),
    ]
    bm.position, bm.answer = 256, "on the roof"
    bank.save(bm)
    stored = bank.get(bm.id)
    assert [(v.position, v.answer) for v in stored.history] == [
        (0, ""),
        (64, "in the storage room"),
        (128, "at SPACE"),
        (256, "on the roof"),
    ]
    assert stored.answer_at(127) == "in the storage room"
    assert stored.answer_at(200) == "at SPACE" and stored.answer_at(256) == "on the roof"


def test_failed_save_leaves_the_previous_bookmark_whole(
    bank: BookmarkBank, monkeypatch: pytest.MonkeyPatch
) -> None:
    bm = bank.create(
        question="What does Kasumi usually do when nervous?", type=B, character="Kasumi"
    )
    bm.position, bm.answer, bm.evidence = 50, "she sings", [12, 30]
    bank.save(bm)
    real_upsert = bank.collection.upsert

    def crash_midway(**kwargs: object) -> None:
        raise RuntimeError("disk full")  # the write never lands: simulate a crash in save

    monkeypatch.setattr(bank.collection, "upsert", crash_midway)
    changed = bank.get(bm.id)
    changed.position, changed.answer, changed.evidence = 90, "she hides", [12, 30, 77]
    with pytest.raises(RuntimeError):
        bank.save(changed)
    monkeypatch.setattr(bank.collection, "upsert", real_upsert)
    stored = bank.get(bm.id)
    assert (stored.position, stored.answer, stored.evidence) == (50, "she sings", [12, 30])
    assert [v.answer for v in stored.history] == ["", "she sings"]
    metadata = bank.collection.get(ids=[bm.id])["metadatas"]
    assert metadata is not None and metadata[0]["position"] == 50  # filter field agrees


def test_candidates_filter_by_type_sync_and_character_then_lexically(bank: BookmarkBank) -> None:
    make = bank.create
    kasumi_b = make(
        question="How does Kasumi react to a new song?", type=B, character="Kasumi", position=10
    )
    make(question="How does Arisa react to a new song?", type=B, character="Arisa", position=10)
    make(question="What song is the band rehearsing?", type=S, character="Kasumi", position=10)
    make(question="How does Kasumi react when songs fail?", type=B, character="Kasumi", position=99)
    make(question="What does she usually do on weekends?", type=B, character="Kasumi", position=5)
    found = bank.candidates(
        "How does Kasumi usually react to a song?", type=B, character="Kasumi", synced_by=50
    )
    assert [b.id for b in found] == [
        kasumi_b.id
    ]  # other character, later sync, no shared word: out
    state = bank.candidates("Which song is rehearsed now?", type=S, character="Arisa", synced_by=10)
    assert [b.question for b in state] == ["What song is the band rehearsing?"]
    assert bank.candidates("Which song?", type=C, character="Kasumi", synced_by=100) == []


def test_candidates_rank_by_shared_words_and_keep_top_k(bank: BookmarkBank) -> None:
    for i in range(8):
        bank.create(question=f"Where is the guitar number {i}?", type=C, character="Tae")
    best = bank.create(question="Where is the red guitar hidden?", type=C, character="Tae")
    found = bank.candidates("red guitar hidden where", type=C, character="Kasumi", synced_by=0, k=5)
    assert len(found) == 5 and found[0].id == best.id
    assert bank.candidates("red guitar", type=C, character="Tae", synced_by=0, k=0) == []
    empty = BookmarkBank(bank.client, "empty-storyline")
    assert empty.candidates("red guitar", type=C, character="Tae", synced_by=5) == []


def test_near_never_returns_later_or_other_characters_behavioral(bank: BookmarkBank) -> None:
    for position, character, kind in [
        (94, "Kasumi", S), (95, "Arisa", S), (97, "Arisa", B), (98, "Kasumi", B),
        (100, "Tae", C), (101, "Kasumi", S), (30, "Kasumi", S),
    ]:  # fmt: skip
        bank.create(question=f"q {position}", type=kind, character=character, position=position)
    near = bank.near(100, character="Kasumi", window=5)
    assert [b.position for b in near] == [100, 98, 95]
    assert all(b.position <= 100 for b in near)
    assert [b.position for b in bank.near(30, character="Kasumi", window=0)] == [30]
    assert bank.near(-1, character="Kasumi") == [] and bank.near(29, character="Kasumi") == []


def test_export_import_round_trip(bank: BookmarkBank, tmp_path: Path) -> None:
    bm = bank.create(question="Who is Saaya's friend?", type=C, character="Saaya", keyword="Saaya")
    bm.position, bm.answer = 20, "Kasumi"
    bank.save(bm)
    bank.export_json(tmp_path / "bank.json")
    data = json.loads((tmp_path / "bank.json").read_text())
    assert data["storyline"] == "Poppin'Party" and data["bookmarks"][0]["answer"] == "Kasumi"
    copy = BookmarkBank(bank.client, "copy")
    assert copy.import_bookmarks(Bookmark.model_validate(b) for b in data["bookmarks"]) == 1
    assert copy.get("bm-0").answer_at(19) == "" and copy.get("bm-0").answer_at(20) == "Kasumi"
    assert copy.create(question="next one", type=S, character="Saaya").id == "bm-1"
    with pytest.raises(InputError, match="bm-<n>"):
        copy.import_bookmarks([bm.model_copy(update={"id": "B1"})])


def test_collections_are_per_storyline_with_safe_names(tmp_path: Path) -> None:
    client = open_chroma(tmp_path / "db")
    one, two = BookmarkBank(client, "Pastel*Palettes"), BookmarkBank(client, "Poppin'Party")
    one.create(question="Who is Aya?", type=C, character="Aya")
    assert len(one) == 1 and len(two) == 0
    assert one.collection.name != two.collection.name and "*" not in one.collection.name


def test_a_scope_names_the_collection_and_the_storyline_stays_the_name(tmp_path: Path) -> None:
    client = open_chroma(tmp_path / "db")
    by_name = BookmarkBank(client, "Poppin'Party")
    by_name.create(question="Who is Aya?", type=C, character="Aya")
    scoped = BookmarkBank(client, "Poppin'Party", scope="Poppin'Party.0a1b2c")
    assert len(scoped) == 0 and scoped.collection.name != by_name.collection.name
    assert "'" not in scoped.collection.name and scoped.export()["storyline"] == "Poppin'Party"
    scoped.create(question="Who is Kasumi?", type=C, character="Kasumi")
    again = BookmarkBank.open("Poppin'Party", tmp_path / "db", scope="Poppin'Party.0a1b2c")
    assert [b.question for b in again.all()] == ["Who is Kasumi?"]


@pytest.mark.slow
def test_bank_survives_a_process_restart(tmp_path: Path) -> None:
    bank = BookmarkBank.open("haruhi", tmp_path / "bank")
    bm = bank.create(question="What is the SOS Brigade planning?", type=S, character="Kyon")
    bm.position, bm.answer = 64, "a baseball game"
    bank.save(bm)
    del bank
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from personae.memory.bookmarks.bank import BookmarkBank\n"
        "bank = BookmarkBank.open('haruhi', Path(sys.argv[1]))\n"
        "bm = bank.get('bm-0')\n"
        "bm.position, bm.answer = 128, 'a movie'\n"
        "bank.save(bm)\n"
        "new = bank.create(question='Who films the movie?', type='concept', character='Kyon')\n"
        "print(json.dumps([len(bank), new.id]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "bank")],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, "bm-1"]
    reopened = BookmarkBank.open("haruhi", tmp_path / "bank")
    stored = reopened.get("bm-0")
    assert stored.position == 128 and stored.answer_at(100) == "a baseball game"
    assert stored.answer_at(128) == "a movie"
    assert reopened.create(question="Who is Itsuki?", type=C, character="Kyon").id == "bm-2"


def test_threads_and_second_bank_objects_never_reuse_ids(bank: BookmarkBank) -> None:
    other = BookmarkBank(bank.client, "Poppin'Party")  # e.g. another character's run

    def make(target: BookmarkBank, who: str) -> list[str]:
        return [target.create(question=f"{who} q{i}", type=S, character=who).id for i in range(10)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = [pool.submit(make, target, who) for target, who in [(bank, "A"), (other, "B")] * 2]
        ids = [i for run in runs for i in run.result()]
    assert len(set(ids)) == 40 and len(bank) == 40
    assert {b.question.split()[0] for b in bank.all()} == {"A", "B"}


def test_tiered_candidate_pool_equals_the_filtered_chroma_query(bank: BookmarkBank) -> None:
    rng = random.Random(11)
    words = ["tea", "song", "club", "stage", "guitar", "rain", "school", "star", "cake", "drum"]
    people = ["Kasumi"] * 6 + ["Arisa", "Tae"]
    records = []
    for n in range(600):
        kind = [B, C, S][n % 3]
        question = f"What about {' and '.join(rng.sample(words, 3))} {n}?"
        position = rng.randrange(1000)
        record = Bookmark(
            id=f"bm-{n}", question=question, type=kind, character=rng.choice(people),
            position=position, history=[AnswerVersion(position=position, answer="")],
        )  # fmt: skip
        records.append(record)
    bank.import_bookmarks(records)
    for kind, who, synced_by in [(S, "Kasumi", 999), (C, "Tae", 120), (B, "Kasumi", 900),
                                 (B, "Tae", 999), (B, "Arisa", 40), (S, "Arisa", 5)]:  # fmt: skip
        vector = embed_text(f"{rng.choice(words)} {rng.choice(words)}")
        passing = [
            r for r in records
            if r.type is kind and r.position <= synced_by and (kind is not B or r.character == who)
        ]  # fmt: skip
        exact = sorted(passing, key=lambda r: 1.0 - float(vector @ embed_text(r.question)))[:50]
        scope = f"{kind}|{who}" if kind is B else str(kind)
        tiered = bank._nearest_passing(vector, scope, synced_by, 50)
        got = {b.id for b, _ in tiered}
        assert len(tiered) == len(exact), (kind, who, synced_by)
        assert all(b.id in {r.id for r in passing} for b, _ in tiered)  # never a filtered-out row
        # HNSW is approximate (Chroma's default search_ef): high recall, not bit-exactness
        assert len(got & {r.id for r in exact}) >= 0.9 * len(exact), (kind, who, synced_by)
        assert [d for _, d in tiered] == sorted(d for _, d in tiered)


def test_a_step_saves_new_and_synced_bookmarks_in_one_write(bank: BookmarkBank) -> None:
    old = bank.create(question="Where is Kasumi now?", type=S, character="Kasumi")
    new = bank.new(question="Who plays the guitar?", type=C, character="Kasumi", keyword="guitar")
    assert len(bank) == 1  # new() reserves an id and stores nothing
    new.answer, new.position = "Kasumi plays the guitar", 30
    new.transitions = [StateTransition(position=20, operation="update", answer="a guitar")]
    synced = old.model_copy(update={"answer": "on stage", "position": 30})
    stored = bank.save_step([synced, new], created=[new.id], at=30)
    assert [(b.id, b.position, b.answer) for b in stored] == [
        ("bm-0", 30, "on stage"),
        ("bm-1", 30, "Kasumi plays the guitar"),
    ]
    assert [(v.position, v.answer) for v in bank.get("bm-1").history] == [
        (0, ""),
        (20, "a guitar"),
        (30, "Kasumi plays the guitar"),
    ]
    assert [(v.position, v.answer) for v in bank.get("bm-0").history] == [(0, ""), (30, "on stage")]


def test_a_resumed_step_never_overwrites_another_bookmark_with_its_id(
    bank: BookmarkBank,
) -> None:
    pending = bank.new(question="Who plays the drums?", type=C, character="Saaya")
    # Another step took the same id meanwhile (ids are handed out again after a restart).
    taken = Bookmark(id=pending.id, question="Where is Arisa now?", type=S, character="Arisa")
    bank.import_bookmarks([taken])
    [stored] = bank.save_step([pending.model_copy(update={"position": 9})], created=[pending.id])
    assert stored.id != pending.id and stored.question == "Who plays the drums?"
    assert bank.get(pending.id).question == "Where is Arisa now?"
    # The same creation already stored (killed after its write) is updated, not duplicated.
    [again] = bank.save_step([stored.model_copy(update={"position": 12})], created=[stored.id])
    assert again.id == stored.id and bank.get(stored.id).position == 12 and len(bank) == 2
