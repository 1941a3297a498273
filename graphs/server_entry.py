"""What langgraph.json serves: each compiled graph behind a check of the run's raw context.

The LangGraph server drops every context key its schema lacks before a run starts, so a run
passing ``{"embeddings": "hashing"}`` or a typo would run with the defaults and say nothing.
The server hands a graph *factory* the run's context as the caller sent it: each graph module's
``served = server_entry(graph)`` is such a factory, refusing a renamed, retired or unknown key with the same one-line
:class:`~personae.errors.ConfigurationError` an in-process run raises (the run fails with it,
as ``__error__`` of ``/runs/wait``), then returning the module's ``graph`` unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.pregel import Pregel

from personae.run_context import check_context_keys

if TYPE_CHECKING:
    from langgraph_sdk.runtime import ServerRuntime

G = TypeVar("G", bound=Pregel[Any, Any, Any, Any])


def server_entry(graph: G) -> Callable[[ServerRuntime[Any]], G]:
    """The factory langgraph.json points at for ``graph``.

    The server calls it for every access (schemas, state reads, runs); only a run carries a
    context, and only that is checked. The annotation ``ServerRuntime`` is how the server
    knows to pass the runtime (it resolves the name itself; the import is for type checkers).
    """

    def serve(runtime: ServerRuntime[Any]) -> G:
        execution = runtime.execution_runtime
        given = execution.context if execution is not None else None
        if isinstance(given, Mapping) and graph.context_schema is not None:
            check_context_keys(graph.context_schema, given)
        return graph

    serve.__name__ = serve.__qualname__ = f"served_{graph.name}"
    return serve
