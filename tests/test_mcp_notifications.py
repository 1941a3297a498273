"""The MCP server's notifications: a profile's progress to a client that asked, log levels.

Driven by the official ``mcp`` client SDK: its ``progress_callback`` (which sends the request's
``progressToken``), its ``logging_callback`` and its ``set_logging_level``, on the in-memory
transport; the HTTP transport is checked by the conformance suite
(tests/test_mcp_conformance.py) and by a raw JSON-RPC call below.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.shared.session import RequestResponder
from mcp.types import (
    LoggingMessageNotificationParams,
    ProgressNotification,
    ServerNotification,
    ServerRequest,
)
from mcp_world import World, serve_world
from studio_world import PERSONA_DIR, STORY

from personae import ProfilerContext, profile_character
from personae.mcp.notifications import level_of
from personae.mcp.options import ServerOptions
from personae.mcp.server import build_server

KENSHIRO = {"name": "Kenshiro", "franchise": "Fist of the North Star"}
Incoming = RequestResponder[ServerRequest, Any] | ServerNotification | Exception


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with serve_world(tmp_path) as running:
        for name, value in running.settings().items():
            monkeypatch.setenv(name, value)
        yield running


def options(world: World, profiles: str) -> ServerOptions:
    """The world's server, profiling into a fresh folder (a whole run, not a rewrite)."""
    return ServerOptions(
        profiles_dir=world.root / profiles,
        personas_dir=world.root / PERSONA_DIR,
        storylines=(world.root / STORY,),
        data_dir=str(world.root / "data"),
        wiki=world.web_url,
    )


def runner_lines(world: World) -> list[str]:
    """The progress lines the runner itself reports for the same run (what the CLI prints)."""
    lines: list[str] = []
    asyncio.run(
        profile_character(
            "Kenshiro",
            franchise="Fist of the North Star",
            wiki=world.web_url,
            out=world.root / "in-process",
            context=ProfilerContext(),
            progress=lines.append,
        )
    )
    return lines


def test_a_profile_sends_one_progress_notification_per_line_to_a_client_that_asked(
    world: World,
) -> None:
    expected = runner_lines(world)
    assert any("planned" in line for line in expected) and len(expected) >= 4
    reports: list[tuple[float, float | None, str | None]] = []
    incoming: list[Incoming] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async def on_message(message: Incoming) -> None:
        incoming.append(message)

    async def run() -> tuple[str, str]:
        server = build_server(options(world, "asked"))
        async with create_connected_server_and_client_session(
            server, message_handler=on_message
        ) as session:
            asked = await session.call_tool("profile_character", KENSHIRO, None, on_progress)
            # Again without a progressToken (the run now rewrites its files from the
            # checkpoint, still reporting lines): no progress notification at all.
            silent = await session.call_tool("profile_character", KENSHIRO)
            return str(asked.content[0].text), str(silent.content[0].text)  # type: ignore[union-attr]

    asked, silent = asyncio.run(run())
    assert asked.startswith("I am Kenshiro") and silent.startswith("I am Kenshiro")
    assert [message for _, _, message in reports] == expected
    assert [done for done, _, _ in reports] == list(range(1, len(expected) + 1))
    assert all(total is None for _, total, _ in reports)  # how many steps is not known ahead
    notifications = [m.root for m in incoming if isinstance(m, ServerNotification)]
    assert sum(isinstance(n, ProgressNotification) for n in notifications) == len(expected)


def test_logging_set_level_is_answered_and_filters_the_run_lines(world: World) -> None:
    logged: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async def run() -> None:
        async with create_connected_server_and_client_session(
            build_server(options(world, "quiet")), logging_callback=on_log
        ) as session:
            capabilities = session.get_server_capabilities()
            assert capabilities is not None and capabilities.logging is not None
            await session.call_tool("profile_character", KENSHIRO)
            assert logged == []  # no level set: the server sends no log message
        async with create_connected_server_and_client_session(
            build_server(options(world, "logged")), logging_callback=on_log
        ) as session:
            assert (await session.set_logging_level("info")).model_dump() == {"meta": None}
            await session.call_tool("profile_character", KENSHIRO)

    asyncio.run(run())
    lines = [str(params.data) for params in logged]
    assert any("planned" in line for line in lines)
    assert all(params.logger == "personae.profile_character" for params in logged)
    assert [params.level for params in logged] == [level_of(line) for line in lines]


def test_a_notice_is_a_warning_and_a_step_is_info() -> None:
    assert level_of("Kenshiro: notice: search failed (timeout)") == "warning"
    assert level_of("notice: no wiki page") == "warning"
    assert level_of("Kenshiro: planned 4 queries") == "info"


def raw_events(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a streamable-HTTP answer (SSE ``data:`` lines)."""
    return [
        json.loads(line.removeprefix("data:"))
        for line in response.text.splitlines()
        if line.startswith("data:") and line.removeprefix("data:").strip()
    ]


@pytest.mark.slow
def test_raw_json_rpc_over_http_sets_a_level_and_gets_progress_before_the_answer(
    world: World,
) -> None:
    """No client library: ``logging/setLevel`` (a level outside the spec is a JSON-RPC error),
    then a ``tools/call`` with ``_meta.progressToken``, over streamable HTTP."""
    from test_mcp_server import http_server

    headers = {"Accept": "application/json, text/event-stream"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }

    def set_level(number: int, level: str) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": number, "method": "logging/setLevel"}
        return {**request, "params": {"level": level}}

    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {
            "name": "profile_character",
            "arguments": KENSHIRO,
            "_meta": {"progressToken": "k-1"},
        },
    }
    with http_server(world) as url, httpx.Client(timeout=120) as client:
        opened = client.post(url, json=initialize, headers=headers)
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = "2025-06-18"
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post(url, json=initialized, headers=headers).status_code == 202
        (refused,) = raw_events(client.post(url, json=set_level(3, "loud"), headers=headers))
        (accepted,) = raw_events(client.post(url, json=set_level(4, "warning"), headers=headers))
        events = raw_events(client.post(url, json=call, headers=headers))
    assert refused["id"] == 3 and refused["error"]["code"] == -32602  # invalid params
    assert accepted == {"jsonrpc": "2.0", "id": 4, "result": {}}
    progress = [e["params"] for e in events if e.get("method") == "notifications/progress"]
    assert progress and events[-1]["id"] == 5  # every notification came before the answer
    assert {p["progressToken"] for p in progress} == {"k-1"}
    assert [p["progress"] for p in progress] == list(range(1, len(progress) + 1))
    assert all(p["message"].startswith("Kenshiro: ") for p in progress)
    assert events[-1]["result"]["content"][0]["text"].startswith("I am Kenshiro")
