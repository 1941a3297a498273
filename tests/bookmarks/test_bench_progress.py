"""`personae bookmarks bench` progress: on a terminal a bar with instances done, of how many,
and the ETA; in a log (stderr not a terminal) one plain line per progress line.

The bench reports to the one :class:`~personae.progress.Progress` protocol; its counted lines
(:class:`~personae.progress.CountedLine`) are what the bar draws.
"""

from __future__ import annotations

import io

from rich.console import Console

from personae.progress import CountedLine
from personae.progress_bar import BarProgress, LineProgress, stderr_progress


def test_the_bar_counts_instances_and_shows_the_time_left() -> None:
    screen = io.StringIO()
    progress = BarProgress(Console(file=screen, force_terminal=True, width=120))
    progress(CountedLine("bench: 4 instances to run", done=0, total=4, label="bench"))
    progress(CountedLine("bench 1/4: ...", done=1, total=4, label="bookmarks haruhi Kyon"))
    progress("resumed from results.jsonl")
    progress.close()
    drawn = screen.getvalue()
    assert "bookmarks haruhi Kyon" in drawn  # the instance that just finished
    assert "1/4" in drawn  # instances done of the total
    assert "0:00:0" in drawn or "-:--:--" in drawn  # the time-remaining column
    assert "personae: resumed from results.jsonl" in drawn
    assert "bench 1/4: ..." not in drawn  # a counted line moves the bar, it is not printed


def test_a_log_gets_one_plain_line_per_progress_line() -> None:
    # pytest captures stderr, so it is not a TTY here: no bar, lines.
    assert type(stderr_progress()) is LineProgress
    log = io.StringIO()
    progress = LineProgress(log)
    progress(CountedLine("bench: 3 instances to run (1 done by an earlier run)", done=0, total=3))
    progress("vanilla haruhi Kyon at 7 failed (recorded, the bench goes on): malformed")
    progress.close()
    assert log.getvalue().splitlines() == [
        "personae: bench: 3 instances to run (1 done by an earlier run)",
        "personae: vanilla haruhi Kyon at 7 failed (recorded, the bench goes on): malformed",
    ]
    assert "\x1b" not in log.getvalue()  # no control codes in a log


def test_a_counted_line_is_a_plain_string_to_a_caller_that_prints() -> None:
    line = CountedLine("bench 2/3: vanilla haruhi Haruhi done (0.1 min)", done=2, total=3)
    assert line == "bench 2/3: vanilla haruhi Haruhi done (0.1 min)" and isinstance(line, str)
    assert (line.done, line.total, line.label) == (2, 3, "")
