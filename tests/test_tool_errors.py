"""Every error a Personae tool hands an agent names the tool to call next, never a CLI command.

The reader of a tool error is a model holding tools: ``personae amadeus index ...`` or
``--wiki`` is advice it cannot follow (issue 35: the ask tool's error told the agent to run a
CLI command). Each error path of the four tools is triggered for real, on the studio world's
files; each message must name a tool of the set, by name, and no command or flag.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from profiler_world import profiler_context, serve_fake_web
from studio_world import DATA_DIR, PERSONA_DIR, STORY, prepare
from studio_world import scripted_model as runner_model

from personae import (
    AmadeusContext,
    RoleplayContext,
    create_arcane_act_tool,
    create_ask_character_tool,
    create_profile_tool,
    create_storyline_memory_tool,
)
from personae.errors import ConfigurationError, InputError, RemoteError
from personae.graphs.tool_errors import tool_message
from personae.testing import override_models

MODEL = "openai:error-world"
CLI = re.compile(r"\bpersonae [a-z]|(?<![\w-])--[a-z]")
NAMED = re.compile(r"\bcall (\w+)")


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, BaseTool]]:
    """The four tools over the studio world (a Megumin persona, a storyline, a novel)."""
    override_models(specs={MODEL: runner_model()})
    prepare(tmp_path)
    amadeus = AmadeusContext(
        model=MODEL, memory_dir=str(tmp_path / PERSONA_DIR), embedding="hashing"
    )
    with serve_fake_web(monkeypatch) as web:
        made = [
            create_profile_tool(
                profiler_context(web, "error-world", web_search=False),
                wiki=web.url,
                index=amadeus,
            ),
            create_ask_character_tool(amadeus),
            create_storyline_memory_tool(str(tmp_path / STORY), model=MODEL, embedding="hashing"),
            create_arcane_act_tool(
                RoleplayContext(data_dir=str(tmp_path / DATA_DIR), model=MODEL, embedding="hashing")
            ),
        ]
        yield {tool.name: tool for tool in made}


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("profile_character", {"name": "Nobody Atall"}, "no page for 'Nobody Atall'"),
    ("ask_character", {"character": "Nobody", "question": "Hi?"}, "unknown character 'Nobody'"),
    ("ask_character", {"character": "Megumin", "question": "  "}, "the message is empty"),
    (
        "storyline_memory",
        {"character": "Haruhi", "question": "Where?", "position": 99999},
        "position",
    ),
    ("storyline_memory", {"character": "Nobody", "question": "Where?", "position": 5}, "Nobody"),
    ("storyline_memory", {"character": "Haruhi", "question": " ", "position": 5}, "question"),
    (
        "arcane_act",
        {"novel": "no_such_book", "character": "Ada", "chapter": 2, "scenario": "x"},
        "no_such_book",
    ),
    (
        "arcane_act",
        {"novel": "the_river", "character": "Ada", "chapter": 999, "scenario": "x"},
        "999",
    ),
    (
        "arcane_act",
        {"novel": "the_river", "character": "Nobody", "chapter": 2, "scenario": "x"},
        "Nobody",
    ),
]


async def test_every_tool_error_names_a_tool_of_the_set_and_no_command(
    tools: dict[str, BaseTool],
) -> None:
    for number, (name, args, problem) in enumerate(BAD_CALLS):
        call = {"type": "tool_call", "id": f"call-{number}", "name": name, "args": args}
        message = await tools[name].ainvoke(call)
        text = str(message.content)
        assert message.status == "error", (name, args, text)
        assert problem in text and "\n" not in text, text
        assert not CLI.search(text), text
        named = NAMED.findall(text)
        assert named and set(named) <= set(tools), text


async def test_a_character_without_an_index_sends_the_agent_to_profile_it(
    tools: dict[str, BaseTool],
) -> None:
    call = {"type": "tool_call", "id": "c", "name": "ask_character"}
    message = await tools["ask_character"].ainvoke(
        {**call, "args": {"character": "Nobody", "question": "Hi?"}}
    )
    assert message.content == (
        "unknown character 'Nobody' (indexed: Megumin); call profile_character with the "
        "character's name to research and index them, then call ask_character again"
    )


def test_a_setup_error_is_the_users_to_fix_and_keeps_only_a_fix_they_can_follow() -> None:
    remote = RemoteError("the LLM server is unreachable", "start it, or run personae doctor")
    assert tool_message(remote, "ask_character") == (
        "the LLM server is unreachable; not the call's fault: tell the user, or call "
        "ask_character again later"
    )
    setting = ConfigurationError("no LLM is configured", "set OPENAI_API_KEY")
    assert tool_message(setting, "arcane_act") == (
        "no LLM is configured; not the call's fault: tell the user (set OPENAI_API_KEY), or "
        "call arcane_act again later"
    )
    bad = InputError("the scenario is empty", 'pass a scenario, e.g. "A letter arrives."')
    assert tool_message(bad, "arcane_act") == (
        'the scenario is empty; pass a scenario, e.g. "A letter arrives.", then call '
        "arcane_act again"
    )
    flagged = InputError("chapter 9 is past the end", "use --chapter 1 to 4")
    assert tool_message(flagged, "arcane_act") == (
        "chapter 9 is past the end; call arcane_act again with other arguments"
    )
    aside = InputError("chapter 9 is out of range", "use 1 to 4 (personae arcane chapters x)")
    assert tool_message(aside, "arcane_act") == (
        "chapter 9 is out of range; use 1 to 4, then call arcane_act again"
    )
