"""Every example in examples/ runs against the loopback model, as a user would run it.

The examples are run in this process (``runpy``, then their ``main(argv)``) with the settings in
the environment, the studio world's files and its scripted model behind the real OpenAI client
on loopback. The Studio inputs of examples/studio/ are checked against each graph's own input
schema and context class (the server test runs the same shapes through ``langgraph dev``).
"""

from __future__ import annotations

import json
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_world import World, serve_world
from pydantic import TypeAdapter
from studio_world import ANSWER, GRAPHS, PERSONA_DIR, STORY, graph_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def example(name: str) -> Callable[[list[str]], int]:
    """The ``main`` of ``examples/NAME.py`` (its module run, its ``__main__`` block not)."""
    namespace = runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=f"example_{name}")
    main: Callable[[list[str]], int] = namespace["main"]
    return main


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Callable[[World], None]:
    def apply(world: World) -> None:
        for name, value in world.settings().items():
            monkeypatch.setenv(name, value)

    return apply


BAD_CALL = ("ask_character", {"character": "Nobody", "question": "Hi?"})
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("profile_character", {"name": "Kenshiro", "franchise": "Fist of the North Star"}),
    ("ask_character", {"character": "Megumin", "question": "What do you love?"}),
    ("storyline_memory", {"character": "Haruhi", "question": "Where is Haruhi?", "position": 120}),
    (
        "arcane_act",
        {"novel": "the_river", "character": "Ada", "chapter": 2, "scenario": "A ferry."},
    ),
    BAD_CALL,
]


@pytest.fixture
def agent_world(tmp_path: Path, settings: Callable[[World], None]) -> Iterator[World]:
    with serve_world(tmp_path, turns=[CALLS]) as world:
        settings(world)
        yield world


@pytest.mark.endtoend
def test_the_react_agent_uses_the_four_tools_and_survives_a_failing_one(
    agent_world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    root = agent_world.root
    argv = ["Tell me about them.", "--personas", str(root / PERSONA_DIR),
            "--storyline", str(root / STORY), "--data", str(root / "data"),
            "--wiki", agent_world.web_url]  # fmt: skip
    assert example("react_agent")(argv) == 0
    answer = capsys.readouterr().out
    assert "I am Kenshiro" in answer and ANSWER in answer
    assert "(bookmark " in answer and "(as of chapter 2, arc mode)" in answer
    assert "unknown character 'Nobody'" in answer  # the failed call, reported
    last = agent_world.llm.agent_requests[-1]["messages"]
    tool_messages = [m for m in last if m["role"] == "tool"]
    assert len(tool_messages) == len(CALLS)  # every call answered, the failing one too


def test_the_react_agent_reports_a_missing_llm_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert example("react_agent")(["Hi?", "--personas", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "OPENAI_API_KEY" in err


@pytest.mark.endtoend
def test_the_parent_graph_profiles_indexes_and_talks(
    tmp_path: Path, settings: Callable[[World], None], capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_world(tmp_path) as world:
        settings(world)
        personas = tmp_path / "new-personas"
        argv = ["Kenshiro", "--franchise", "Fist of the North Star", "--wiki", world.web_url,
                "--personas", str(personas), "--question", "What do you love?"]  # fmt: skip
        assert example("profile_then_talk")(argv) == 0
    assert capsys.readouterr().out == f"Kenshiro: {ANSWER}\n"
    from personae.memory.amadeus.persona_store import indexed_personas, open_client

    [manifest] = indexed_personas(open_client(str(personas)))
    assert manifest["character"] == "Kenshiro" and manifest["source_kind"] == "profile"


@pytest.mark.parametrize("graph", GRAPHS)
def test_every_graph_has_a_studio_input_its_schemas_accept(graph: str) -> None:
    example_file = json.loads((EXAMPLES / "studio" / f"{graph}.json").read_text())
    assert example_file["graph"] == graph and isinstance(example_file["prepare"], list)
    import importlib

    compiled = importlib.import_module(graph_module(graph)).graph
    builder = compiled.builder
    TypeAdapter(builder.input_schema).validate_python(example_file["input"], strict=True)
    unknown = set(example_file["input"]) - set(builder.input_schema.__annotations__)
    assert not unknown, unknown
    context = builder.context_schema(**example_file["context"])  # fills the rest: settings
    for key, value in example_file["context"].items():
        assert getattr(context, key) == value, key
