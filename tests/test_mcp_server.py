"""`personae mcp`: an MCP client lists and calls every tool and reads every resource.

In process, a real MCP client session talks to the server over the SDK's in-memory streams; in
child processes (slow), the real `personae mcp` over stdio and over streamable HTTP. The LLM is
the loopback model (the real OpenAI client), the web a loopback fake; the tools run Personae's
real graphs, Chroma stores and files.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import CallToolResult, TextContent, TextResourceContents
from mcp_world import PROFILE_KEY, World, serve_world
from studio_world import ANSWER, PERSONA_DIR, STORY

from personae.cli import main
from personae.errors import InputError
from personae.loopback import free_port
from personae.mcp.limits import MAX_NAME_CHARS, MAX_TEXT_CHARS, json_depth_over
from personae.mcp.options import ServerOptions
from personae.mcp.resources import profile_file
from personae.mcp.server import build_server

HOKUTO = "Fist of the North Star"
RAOH_KEY = "raoh--fist-of-the-north-star"
TOOLS = {"profile_character", "ask_character", "storyline_memory", "arcane_act"}
CALLS: dict[str, dict[str, Any]] = {
    "profile_character": {"name": "Kenshiro", "franchise": "Fist of the North Star"},
    "ask_character": {"character": "Megumin", "question": "What do you love?"},
    "storyline_memory": {
        "character": "Haruhi",
        "question": "Where is Haruhi now?",
        "position": 120,
    },
    "arcane_act": {
        "novel": "the_river",
        "character": "Ada",
        "chapter": 2,
        "scenario": "Ada stands at the ferry.",
    },
}
BAD_CALLS: dict[str, tuple[dict[str, Any], str]] = {
    "ask_character": ({"character": "Nobody", "question": "Hi?"}, "unknown character 'Nobody'"),
    "storyline_memory": (
        {"character": "Haruhi", "question": "Where?", "position": 99999},
        "position",
    ),
    "arcane_act": (
        {"novel": "no_such_book", "character": "Ada", "chapter": 2, "scenario": "x"},
        "no_such_book",
    ),
}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with serve_world(tmp_path) as running:
        for name, value in running.settings().items():
            monkeypatch.setenv(name, value)
        yield running


def options(world: World) -> ServerOptions:
    return ServerOptions(
        profiles_dir=world.root / "profiles",
        personas_dir=world.root / PERSONA_DIR,
        storylines=(world.root / STORY,),
        bookmarks_memory=world.root / "bookmarks",
        data_dir=str(world.root / "data"),
        wiki=world.web_url,
    )


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def check_every_tool(session: ClientSession) -> None:
    """List the tools, call each once well and (where it takes input that can be wrong) badly."""
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(listed) == TOOLS
    schema = listed["storyline_memory"].inputSchema
    assert set(schema["required"]) == {"character", "question", "position"}
    assert schema["properties"]["type"]["enum"] == ["state", "behavioral", "concept"]
    assert listed["arcane_act"].inputSchema["properties"]["chapter"]["minimum"] == 1
    assert all(tool.description for tool in listed.values())
    answers = {name: await session.call_tool(name, args) for name, args in CALLS.items()}
    for name, result in answers.items():
        assert not result.isError, f"{name}: {text_of(result)}"
    assert text_of(answers["profile_character"]).startswith("I am Kenshiro")
    assert "Sources:" in text_of(answers["profile_character"])
    # The runner saved it where the server serves profiles from: a resource now.
    assert f"Saved as personae://profiles/{PROFILE_KEY} (" in text_of(answers["profile_character"])
    assert text_of(answers["ask_character"]) == ANSWER
    assert "(bookmark " in text_of(answers["storyline_memory"])
    assert text_of(answers["arcane_act"]) == f"{ANSWER} (as of chapter 2, arc mode)"
    for name, (args, expected) in BAD_CALLS.items():
        failed = await session.call_tool(name, args)
        assert failed.isError, name
        message = text_of(failed)
        assert expected in message and "Traceback" not in message, message


def test_a_client_session_lists_and_calls_every_tool(world: World) -> None:
    async def run() -> None:
        server = build_server(options(world))
        async with create_connected_server_and_client_session(server) as session:
            await check_every_tool(session)

    asyncio.run(run())
    saved = json.loads((world.root / "profiles" / PROFILE_KEY / "profile.json").read_text())
    assert saved["character"] == "Kenshiro" and saved["sources"]
    assert (world.root / "profiles" / ".checkpoints.sqlite").exists()  # resumable


def test_tool_errors_say_what_to_fix(world: World) -> None:
    async def run() -> list[str]:
        server = build_server(ServerOptions(profiles_dir=world.root / "profiles"))
        async with create_connected_server_and_client_session(server) as session:
            story = await session.call_tool("storyline_memory", CALLS["storyline_memory"])
            blank = await session.call_tool("ask_character", {"character": "X", "question": " "})
            typed = await session.call_tool("arcane_act", {**CALLS["arcane_act"], "chapter": 0})
            assert story.isError and blank.isError and typed.isError
            return [text_of(story), text_of(blank), text_of(typed)]

    story, blank, typed = asyncio.run(run())
    assert "this server serves no storyline; start personae mcp with --storyline FILE" in story
    assert "the question is empty" in blank
    assert typed == (  # issue 27: was pydantic's 4-line report with a URL
        "arcane_act: chapter: input should be greater than or equal to 1 (got 0); "
        "see the tool's input schema"
    )


def test_arguments_over_their_caps_never_reach_the_model(world: World) -> None:
    """Issue 27: a 2,000,000-character question went to the model whole."""

    async def run() -> tuple[dict[str, Any], list[str]]:
        server = build_server(options(world))
        async with create_connected_server_and_client_session(server) as session:
            listed = {tool.name: tool.inputSchema for tool in (await session.list_tools()).tools}
            huge = {"character": "Megumin", "question": "Why? " * 400_000}
            long_name = {**CALLS["arcane_act"], "novel": "x" * 201}
            answers = [
                await session.call_tool("ask_character", huge),
                await session.call_tool("arcane_act", long_name),
            ]
            assert all(answer.isError for answer in answers)
            return listed, [text_of(answer) for answer in answers]

    before = len(world.llm.requests)
    listed, (question, novel) = asyncio.run(run())
    assert len(world.llm.requests) == before
    assert question == (
        "ask_character: the argument 'question' is 2,000,000 characters, over the 4,000 this "
        "server takes; shorten it"
    )
    assert novel.startswith("arcane_act: the argument 'novel' is 201 characters, over the 200")
    assert listed["ask_character"]["properties"]["question"]["maxLength"] == MAX_TEXT_CHARS
    franchise = listed["profile_character"]["properties"]["franchise"]["anyOf"][0]
    assert franchise["maxLength"] == MAX_NAME_CHARS
    assert "maxLength" not in listed["arcane_act"]["properties"]["chapter"]


def test_without_an_llm_the_server_starts_and_each_tool_call_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: MCP clients pass a minimal environment; the server refused to start."""
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PERSONAE_MODEL"):
        monkeypatch.delenv(variable, raising=False)

    async def run() -> tuple[set[str], set[str], list[str]]:
        server = build_server(ServerOptions(profiles_dir=tmp_path / "profiles"))
        async with create_connected_server_and_client_session(server) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            listed = {str(r.uri) for r in (await session.list_resources()).resources}
            answers = [await session.call_tool(name, args) for name, args in CALLS.items()]
            assert all(answer.isError for answer in answers)
            return tools, listed, [text_of(answer) for answer in answers]

    tools, listed, answers = asyncio.run(run())
    assert tools == TOOLS and listed == {"personae://profiles", "personae://personas"}
    for answer in answers:
        assert "no LLM is configured; set OPENAI_API_KEY" in answer and "\n" not in answer


