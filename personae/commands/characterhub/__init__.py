"""The CharacterHub commands of the ``personae`` CLI."""
