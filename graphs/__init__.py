"""LangGraph graphs, one subfolder per paper; shared wiring only at this root.

The README documented some graph modules by their old flat paths; they keep working for one
release (with a ``DeprecationWarning``) through :mod:`personae.deprecation`.
"""

from personae.deprecation import install_moved_modules

install_moved_modules(
    {
        "personae.graphs.profiler": "personae.graphs.characterhub.profiler",
        "personae.graphs.profile_tool": "personae.graphs.characterhub.tool",
        "personae.graphs.bookmark_tool": "personae.graphs.bookmarks.tool",
        "personae.graphs.amadeus_tool": "personae.graphs.amadeus.tool",
    }
)
