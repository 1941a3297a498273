"""The README's "Adding a paper" guide, followed: a stub paper added to a copy of the repository.

The stub (ECHO: one graph that repeats a line, one role, one runner, one command) is added to a
copy of the files git tracks, by the guide's steps only; the layer, Studio-input, public-API and wheel
checks then run on the copy and must pass. Every file the stub touches must be named by the
guide, so a step a test requires cannot go missing from it; and a copy that skips a step
(the paper list of the layer check) must fail, so the checks see what the guide asks for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from wheel_world import JOB_FOLDERS, copy_checkout

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

STUB_FILES = {
    "agents/echo/__init__.py": '"""ECHO (a stub paper for the guide\'s test): its roles."""\n',
    "agents/echo/echoer.py": '''"""The echoer: the line, repeated (a stub role: no model call)."""


def echo_line(line: str, times: int) -> str:
    """``line`` ``times`` times, space-separated."""
    return " ".join([line] * times)
''',
    "graphs/echo/__init__.py": '"""ECHO: its graph (a stub paper for the guide\'s test)."""\n',
    "graphs/echo/graph.py": '''"""The ECHO graph: one node repeating the input line (a stub paper)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from personae.agents.echo.echoer import echo_line
from personae.graphs.server_entry import server_entry


class EchoInput(TypedDict):
    """What to echo."""

    line: str
    """The line."""


class EchoState(EchoInput):
    """The line and its echo."""

    echo: str
    """The line, repeated."""


@dataclass(frozen=True, kw_only=True)
class EchoContext:
    """Run settings of the stub."""

    times: int = 2
    """How many times the line is said."""


def repeat(state: EchoState, runtime: Runtime[EchoContext]) -> dict[str, Any]:
    """Repeat the line."""
    return {"echo": echo_line(state["line"], runtime.context.times)}


builder = StateGraph(EchoState, context_schema=EchoContext, input_schema=EchoInput)
builder.add_node(repeat)
builder.add_edge(START, "repeat")
builder.add_edge("repeat", END)
graph = builder.compile(name="echo")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The graph compiled with a checkpointer (CLI, tests); ``graph`` has none."""
    return builder.compile(checkpointer=checkpointer, name="echo")
''',
    "personae/runners/echo.py": '''"""ECHO as a library call (a stub paper)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from personae.progress import Progress, quiet

if TYPE_CHECKING:
    from personae.graphs.echo.graph import EchoContext


@dataclass(frozen=True)
class Echo:
    """What the ECHO graph said."""

    echo: str


async def echo_twice(
    line: str, *, context: EchoContext | None = None, progress: Progress = quiet
) -> Echo:
    """The line, said twice by the ECHO graph."""
    from personae.graphs.echo.graph import EchoContext, build_graph

    progress(f"echoing {line!r}")
    result = await build_graph().ainvoke({"line": line}, context=context or EchoContext())
    return Echo(str(result["echo"]))
''',
    "personae/commands/echo/__init__.py": '''"""The ECHO commands: ``personae echo <command>`` (a stub paper)."""

HELP = "ECHO: a line, said back"
"""The group's line in ``personae --help``."""
''',
    "personae/commands/echo/say.py": '''"""`personae echo say`: the line, said twice by the ECHO runner (a stub command)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(commands: Any) -> None:
    """Add `echo say`."""
    parser = commands.add_parser("say", help="say LINE twice")
    parser.add_argument("line", help="what to say")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print what the runner says."""
    import asyncio

    from personae.runners.echo import echo_twice

    sys.stdout.write(asyncio.run(echo_twice(args.line)).echo + "\\n")
    return 0
''',
    "examples/studio/echo.json": json.dumps(
        {"graph": "echo", "prepare": [], "input": {"line": "hi"}, "context": {"times": 3}},
        indent=2,
    )
    + "\n",
}
"""New files, by path."""


def _edit(root: Path, path: str, old: str, new: str) -> None:
    target = root / path
    text = target.read_text(encoding="utf-8")
    assert old in text, f"{path} no longer holds {old!r}: update the guide and this test"
    target.write_text(text.replace(old, new, 1), encoding="utf-8")


