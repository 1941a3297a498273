"""The bench report says when the bookmarks method kept no question, instead of "no run"."""

from __future__ import annotations

from typing import Any

from personae.evals.bookmarks.report import hit_rate_section


def step(position: int, reuse: int, derive: int, new: int, dropped: int = 0) -> dict[str, Any]:
    stats = {"reuse": reuse, "derive": derive, "new": new, "questions_dropped": dropped}
    where = {"artifact": "haruhi", "method": "bookmarks", "character": "Kyon"}
    return {**where, "position": position, "stats": stats}


def test_all_steps_without_questions_are_named_as_such() -> None:
    svg, note = hit_rate_section([step(500, 0, 0, 0, dropped=5), step(510, 0, 0, 0)])
    assert svg == ""
    assert note.startswith("The bookmarks method kept no question in any of its 2 steps")
    assert "No bookmarks run" not in note


def test_some_steps_without_questions_are_counted_beside_the_plot() -> None:
    svg, note = hit_rate_section([step(500, 0, 0, 5), step(510, 0, 0, 0), step(520, 3, 1, 1)])
    assert "<svg" in svg
    assert note.endswith("1 of 3 steps kept no question and are left out of the plot.")


def test_no_bookmarks_records_at_all() -> None:
    vanilla = {**step(500, 0, 0, 0), "method": "vanilla", "stats": {}}
    assert hit_rate_section([vanilla])[1].startswith("No bookmarks run is present")
