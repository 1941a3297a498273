"""Personae: role-playing agents on LangGraph (CharacterHub profiles, BOOKMARKS memory)."""

import logging

__version__ = "0.1.0"

# Quiet by default (a library must not print): what Personae logs (errors it recovered from,
# skipped damaged records) shows when the app configures logging, or with `personae -v`.
logging.getLogger("personae").addHandler(logging.NullHandler())
