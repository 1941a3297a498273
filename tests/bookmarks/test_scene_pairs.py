"""RICL's scene→action pair store: incremental index, position filter, persistence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from personae.memory.bookmarks.scene_pairs import ScenePairStore, scene_document
from personae.memory.bookmarks.storyline import Storyline, load_storyline, storyline_fingerprint

TOPICS = ("rain on the roof", "cake in the kitchen", "cards at the table", "boat on the lake")


def write_story(path: Path, size: int = 120) -> Storyline:
    """Alice acts every third action; the scene topics cycle every 12 actions."""
    rows = []
    for position in range(size):
        who = "Alice" if position % 3 == 0 else ("Bob" if position % 3 == 1 else "Other")
        topic = TOPICS[(position // 12) % len(TOPICS)]
        rows.append({"character": who, "action": f"{who} talks about the {topic} ({position})"})
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    return load_storyline(path)


@pytest.fixture
def story(tmp_path: Path) -> Storyline:
    """A 120-action storyline."""
    return write_story(tmp_path / "rainy.jsonl")


def alice_before(story: Storyline, target: int) -> list[int]:
    """Alice's positions that make a pair before ``target`` (position 0 has no scene)."""
    return [p for p in story.positions_of("Alice") if 0 < p < target]


def test_extend_indexes_only_pairs_before_the_target_and_moves_forward(
    story: Storyline, tmp_path: Path
) -> None:
    store = ScenePairStore.open(story, "Alice", tmp_path / "m")
    assert (store.indexed_until, len(store)) == (0, 0)
    assert store.extend(40) == len(alice_before(story, 40))
    assert store.indexed_until == 40
    assert store.extend(30) == 0  # an earlier target never shrinks or re-reads
    assert store.extend(40) == 0
    assert store.extend(70) == len(alice_before(story, 70)) - len(alice_before(story, 40))
    assert len(store) == len(alice_before(story, 70))
    stored = store.collection.get(include=["metadatas"])
    positions = sorted(int(str(m["position"])) for m in stored["metadatas"] or [])
    assert positions == alice_before(story, 70)


def test_similar_finds_the_pair_whose_scene_matches_and_filters_by_position(
    story: Storyline, tmp_path: Path
) -> None:
    store = ScenePairStore.open(story, "Alice", tmp_path / "m")
    store.extend(120)
    scene = story.scene(51)
    pairs = store.similar(scene, target=100, k=3)
    assert len(pairs) == 3
    assert [p.position for p in pairs] == sorted(p.position for p in pairs)
    best = min(pairs, key=lambda pair: pair.distance)
    assert best.position == 51 and best.distance == pytest.approx(0.0, abs=1e-5)
    assert best.scene == story.scene(51) and best.action.by("Alice")
    # An earlier target sees none of the pairs indexed for the later one.
    early = store.similar(scene, target=30, k=20)
    assert [p.position for p in early] == alice_before(story, 30)
    assert store.similar(scene, target=1, k=8) == []


def test_pair_line_shows_the_scene_then_the_action(story: Storyline, tmp_path: Path) -> None:
    store = ScenePairStore.open(story, "Alice", tmp_path / "m", scene_size=2)
    store.extend(10)
    (pair,) = [p for p in store.similar(story.scene(9, 2), 10, k=8) if p.position == 9]
    assert pair.line() == (
        "Scene: [7] (Bob) Bob talks about the rain on the roof (7) / "
        "[8] (Other) Other talks about the rain on the roof (8) → "
        "Action: [9] (Alice) Alice talks about the rain on the roof (9)"
    )
    assert scene_document(pair.scene) == (
        "(Bob) Bob talks about the rain on the roof (7)\n"
        "(Other) Other talks about the rain on the roof (8)"
    )


def test_exact_scan_replaces_a_short_approximate_answer(
    story: Storyline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ScenePairStore.open(story, "Alice", tmp_path / "m")
    store.extend(120)
    expected = store.similar(story.scene(75), 90, k=5)

    def short_answer(**_: Any) -> dict[str, Any]:
        return {"metadatas": [[]], "distances": [[]]}

    monkeypatch.setattr(store.collection, "query", short_answer)
    fallback = store.similar(story.scene(75), 90, k=5)
    assert [p.position for p in fallback] == [p.position for p in expected]
    assert max(p.position for p in fallback) < 90


def test_the_index_survives_fresh_store_objects(story: Storyline, tmp_path: Path) -> None:
    first = ScenePairStore.open(story, "Alice", tmp_path / "m", scope="v1")
    first.extend(60)
    found = [p.position for p in first.similar(story.scene(80), 60, k=4)]
    second = ScenePairStore.open(story, "Alice", tmp_path / "m", scope="v1")
    assert second.indexed_until == 60
    assert len(second) == len(alice_before(story, 60))
    assert [p.position for p in second.similar(story.scene(80), 60, k=4)] == found
    second.extend(90)
    assert first.indexed_until == 90  # the mark is re-read, never trusted from a stale object
    assert first.extend(90) == 0


def test_scopes_and_characters_keep_separate_collections(story: Storyline, tmp_path: Path) -> None:
    alice = ScenePairStore.open(story, "Alice", None, scope="rainy.aaa")
    alice.extend(60)
    bob = ScenePairStore.open(story, "Bob", None, scope="rainy.aaa")
    other_version = ScenePairStore.open(story, "Alice", None, scope="rainy.bbb")
    assert bob.indexed_until == 0 and other_version.indexed_until == 0
    bob.extend(60)
    assert all(story.actions[p.position].by("Bob") for p in bob.similar(story.scene(59), 60))


def test_fingerprint_changes_with_the_text(tmp_path: Path) -> None:
    one = write_story(tmp_path / "a.jsonl")
    same = write_story(tmp_path / "b.jsonl")
    assert storyline_fingerprint(one) == storyline_fingerprint(same)
    rows = (tmp_path / "a.jsonl").read_text(encoding="utf-8").replace("(5)", "(five)")
    (tmp_path / "c.jsonl").write_text(rows, encoding="utf-8")
    assert storyline_fingerprint(load_storyline(tmp_path / "c.jsonl")) != storyline_fingerprint(one)


@pytest.mark.slow
def test_the_index_survives_a_process_restart(story: Storyline, tmp_path: Path) -> None:
    store = ScenePairStore.open(story, "Alice", tmp_path / "m", scope="v1")
    store.extend(90)
    found = [p.position for p in store.similar(story.scene(100), 90, k=5)]
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from personae.memory.bookmarks.scene_pairs import ScenePairStore\n"
        "from personae.memory.bookmarks.storyline import load_storyline\n"
        "story = load_storyline(sys.argv[1])\n"
        "store = ScenePairStore.open(story, 'Alice', Path(sys.argv[2]), scope='v1')\n"
        "pairs = store.similar(story.scene(100), 90, k=5)\n"
        "print(json.dumps([store.indexed_until, len(store), [p.position for p in pairs]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "rainy.jsonl"), str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        90,
        len(alice_before(story, 90)),
        found,
    ]
