"""The released BOOKMARKS runner's ranking and span functions, re-implemented from its source.

KomeijiForce/BOOKMARKS_Koishiday_2026, ``src/bookmarks/bookmarks.py`` (``STOPWORDS``,
``normalize_query``, ``overlap_rate``, ``find_supporting_bookmark``'s ranking,
``build_merge_rank_spans``, ``update_concept_bookmark``'s keyword block): the reference the
paper's method is compared with, shared by ``tests/bookmarks/test_released_runner.py`` and
``benchmarks/bench_released_runner.py`` (one copy, so the two cannot disagree).
"""

from __future__ import annotations

import re
from typing import Any

STOPWORDS = set(
    "a an the is are was were be being been do does did done to of in on at by for with about "
    "from into through during before after above below up down out off over under and or but "
    "if then else when while as what which who whom whose where why how this that these those "
    "it its he she they them their there now current currently right usually generally tend "
    "tends".split()
)
"""bookmarks.py, ``STOPWORDS``."""


def normalize_query(query: str) -> list[str]:
    """bookmarks.py, ``normalize_query``."""
    tokens = re.findall(r"\b\w+\b", query.lower())
    return [token for token in tokens if token not in STOPWORDS]


def overlap_rate(query_a: str, query_b: str) -> float:
    """bookmarks.py, ``overlap_rate``."""
    tokens_a = set(normalize_query(query_a))
    tokens_b = set(normalize_query(query_b))
    if not tokens_a or not tokens_b:
        return 0.0
    return len(tokens_a & tokens_b) / max(1, min(len(tokens_a), len(tokens_b)))


def runner_candidates(
    new: dict[str, Any], bookmarks: list[dict[str, Any]], topk: int = 5
) -> list[int]:
    """bookmarks.py, ``find_supporting_bookmark``: the indices it asks, in order."""
    scored_candidates = []
    for idx, old in enumerate(bookmarks):
        if old["tag"] != new["tag"] or old["index"] == 0:
            continue
        if new["tag"] == "behavioral" and new["character"] != old["character"]:
            continue
        scored_candidates.append((overlap_rate(new["query"], old["query"]), idx))
    scored_candidates.sort(reverse=True)
    return [idx for _, idx in scored_candidates[:topk]]


def build_merge_rank_spans(indices: list[int], radius: int) -> list[list[int]]:
    """bookmarks.py, ``build_merge_rank_spans``."""
    uniq = sorted(set(indices))
    if not uniq:
        return []
    originals = [(max(0, idx - radius), idx + radius + 1, idx) for idx in uniq]
    cur_s, cur_e, cur_count, cur_rep = originals[0][0], originals[0][1], 1, originals[0][2]
    merged = []
    for s, e, idx in originals[1:]:
        if s < cur_e:
            cur_e = max(cur_e, e)
            cur_count += 1
            cur_rep = min(cur_rep, idx)
        else:
            merged.append((cur_s, cur_e, cur_count, cur_rep))
            cur_s, cur_e, cur_count, cur_rep = s, e, 1, idx
    merged.append((cur_s, cur_e, cur_count, cur_rep))
    merged.sort(key=lambda x: (-x[2], -x[3]))
    return [[s, e] for s, e, _, _ in merged]


def runner_appearance(action_seq: list[dict[str, Any]], keyword: str, start_index: int = 0) -> str:
    """bookmarks.py, ``update_concept_bookmark``: the ``keyword_appearance`` block (radius 8,
    top 8)."""
    indices = [
        idx
        for idx, item in enumerate(action_seq[start_index:], start=start_index)
        if keyword.lower() in item["action"].lower()
    ]
    chunks = [
        "\n".join(item["action"] for item in action_seq[start:end])
        for start, end in build_merge_rank_spans(indices, 8)[:8]
    ]
    return "\n---\n".join(chunks)
