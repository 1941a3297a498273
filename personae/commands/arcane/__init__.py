"""The ARCANE commands: ``personae arcane <command>``, registered by the modules here."""

from personae.runners.arcane_eval import cache_note

__all__ = ["ORDER", "HELP", "cache_note"]

HELP = "ARCANE: novels, character arcs, probes, role-play as of a chapter, evaluation"
"""The group's line in ``personae --help``."""

ORDER = (
    "import",
    "chapters",
    "build-arcs",
    "show-arc",
    "annotate-arcs",
    "build-probes",
    "prepare",
    "act",
    "prompt",
    "eval",
    "eval-perturb",
    "eval-report",
    "export",
)
"""The group's ``--help`` order, the workflow's (a command not named here follows)."""
