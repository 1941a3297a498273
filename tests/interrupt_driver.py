"""Runs ``personae`` in a child process with a slow scripted profiler model, for Ctrl-C tests.

``python interrupt_driver.py LOG ARGS...`` overrides every model with the profiler's scripted
model (``DRIVER_LATENCY`` seconds per call), appends one line per model call to
LOG (the schema's name), writes ``ready`` to LOG, then runs the CLI with ARGS. The parent test
serves the fake web and sends SIGINT.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from profiler_world import scripted_model

from personae.cli import run
from personae.testing import override_models


def main() -> None:
    """Register the logging model, announce, run the CLI."""
    log = Path(sys.argv[1])
    model = scripted_model(score=0.2)
    model.latency = float(os.environ.get("DRIVER_LATENCY", "0.2"))
    for name, respond in list(model.responders.items()):

        def logged(messages: list[BaseMessage], name: str = name, respond: Any = respond) -> Any:
            with log.open("a") as handle:
                handle.write(f"{name}\n")
            return respond(messages)

        model.responders[name] = logged
    override_models(model)
    sys.argv = ["personae", *sys.argv[2:]]
    with log.open("a") as handle:
        handle.write("ready\n")
    run()


if __name__ == "__main__":
    main()
