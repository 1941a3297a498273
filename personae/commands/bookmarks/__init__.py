"""The BOOKMARKS commands: ``personae bookmarks <command>``, registered by the modules here."""

HELP = "BOOKMARKS: storyline memory, its benchmark and data"
"""The group's line in ``personae --help``."""

ORDER = ("act", "bench", "fetch", "positions")
"""The group's ``--help`` order (a command not named here follows)."""
