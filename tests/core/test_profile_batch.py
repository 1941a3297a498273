"""Batch de-duplication: similar names of one franchise are one character, across franchises not."""

from __future__ import annotations

from personae.profile_batch import BatchRow, deduplicate


def test_similar_names_of_one_franchise_are_dropped_as_duplicates() -> None:
    hokuto = "Fist of the North Star"
    rows = [
        BatchRow("Kenshiro", hokuto),
        BatchRow("Raoh", hokuto),
        BatchRow("Kenshirō", "fist of the north star"),
        BatchRow("Kenshiro", "Kenshiro Remake"),
        BatchRow("Toki"),
        BatchRow("toki", ""),
    ]
    kept, dropped = deduplicate(rows)
    assert kept == [rows[0], rows[1], rows[3], rows[4]]
    assert dropped == [(rows[2], rows[0]), (rows[5], rows[4])]
