"""The AMADEUS commands: ``personae amadeus <command>``, registered by the modules here."""

HELP = "AMADEUS: persona indexes, role-play and its evaluations"
"""The group's line in ``personae --help``."""

ORDER = ("index", "chat", "eval-personality", "eval-qa", "eval-chunks", "eval-human")
"""The group's ``--help`` order (a command not named here follows)."""
