"""`bench bookmarks` on a terminal: a bar with instances done, of how many, and the ETA."""

from __future__ import annotations

import io

from rich.console import Console

from personae.evals.bookmarks.bench import RichProgress, SilentProgress, default_progress


def test_the_bar_counts_instances_and_shows_the_time_left() -> None:
    screen = io.StringIO()
    progress = RichProgress(Console(file=screen, force_terminal=True, width=120))
    progress.start(total=4, skipped=2)
    record = {"method": "bookmarks", "artifact": "haruhi", "character": "Kyon"}
    progress.advance(record)
    progress.note("resumed from results.jsonl")
    progress.close()
    drawn = screen.getvalue()
    assert "bookmarks haruhi Kyon" in drawn  # the instance that just finished
    assert "1/4" in drawn  # instances done of the total
    assert "0:00:0" in drawn or "-:--:--" in drawn  # the time-remaining column
    assert "personae: resumed from results.jsonl" in drawn


def test_no_bar_when_stderr_is_not_a_terminal() -> None:
    # pytest captures stderr, so it is not a TTY here: logs stay clean.
    assert type(default_progress()) is SilentProgress
