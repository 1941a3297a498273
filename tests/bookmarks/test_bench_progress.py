"""`bench bookmarks` progress: on a terminal a bar with instances done, of how many, and the ETA;
in a log (stderr not a terminal) one plain line per instance."""

from __future__ import annotations

import io

from rich.console import Console

from personae.evals.bookmarks.bench import LineProgress, RichProgress, default_progress


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


def test_a_log_gets_one_plain_line_per_instance() -> None:
    # pytest captures stderr, so it is not a TTY here: no bar, lines.
    assert type(default_progress()) is LineProgress
    log = io.StringIO()
    progress = LineProgress(log)
    progress.start(total=3, skipped=1)
    progress.advance({"method": "vanilla", "artifact": "haruhi", "character": "Kyon"})
    progress.note("vanilla haruhi Kyon at 7 failed (recorded, the bench goes on): malformed")
    progress.advance({"method": "vanilla", "artifact": "haruhi", "character": "Haruhi"})
    progress.close()
    lines = log.getvalue().splitlines()
    assert lines[0] == "personae: bench: 3 instances to run (1 done by an earlier run)"
    assert lines[1].startswith("personae: bench 1/3: vanilla haruhi Kyon done (0.")
    assert lines[2].startswith("personae: vanilla haruhi Kyon at 7 failed")
    assert lines[3].startswith("personae: bench 2/3: vanilla haruhi Haruhi done (")
    assert "\x1b" not in log.getvalue()  # no control codes in a log
