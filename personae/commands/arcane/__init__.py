"""The ARCANE commands of the ``personae`` CLI."""

from personae.runners.arcane_eval import cache_note

__all__ = ["cache_note"]
