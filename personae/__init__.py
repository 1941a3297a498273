"""Personae: role-playing agents on LangGraph (CharacterHub profiles, BOOKMARKS memory)."""

import os
import sys

_SCRIPT = os.path.basename(getattr(sys.modules.get("__main__"), "__file__", None) or "")
if _SCRIPT in ("personae", "personae-script.py"):
    # Run as the console script: its quiet Ctrl-C handler goes in before anything else loads
    # (a library import changes no signal handler).
    from personae import console  # noqa: F401

import logging  # noqa: E402

__version__ = "0.1.0"

# Quiet by default (a library must not print): what Personae logs (errors it recovered from,
# skipped damaged records) shows when the app configures logging, or with `personae -v`.
logging.getLogger("personae").addHandler(logging.NullHandler())
