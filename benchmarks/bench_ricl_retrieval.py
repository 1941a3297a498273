"""RICL retrieval quality for each embedding, on one shared storyline.

Run: uv run python benchmarks/bench_ricl_retrieval.py [--embeddings hashing local openai:M]
     [--storyline FILE] [--limit N]

For every major character's test instances (the second half of their actions, story order) of
../shared/data/bookmarks/title2action_series.haruhi.json, RICL's pair store retrieves the 8 past
scene→action pairs of the character whose scenes are closest to the current scene (the real
``ScenePairStore`` on Chroma, only pairs before the target). Printed per embedding, beside two
references that use no embedding (the 8 most recent pairs, 8 random earlier pairs):

- next-action recall: share of the true next action's content words (character names left out:
  every action names its actor) found in the 8 retrieved actions, mean over instances;
- similar situation: share of retrieved pairs whose scene has the same other characters present
  as the current scene (Jaccard >= 0.5 over the characters of the scene's actions);
- index and query time per pair / query.

``openai:<model>`` needs ``OPENAI_BASE_URL`` (or ``OPENAI_API_KEY``); figures are printed, never
asserted. Only ``hashing`` and ``local`` run offline.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from personae.errors import PersonaeError
from personae.memory.bookmarks.lexical import content_tokens
from personae.memory.bookmarks.scene_pairs import ScenePairStore
from personae.memory.bookmarks.storyline import SCENE_SIZE, StoryAction, Storyline, load_storyline
from personae.memory.embeddings import open_embedding

HARUHI = (
    Path(__file__).resolve().parents[1].parent
    / "shared/data/bookmarks/title2action_series.haruhi.json"
)
K = 8
Retriever = Callable[[str, int], list[int]]


def others(scene: Sequence[StoryAction], character: str) -> frozenset[str]:
    return frozenset(n for a in scene for n in a.characters if n not in (character, "Other"))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


class Scorer:
    """Scores the pair positions a method retrieved for (character, target)."""

    def __init__(self, storyline: Storyline) -> None:
        self.storyline = storyline
        self.names = frozenset(w for c in storyline.characters for w in content_tokens(c))

    def words(self, position: int) -> frozenset[str]:
        return content_tokens(self.storyline.actions[position].text) - self.names

    def score(self, character: str, target: int, pairs: list[int]) -> tuple[float, float]:
        truth = self.words(target)
        found = frozenset().union(*(self.words(p) for p in pairs)) if pairs else frozenset()
        recall = len(truth & found) / len(truth) if truth else 0.0
        now = others(self.storyline.scene(target, SCENE_SIZE), character)
        similar = [
            jaccard(now, others(self.storyline.scene(p, SCENE_SIZE), character)) >= 0.5
            for p in pairs
        ]
        return recall, (sum(similar) / len(similar) if similar else 0.0)


def own_pairs(storyline: Storyline, character: str, target: int) -> list[int]:
    return [p for p in storyline.positions_of(character) if 0 < p < target]


def run_method(
    name: str,
    storyline: Storyline,
    todo: list[tuple[int, str]],
    scorer: Scorer,
    retrieve: Retriever,
) -> None:
    recalls, situations, times = [], [], []
    for target, character in todo:
        start = time.perf_counter()
        pairs = retrieve(character, target)
        times.append((time.perf_counter() - start) * 1000)
        assert all(p < target for p in pairs), f"{name}: a pair at or after {target}"
        recall, similar = scorer.score(character, target, pairs)
        recalls.append(recall)
        situations.append(similar)
    print(
        f"{name:28} next-action recall {statistics.mean(recalls):6.1%}   similar situation "
        f"{statistics.mean(situations):6.1%}   {statistics.median(times):7.1f} ms/query (p50)"
    )


def embedding_retriever(spec: str, storyline: Storyline, memory: Path) -> Retriever:
    embedding = open_embedding(spec)
    stores: dict[str, ScenePairStore] = {}
    indexed = [0.0, 0]

    def retrieve(character: str, target: int) -> list[int]:
        if character not in stores:
            stores[character] = ScenePairStore.open(
                storyline, character, memory, embedding=embedding
            )
        store = stores[character]
        start = time.perf_counter()
        indexed[1] += store.extend(target)
        indexed[0] += time.perf_counter() - start
        return [p.position for p in store.similar(storyline.scene(target, SCENE_SIZE), target, K)]

    retrieve.indexed = indexed  # type: ignore[attr-defined]
    return retrieve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--storyline", type=Path, default=HARUHI)
    parser.add_argument("--embeddings", nargs="+", default=["hashing", "local"])
    parser.add_argument("--limit", type=int, default=0, help="test instances (0: all)")
    args = parser.parse_args()
    if not args.storyline.is_file():
        print(f"{args.storyline} is absent (../shared only exists on developer machines); skipped")
        return
    print("$ " + " ".join(["python", *sys.argv]))
    storyline = load_storyline(args.storyline)
    majors = storyline.major_characters or storyline.characters[:1]
    todo = sorted((p, c) for c in majors for p in storyline.test_split(c)[1])
    todo = todo[: args.limit] if args.limit else todo
    print(
        f"{storyline.name}: {len(storyline.actions)} actions, {len(todo)} test instances of "
        f"{', '.join(majors)}; top {K} pairs, scenes of {SCENE_SIZE} actions"
    )
    scorer = Scorer(storyline)
    rng = random.Random(11)
    run_method(
        "recent 8 (no embedding)",
        storyline,
        todo,
        scorer,
        lambda c, t: own_pairs(storyline, c, t)[-K:],
    )
    run_method(
        "random 8 (no embedding)",
        storyline,
        todo,
        scorer,
        lambda c, t: sorted(
            rng.sample(own_pairs(storyline, c, t), min(K, len(own_pairs(storyline, c, t))))
        ),
    )
    for spec in args.embeddings:
        with tempfile.TemporaryDirectory() as memory:
            try:
                retrieve = embedding_retriever(spec, storyline, Path(memory))
                run_method(f"embedding {spec}", storyline, todo, scorer, retrieve)
            except PersonaeError as error:
                print(f"embedding {spec:18} skipped: {error}")
                continue
            seconds, pairs = retrieve.indexed  # type: ignore[attr-defined]
            print(
                f"{'':28} indexed {pairs} pairs in {seconds:.1f} s ({seconds / max(1, pairs) * 1000:.1f} ms/pair)"
            )


if __name__ == "__main__":
    main()
