"""The ``personae`` console script's quiet Ctrl-C handler, in place from its very first line.

A Ctrl-C while :mod:`personae.cli` and what it needs load (the first 0.1-0.3 s) used to
print a ``KeyboardInterrupt`` traceback. This module imports only :mod:`signal` and
:mod:`sys` and sets a handler (as it is imported) that ends with the CLI's one line and exit
130; the CLI puts Python's own handler back once its ``try`` block can catch the interrupt.
The package's ``__init__`` imports it first thing when the running script is the console
script: importing :mod:`personae` as a library changes no signal handler. What remains is Python's own start-up (``site`` and ``.pth`` files, about
0.04-0.1 s), before any code of the project runs.
"""

from __future__ import annotations

import signal
import sys

INTERRUPTED = "personae: interrupted; rerun the same command to resume"
"""The line a Ctrl-C ends with (the CLI prints the same one)."""


def _interrupted(signum: int, frame: object) -> None:
    sys.stderr.write(INTERRUPTED + "\n")
    raise SystemExit(130)


if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored, not set
    signal.signal(signal.SIGINT, _interrupted)  # at import: the script imports this first
