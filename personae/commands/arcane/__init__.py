"""The ARCANE commands of the ``personae`` CLI."""
