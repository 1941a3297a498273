"""The CharacterHub commands: ``personae characterhub <command>``, one module each here."""

HELP = "CharacterHub: deep-search profiles and the profile evaluation"
"""The group's line in ``personae --help``."""

ORDER = ("profile", "eval")
"""The group's ``--help`` order (a command not named here follows)."""
