"""BOOKMARKS: the bookmark memory agent, its baselines, its step and tool (see the README's Layout).

``personae.graphs.bookmarks`` was the agent's graph module before this folder existed: names
taken from it still resolve to :mod:`personae.graphs.bookmarks.graph`, with a warning.
"""

from personae.deprecation import package_getattr

__getattr__ = package_getattr(
    "personae.graphs.bookmarks", "personae.graphs.bookmarks.graph", __path__
)
