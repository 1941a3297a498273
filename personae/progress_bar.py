"""How the CLI shows a runner's :class:`~personae.progress.Progress` on stderr.

On a terminal, a run that counts its units (:class:`~personae.progress.CountedLine`) draws a
rich bar (units done of all, the one that just finished, the time left) and prints its other
lines above it; in a log (``nohup``, CI, a job scheduler) every line is one plain line, with no
control codes. Both write ``personae: `` before each line, as the CLI's notices do.
"""

from __future__ import annotations

import sys
from typing import Any

from personae.progress import CountedLine


class LineProgress:
    """One plain line per progress line, on ``stream`` (stderr by default)."""

    def __init__(self, stream: Any = None) -> None:
        self._stream = stream

    def __call__(self, line: str, /) -> None:
        """Write ``personae: LINE`` and flush (a log shows how far the run got)."""
        stream = self._stream or sys.stderr
        stream.write(f"personae: {line}\n")
        stream.flush()

    def close(self) -> None:
        """Nothing to stop."""


class BarProgress:
    """A rich progress bar of a run's counted lines; its other lines print above the bar.

    ``console`` is the terminal to draw on (stderr by default; tests pass a recording one).
    """

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        self._bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._task: Any = None

    def __call__(self, line: str, /) -> None:
        """Start the bar at a count of 0, advance it on the others, print any other line."""
        if not isinstance(line, CountedLine):
            self._bar.console.print(f"personae: {line}")
        elif self._task is None or line.done == 0:
            self._bar.start()
            self._task = self._bar.add_task(line.label, total=line.total)
        else:
            self._bar.update(self._task, completed=line.done, description=line.label)

    def close(self) -> None:
        """Stop the bar (the run ended)."""
        self._bar.stop()


def stderr_progress() -> LineProgress | BarProgress:
    """A bar when stderr is a terminal, otherwise a plain line per progress line (the log)."""
    return BarProgress() if sys.stderr.isatty() else LineProgress()
