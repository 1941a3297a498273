"""ETA's profile store: exact-key lookups, atomic JSON files, fresh objects see stored data."""

from __future__ import annotations

from pathlib import Path

from personae.memory.bookmarks.eta_profile_store import ChunkFacts, ETAProfile, ETAProfileStore


def test_chunks_and_profiles_round_trip_through_fresh_objects(tmp_path: Path) -> None:
    store = ETAProfileStore.open(tmp_path, "Poppin'Party.abc123")
    store.save_chunk_facts("Kasumi", ChunkFacts(0, 64, ("Kasumi loves stars",)))
    store.save_profile(ETAProfile("Kasumi", 80, ("Kasumi is cheerful",), ((0, 64), (64, 80))))
    fresh = ETAProfileStore.open(tmp_path, "Poppin'Party.abc123")
    assert fresh.chunk_facts("Kasumi", 0, 64) == ChunkFacts(0, 64, ("Kasumi loves stars",))
    assert fresh.chunk_facts("Kasumi", 0, 48) is None  # bounds are part of the key
    assert fresh.chunk_facts("Arisa", 0, 64) is None
    profile = fresh.profile("Kasumi", 80)
    assert profile == ETAProfile("Kasumi", 80, ("Kasumi is cheerful",), ((0, 64), (64, 80)))
    assert fresh.profile("Kasumi", 96) is None
    names = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json"))
    assert len(names) == 2 and all(n.startswith("eta/Poppin_Party.abc123_") for n in names)
    assert not list(tmp_path.rglob("*.tmp"))


def test_in_process_store_keeps_data_per_object() -> None:
    store = ETAProfileStore.open(None, "story.v1")
    store.save_profile(ETAProfile("Alice", 16, (), ((0, 16),)))
    assert store.profile("Alice", 16) == ETAProfile("Alice", 16, (), ((0, 16),))
    assert ETAProfileStore.open(None, "story.v1").profile("Alice", 16) is None


def test_unreadable_or_inconsistent_files_count_as_missing(tmp_path: Path) -> None:
    store = ETAProfileStore.open(tmp_path, "story.v1")
    store.save_profile(ETAProfile("Alice", 32, ("x",), ((0, 32),)))
    (path,) = tmp_path.rglob("profile-32.json")
    path.write_text("{not json", encoding="utf-8")
    assert store.profile("Alice", 32) is None
    # A profile claiming chunks past its rebuild point is never served.
    path.write_text(
        '{"rebuild_point": 32, "statements": ["x"], "chunks": [[0, 48]]}', encoding="utf-8"
    )
    assert store.profile("Alice", 32) is None
