"""Runs ``personae`` in a child process with a slow scripted profiler model, for Ctrl-C tests.

``python interrupt_driver.py LOG ARGS...`` overrides every model with a scripted model
(``DRIVER_WORLD``: ``profiler``, the default, or ``bookmarks`` for the BOOKMARKS method and its
judge; ``DRIVER_LATENCY`` seconds per call), appends one line per model call to
LOG (the schema's name), never answers a call whose schema is ``DRIVER_HOLD`` (so a kill
after that line is always inside that call, whatever the machine's load, until the file
``DRIVER_RELEASE`` exists), runs the CLI with ARGS and writes ``ready`` to LOG once the CLI is
parsing them (so a SIGINT after ``ready`` always lands inside the command, never in the
driver's own set-up). The parent test serves the fake web and sends SIGINT.

SIGINT is reset to Python's default first: a shell starting the test suite in the background
(``pytest &``, a CI step runner) makes children inherit an *ignored* SIGINT, and the command
would then never see the test's Ctrl-C; a user at a terminal always has the default.
"""

from __future__ import annotations

import signal

signal.signal(signal.SIGINT, signal.default_int_handler)

import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from langchain_core.messages import BaseMessage  # noqa: E402

from personae import cli  # noqa: E402
from personae.testing import ScriptedChatModel, override_models  # noqa: E402


def world_model() -> ScriptedChatModel:
    """The scripted model of ``DRIVER_WORLD`` (its world module loads no graph or Chroma)."""
    if os.environ.get("DRIVER_WORLD", "profiler") == "bookmarks":
        from bookmarks_world import scripted_model as bookmarks_model

        def mismatch(messages: list[BaseMessage]) -> dict[str, str]:
            return {"reasoning": "compared", "score": "C"}

        return bookmarks_model(KeyMoveVerdict=mismatch)
    from profiler_world import scripted_model as profiler_model

    return profiler_model(score=0.2)


def main() -> None:
    """Register the logging model, run the CLI, announce ``ready`` from inside it."""
    log = Path(sys.argv[1])
    model = world_model()
    model.latency = float(os.environ.get("DRIVER_LATENCY", "0.2"))
    hold = os.environ.get("DRIVER_HOLD", "")
    for name, respond in list(model.responders.items()):

        def logged(messages: list[BaseMessage], name: str = name, respond: Any = respond) -> Any:
            with log.open("a") as handle:
                handle.write(f"{name}\n")
            if name == hold:
                release = Path(os.environ.get("DRIVER_RELEASE") or "/nonexistent")
                deadline = time.monotonic() + 3600  # the test kills the process inside this call
                while not release.exists() and time.monotonic() < deadline:
                    time.sleep(0.02)  # ... or lets it go on by creating DRIVER_RELEASE
            return respond(messages)

        model.responders[name] = logged
    override_models(model)
    sys.argv = ["personae", *sys.argv[2:]]
    build_parser = cli.build_parser

    def announce_then_build() -> Any:
        # Called inside cli.main's try block: from here on, Ctrl-C is the command's to handle.
        with log.open("a") as handle:
            handle.write("ready\n")
        return build_parser()

    cli.build_parser = announce_then_build
    cli.run()


if __name__ == "__main__":
    main()
