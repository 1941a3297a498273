"""The MCP server: Personae's four tools and its read-only resources on one FastMCP app.

Resources are listed as they are on disk at the time of the request (a profile written while
the server runs shows up in the next ``resources/list``), by overriding FastMCP's listing; the
URI templates serve the reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, unquote

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.fastmcp.resources import FunctionResource
from mcp.types import ContentBlock, LoggingLevel, Resource, ToolAnnotations
from pydantic import ValidationError
from starlette.applications import Starlette

from personae.mcp import resources
from personae.mcp.limits import JsonBodyLimits, capped_schema, one_line, oversized_argument
from personae.mcp.notifications import set_log_level
from personae.mcp.options import ServerOptions
from personae.mcp.tools import build_tools

INSTRUCTIONS = (
    "Personae's role-playing tools. profile_character researches a fictional character on "
    "the web and wikis; ask_character talks to a character whose persona is indexed; "
    "storyline_memory answers what is true in a long storyline at a position; arcane_act "
    "plays a novel's character as of a chapter. Resources: personae://profiles and "
    "personae://personas list what already exists."
)
READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
TOOL_HINTS = {
    "profile_character": ToolAnnotations(readOnlyHint=True, openWorldHint=True),
    "ask_character": READ_ONLY,
    "storyline_memory": ToolAnnotations(readOnlyHint=False, openWorldHint=False),
    "arcane_act": READ_ONLY,
}
"""``storyline_memory`` stores what it learns as bookmarks; the others change nothing local."""


class PersonaeMCP(FastMCP[Any]):
    """FastMCP whose resource list is read from disk at each request, and whose input is capped.

    Tool arguments over their caps, malformed arguments and over-large or over-deep HTTP bodies
    are refused in one line (:mod:`personae.mcp.limits`). It declares the ``logging``
    capability: ``logging/setLevel`` sets the level of the log messages a client's tool calls
    send it (:mod:`personae.mcp.notifications`).
    """

    def __init__(self, options: ServerOptions, **settings: Any) -> None:
        super().__init__("personae", instructions=INSTRUCTIONS, **settings)
        self.options = options
        self._mcp_server.set_logging_level()(self.set_logging_level)  # type: ignore[no-untyped-call]

    async def set_logging_level(self, level: LoggingLevel) -> None:
        """``logging/setLevel``: the asking client's level from now on (the SDK checks it)."""
        set_log_level(self._mcp_server.request_context.session, level)

    async def call_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> Sequence[ContentBlock] | dict[str, Any]:
        """The tool's answer; an argument over its cap or of the wrong form is one line."""
        problem = oversized_argument(name, arguments)
        if problem is not None:
            raise ToolError(problem)
        try:
            return await super().call_tool(name, arguments)
        except ToolError as error:
            if isinstance(error.__cause__, ValidationError):
                raise ToolError(one_line(name, error.__cause__)) from None
            raise

    def streamable_http_app(self) -> Starlette:
        """The SDK's app behind :class:`~personae.mcp.limits.JsonBodyLimits`."""
        app = super().streamable_http_app()
        app.add_middleware(JsonBodyLimits)
        return app

    async def list_resources(self) -> list[Resource]:
        """The two listings, then every profile and persona index there is right now."""
        listed = await super().list_resources()
        options = self.options
        for key in resources.profile_keys(options.profiles_dir):
            listed.append(
                Resource(
                    uri=f"personae://profiles/{key}",  # type: ignore[arg-type]
                    name=f"profile {key}",
                    mimeType="application/json",
                )
            )
        for name in await resources.persona_names(options.personas_dir):
            listed.append(
                Resource(
                    uri=f"personae://personas/{quote(name, safe='')}",  # type: ignore[arg-type]
                    name=f"persona {name}",
                    mimeType="application/json",
                )
            )
        return listed


def build_server(options: ServerOptions, **settings: Any) -> PersonaeMCP:
    """The MCP app for ``options``; ``settings`` go to FastMCP (``host``, ``port``)."""
    server = PersonaeMCP(options, **settings)
    for name, function in build_tools(options).items():
        server.add_tool(function, name=name, annotations=TOOL_HINTS[name])
        tool = server._tool_manager.get_tool(name)
        assert tool is not None
        capped_schema(tool.parameters)  # clients see each text argument's cap
    _add_resources(server, options)
    return server


def _add_resources(server: PersonaeMCP, options: ServerOptions) -> None:
    profiles, personas = options.profiles_dir, options.personas_dir
    json_type = "application/json"

    async def list_profiles() -> str:
        return resources.profile_listing(profiles)

    async def list_personas() -> str:
        return await resources.persona_listing(personas)

    server.add_resource(
        FunctionResource.from_function(
            list_profiles,
            uri="personae://profiles",
            name="profiles",
            description=f"The character profiles written under {profiles}.",
            mime_type=json_type,
        )
    )
    server.add_resource(
        FunctionResource.from_function(
            list_personas,
            uri="personae://personas",
            name="personas",
            description=f"The AMADEUS persona indexes in {personas}.",
            mime_type=json_type,
        )
    )

    @server.resource("personae://profiles/{key}", mime_type=json_type)
    async def profile_json(key: str) -> str:
        """One character's profile.json (key: its folder name)."""
        return resources.profile_file(profiles, key, "profile.json")

    @server.resource("personae://profiles/{key}/markdown", mime_type="text/markdown")
    async def profile_markdown(key: str) -> str:
        """One character's profile.md."""
        return resources.profile_file(profiles, key, "profile.md")

    @server.resource("personae://personas/{character}", mime_type=json_type)
    async def persona(character: str) -> str:
        """One character's persona indexes: manifest and chunks."""
        return await resources.persona_index(personas, unquote(character))
