"""The paper's lexical filter: shared non-stop-word tokens decide, then vector distance."""

from __future__ import annotations

from personae.memory.bookmarks.lexical import (
    content_tokens,
    lexical_filter,
    shared_tokens,
    tokens,
)


def test_tokens_fold_case_possessives_and_punctuation() -> None:
    assert tokens("Haruhi's SOS-Brigade, Mikuru\u2019s tea!") == [
        "haruhi", "sos", "brigade", "mikuru", "tea",
    ]  # fmt: skip
    assert content_tokens("What does Kyon usually do when he is bored?") == {"kyon", "bored"}


def test_shared_tokens_ignore_stop_words() -> None:
    assert shared_tokens("What is the plan?", "Who is the leader?") == frozenset()
    assert shared_tokens("Where is Yuki's book?", "Yuki reads a book") == {"yuki", "book"}


def test_lexical_filter_drops_unrelated_and_ranks_by_overlap_then_distance() -> None:
    items = [
        ("What is the weather like?", 0.1),
        ("Where does Yuki read?", 0.5),
        ("Where does Yuki read her book?", 0.9),
        ("What book does Yuki read?", 0.3),
        ("Yuki", 0.2),
    ]
    kept = lexical_filter(
        "Which book does Yuki read?", items, lambda i: i[0], k=3, distance_of=lambda i: i[1]
    )
    assert [text for text, _ in kept] == [
        "What book does Yuki read?",  # 3 shared, closer
        "Where does Yuki read her book?",  # 3 shared, farther
        "Where does Yuki read?",  # 2 shared
    ]
    assert lexical_filter("the a of", items, lambda i: i[0], k=5) == []
