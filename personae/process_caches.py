"""The process's caches and registries, and the one way to clear them all: :func:`reset_runtime`.

Why: Personae keeps what is costly to rebuild for the life of the process (parsed storylines
and novels, bank and storyline indexes, Chroma clients, embeddings, chat model clients, the
per-event-loop HTTP gates) and what a caller registered (model overrides). Each cache lives
beside the code it serves and registers how to clear itself here when its module is imported,
so this module knows none of them and a module never imported has nothing to clear. Tests
clear everything between tests (``tests/conftest.py``); an app's own tests, or a long-lived
server that wants to drop what it holds, call :func:`personae.testing.reset_runtime`.

``tests/core/test_process_caches.py`` fails on a module-level cache that does not register.
Chroma's own registry of running systems (one per folder) is left alone: a system is not
stopped when dropped, and a new one for a folder an old one still holds fails to start.
"""

from __future__ import annotations

from collections.abc import Callable

_CLEARS: dict[str, Callable[[], None]] = {}
"""How to clear each registered cache, by name (a re-imported module replaces its entry)."""


def clears_on_reset(name: str, clear: Callable[[], None]) -> None:
    """Have :func:`reset_runtime` call ``clear``; ``name`` says what it clears (``module.what``)."""
    _CLEARS[name] = clear


def registered_caches() -> list[str]:
    """The names of the caches :func:`reset_runtime` clears (in the order they registered)."""
    return list(_CLEARS)


def reset_runtime() -> None:
    """Clear every process-global cache and registry: the state of a fresh process.

    Nothing on disk is touched. Objects handed out before (a bank, a storyline) stay usable;
    the next lookup builds new ones.
    """
    for clear in list(_CLEARS.values()):
        clear()
