"""LangGraph wiring: each paper's graphs (the agents a user runs), their contexts and tools.

Holds: state, run context, small nodes that call agents/tools/memory, edges, the compiled
``graph`` that ``langgraph.json`` points at, ``build_graph(checkpointer)`` for the CLI and
tests, and the LangChain tool factories (``graphs/<paper>/tool.py``); one subfolder per paper,
shared wiring only at this root.
Not here: long prompts (``agents/``), parsing, HTTP (``tools/``), storage (``memory/``).

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
