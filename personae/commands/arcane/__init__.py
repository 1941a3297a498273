"""The ARCANE commands of the ``personae`` CLI."""


def cache_note(hits: int) -> str:
    """``", N cached answers"`` when the answer cache spared some calls, else nothing."""
    return f", {hits} cached answers" if hits else ""