def _add_to_langgraph_json(root: Path) -> None:
    config = json.loads((root / "langgraph.json").read_text(encoding="utf-8"))
    config["graphs"]["echo"] = "./graphs/echo/graph.py:served"
    (root / "langgraph.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def add_stub_paper(root: Path, *, skip: str = "") -> list[str]:
    """Follow the guide in ``root`` (leaving out the file ``skip``); the files touched."""
    for path, text in STUB_FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    touched = list(STUB_FILES)
    if skip != "tests/test_layers.py":
        _edit(root, "tests/test_layers.py", '"arcane")', '"arcane", "echo")')
        touched.append("tests/test_layers.py")
    _edit(
        root,
        "personae/__init__.py",
        "_EXPORTS: dict[str, tuple[str, str]] = {\n",
        '_EXPORTS: dict[str, tuple[str, str]] = {\n    "echo_twice": ("personae.runners.echo", "echo_twice"),\n'
        '    "Echo": ("personae.runners.echo", "Echo"),\n',
    )
    # __all__ and the TYPE_CHECKING imports come from the table
    subprocess.run([sys.executable, "scripts/public_names.py"], cwd=root, check=True)
    _add_to_langgraph_json(root)
    return sorted([*touched, "personae/__init__.py", "langgraph.json"])


def generic(path: str) -> str:
    """How the guide names a touched file: the paper as ``<paper>``, the graph as ``<graph>``."""
    parts = path.split("/")
    if parts[0] in JOB_FOLDERS and parts[1] == "echo":
        return f"{parts[0]}/<paper>/"
    if parts[:3] == ["personae", "commands", "echo"]:
        return "personae/commands/<paper>/"
    return path.replace("runners/echo.py", "runners/<paper>.py").replace(
        "studio/echo.json", "studio/<graph>.json"
    )


def guide() -> str:
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    start = text.index("### Adding a paper")
    return text[start : text.index("\n## ", start)]


CHECKS = [
    "tests/test_layers.py",
    "tests/test_public_api.py",
    "tests/test_api_shape.py",
    "tests/test_examples.py::test_every_graph_has_a_studio_input_its_schemas_accept",
    "tests/test_wheel.py",
]


def run_checks(root: Path, *tests: str) -> subprocess.CompletedProcess[str]:
    """pytest on ``tests`` in the copy, importing the copy's ``personae`` (it comes first on
    the path: the checkout's editable install only answers what the copy does not hold)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    for git in (["init", "-q"], ["add", "-A"]):  # the wheel test copies what git tracks
        subprocess.run(["git", *git], cwd=root, check=True, capture_output=True)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_guide_names_every_file_the_stub_paper_touches(tmp_path: Path) -> None:
    touched = add_stub_paper(copy_checkout(tmp_path))
    text = guide()
    assert [p for p in touched if f"`{generic(p)}" not in text] == []
    assert len(touched) == 11  # the figure in the report: files touched to add a paper


def test_a_stub_paper_added_by_the_guide_passes_the_checks(tmp_path: Path) -> None:
    root = copy_checkout(tmp_path)
    add_stub_paper(root)
    done = run_checks(root, *CHECKS)
    assert done.returncode == 0, done.stdout[-4000:]
    assert " passed" in done.stdout and "echo" in (root / "langgraph.json").read_text()


def test_a_stub_paper_command_runs_under_its_group(tmp_path: Path) -> None:
    """The command module alone makes ``personae echo say``: no table, no list to edit."""
    root = copy_checkout(tmp_path)
    add_stub_paper(root)
    env = {**os.environ, "PYTHONPATH": str(root)}
    cli = [sys.executable, "-c", "from personae.cli import run; run()"]
    said = subprocess.run(
        [*cli, "echo", "say", "hi"], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert (said.returncode, said.stdout, said.stderr) == (0, "hi hi\n", "")
    shown = subprocess.run(
        [*cli, "--help"], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert "echo" in shown.stdout and "ECHO: a line, said back" in shown.stdout


def test_a_stub_paper_missing_a_step_fails_the_checks(tmp_path: Path) -> None:
    root = copy_checkout(tmp_path)
    add_stub_paper(root, skip="tests/test_layers.py")
    done = run_checks(root, "tests/test_layers.py::test_every_paper_module_lives_in_its_subfolder")
    assert done.returncode == 1, done.stdout[-2000:]
    assert "is not a paper subfolder" in done.stdout