@pytest.mark.parametrize(
    ("body", "status", "problem"),
    [
        (b"[" * 100_000 + b"]" * 100_000, 400, "the request body nests deeper than 64"),
        (
            b'{"jsonrpc": "2.0", "x": "' + b"a" * 1_000_001 + b'"}',
            413,
            "the request body is over 1,000,000 bytes",
        ),
    ],
    ids=["100k-deep", "1MB"],
)
def test_the_http_transport_refuses_deep_or_huge_bodies_before_parsing(
    body: bytes, status: int, problem: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 27: a 100k-deep body was a RecursionError traceback in the log and an HTTP 500."""
    server = build_server(ServerOptions(profiles_dir=tmp_path))
    app = server.streamable_http_app()

    async def run() -> httpx.Response:
        async with server.session_manager.run():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                headers = {"Accept": "application/json, text/event-stream"}
                headers["Content-Type"] = "application/json"
                return await http.post("/mcp", content=body, headers=headers)

    response = asyncio.run(run())
    assert response.status_code == status
    assert response.json()["error"] == {"code": -32700, "message": problem}
    assert "Traceback" not in caplog.text and "RecursionError" not in caplog.text


def test_a_json_depth_scan_skips_strings() -> None:
    assert not json_depth_over(b'{"a": "[[[[[[[[[[\\"}', 3)
    assert json_depth_over(b'{"a": [[[[""]"]]]]}', 3)
    assert not json_depth_over(b'{"a": [[[""]"]]]}', 4)


def test_resources_list_and_read_profiles_and_personas(world: World) -> None:
    async def run() -> tuple[set[str], dict[str, str]]:
        server = build_server(options(world))
        async with create_connected_server_and_client_session(server) as session:
            listed = {str(r.uri) for r in (await session.list_resources()).resources}
            templates = (await session.list_resource_templates()).resourceTemplates
            assert {t.uriTemplate for t in templates} >= {"personae://profiles/{key}"}
            read = {}
            for uri in sorted(listed) + [f"personae://profiles/{PROFILE_KEY}/markdown"]:
                [content] = (await session.read_resource(uri)).contents  # type: ignore[arg-type]
                assert isinstance(content, TextResourceContents)
                read[uri] = content.text
            return listed, read

    listed, read = asyncio.run(run())
    assert listed == {
        "personae://profiles",
        "personae://personas",
        f"personae://profiles/{PROFILE_KEY}",
        "personae://personas/Megumin",
    }
    [row] = json.loads(read["personae://profiles"])
    assert row == {
        "key": PROFILE_KEY,
        "name": "Kenshiro",
        "franchise": "Fist of the North Star",
        "uri": f"personae://profiles/{PROFILE_KEY}",
    }
    assert json.loads(read[f"personae://profiles/{PROFILE_KEY}"])["character"] == "Kenshiro"
    assert read[f"personae://profiles/{PROFILE_KEY}/markdown"].startswith("# Kenshiro")
    [manifest] = json.loads(read["personae://personas"])
    assert manifest["character"] == "Megumin" and manifest["splitter"] == "acts"
    persona = json.loads(read["personae://personas/Megumin"])
    texts = [chunk["text"] for chunk in persona["indexes"][0]["chunks_text"]]
    assert any("Megumin fact 2 " in text for text in texts)


def test_a_resource_uri_cannot_leave_its_folder(world: World) -> None:
    (world.root / "profile.json").write_text('{"secret": 1}')  # what ../ would reach

    async def run() -> list[str]:
        server = build_server(options(world))
        errors = []
        async with create_connected_server_and_client_session(server) as session:
            for uri in ("personae://profiles/..", "personae://profiles/nobody"):
                with pytest.raises(McpError) as caught:
                    await session.read_resource(uri)  # type: ignore[arg-type]
                errors.append(str(caught.value))
        return errors

    dots, nobody = asyncio.run(run())  # the SDK normalises ".." away before any read
    assert "secret" not in dots
    assert "no profile 'nobody'" in nobody and f"profiles: {PROFILE_KEY}" in nobody
    for key in ("..", ".", "a/../b"):  # and the reader refuses any key Personae never makes
        with pytest.raises(InputError, match="read personae://profiles for the keys"):
            profile_file(world.root / "profiles", key, "profile.json")


def test_the_command_refuses_a_missing_storyline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--storyline", str(tmp_path / "none.jsonl")]) == 2
    assert "no storyline at" in capsys.readouterr().err


# --- the real command in a child process: stdio and streamable HTTP (slow) ---

CHILD = "import sys; from personae.cli import run; sys.argv[0] = 'personae'; run()"


async def call_over(session: ClientSession) -> None:
    await session.initialize()
    assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
    answer = await session.call_tool("ask_character", CALLS["ask_character"])
    assert not answer.isError and text_of(answer) == ANSWER
    failed = await session.call_tool("ask_character", BAD_CALLS["ask_character"][0])
    assert failed.isError and "unknown character 'Nobody'" in text_of(failed)


@pytest.mark.slow
def test_personae_mcp_over_stdio(world: World) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", CHILD, "mcp", *world.server_flags()],
        env=world.env(),
        cwd=str(world.root),
    )

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await call_over(session)

    asyncio.run(run())


@contextmanager
def http_server(world: World) -> Iterator[str]:
    """`personae mcp --transport http` on a free port; its URL, once it answers."""
    port = free_port()
    argv = [sys.executable, "-c", CHILD, "mcp", "--transport", "http", "--port", str(port)]
    log = (world.root / "mcp.log").open("wb")
    process = subprocess.Popen(
        [*argv, *world.server_flags()], env=world.env(), cwd=world.root, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert process.poll() is None, (world.root / "mcp.log").read_text()
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)
        log.close()


@pytest.mark.slow
def test_personae_mcp_over_streamable_http_and_a_react_agent_through_the_adapters(
    tmp_path: Path,
) -> None:
    """A LangGraph ReAct agent loads the four tools with langchain-mcp-adapters and calls them
    all in one turn, one of them badly: it gets the error back as a tool message and answers."""
    from langchain.agents import create_agent
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    turns = [[(name, args) for name, args in CALLS.items() if name != "profile_character"]]
    turns[0].append(("ask_character", BAD_CALLS["ask_character"][0]))
    with serve_world(tmp_path, turns) as world, http_server(world) as url:

        async def run() -> dict[str, Any]:
            async with streamable_http_client(url) as (read, write, _):
                async with ClientSession(read, write) as session:
                    await call_over(session)
            client = MultiServerMCPClient(
                {"personae": {"transport": "streamable_http", "url": url}}
            )
            tools = await client.get_tools()
            assert {tool.name for tool in tools} == TOOLS
            model = ChatOpenAI(
                model="fake-agent", base_url=f"{world.llm_url}/v1", api_key=SecretStr("k")
            )
            agent = create_agent(model, tools)
            question: Any = {"messages": [{"role": "user", "content": "Tell me about them."}]}
            return dict(await agent.ainvoke(question))

        result = asyncio.run(run())
    tool_messages = [m for m in result["messages"] if m.type == "tool"]
    assert [m.name for m in tool_messages] == [name for name, _ in turns[0]]
    assert [m.status for m in tool_messages] == ["success"] * 3 + ["error"]
    assert "unknown character 'Nobody'" in str(tool_messages[-1].content)
    final = str(result["messages"][-1].content)
    assert ANSWER in final and "(bookmark " in final and "as of chapter 2" in final


def test_three_calls_for_one_character_spelled_three_ways_make_one_run(world: World) -> None:
    """The second and third call join the first run (one folder key), and pay nothing."""
    before = len(world.llm.requests)
    spellings = [("Raoh", HOKUTO), ("raoh", HOKUTO), (" RAOH ", HOKUTO.lower())]

    async def run() -> list[str]:
        server = build_server(options(world))
        async with create_connected_server_and_client_session(server) as session:
            calls = (
                session.call_tool("profile_character", {"name": name, "franchise": franchise})
                for name, franchise in spellings
            )
            return [text_of(result) for result in await asyncio.gather(*calls)]

    answers = asyncio.run(run())
    saved = json.loads((world.root / "profiles" / RAOH_KEY / "profile.json").read_text())
    assert len(set(answers)) == 1 and f"Saved as personae://profiles/{RAOH_KEY} (" in answers[0]
    assert len(world.llm.requests) - before == saved["usage"]["llm_calls"]  # one run's calls
