"""Folders import downward only, papers stay apart, and graph state holds typed records.

core (``personae/``: settings, llm, files) < ``memory/`` < ``tools/`` and ``agents/`` (which
never import each other) < ``graphs/`` < ``evals/`` < the runners (``personae/runners/``, one
module per paper) < the CLI commands, the MCP server (``personae/mcp/``) and the web page
(``personae/web/``) and the OpenAI-compatible chat server (``personae/openai_api/``), edges alike < the two front doors (``personae/__init__.py`` and
``evals/__init__.py``, ``personae.evals``, which name every public thing). Inside each job folder (and ``personae/commands/``) one subfolder per paper, in ``personae/runners/`` one
module per paper (``<paper>_<part>.py`` when a job needs two, as ARCANE's evaluation); a paper's code imports another paper's
subfolder never: what two papers share lives at a folder root. Imports inside functions count
too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import importlib
import typing
from pathlib import Path

from source_tree import walked
from studio_world import GRAPHS, graph_module
from typing_extensions import TypedDict, is_typeddict

ROOT = Path(__file__).resolve().parents[1]
PAPERS = ("characterhub", "bookmarks", "amadeus", "arcane")
RANK = {
    "core": 0,
    "memory": 1,
    "tools": 2,
    "agents": 2,
    "graphs": 3,
    "evals": 4,
    "runners": 5,
    "commands": 6,
    "front": 7,
}
FOLDERS = ("agents", "tools", "memory", "graphs", "evals")
KNOWN_UPWARD: set[tuple[str, str]] = set()
"""Exact (file, module) pairs still pointing up; any other upward import fails the test."""


def layer_of_module(name: str) -> str | None:
    """The layer of an imported ``personae...`` module (None: not ours)."""
    parts = name.split(".")
    if parts[0] != "personae":
        return None
    if len(parts) > 1 and parts[1] in FOLDERS:
        return parts[1]
    if len(parts) > 1 and parts[1] == "runners":
        return "runners"  # one per paper: the whole job, below its thin callers
    if len(parts) > 1 and parts[1] in ("commands", "cli", "mcp", "web", "openai_api"):
        return "commands"  # the edges: the CLI, the MCP server, the web page, the chat API
    return "core"  # ``personae`` itself: ``from personae import __version__``


def paper_of_module(name: str) -> str | None:
    """The paper whose subfolder holds ``name`` (None: a folder root or core)."""
    parts = name.split(".")
    if len(parts) > 2 and parts[0] == "personae" and parts[1] == "runners":
        paper = parts[2].split("_")[0]  # runners/arcane_eval.py: ARCANE's job in two files
        return paper if paper in PAPERS else None
    if len(parts) > 2 and parts[0] == "personae" and parts[1] in (*FOLDERS, "commands"):
        return parts[2] if parts[2] in PAPERS else None
    return None


def paper_of_file(path: Path) -> str | None:
    relative = path.relative_to(ROOT).parts
    if relative[0] in FOLDERS and len(relative) > 2:
        return relative[1] if relative[1] in PAPERS else None
    if relative[:2] == ("personae", "commands") and len(relative) > 3:
        return relative[2] if relative[2] in PAPERS else None
    if relative[:2] == ("personae", "runners") and len(relative) == 3:
        paper = relative[2].removesuffix(".py").split("_")[0]
        return paper if paper in PAPERS else None
    return None


def layer_of_file(path: Path) -> str:
    relative = path.relative_to(ROOT).parts
    if relative in (("personae", "__init__.py"), ("evals", "__init__.py")):
        return "front"  # the two faces of the API: personae (apps) and personae.evals
    if relative[0] in FOLDERS:
        return relative[0]
    if relative[:2] == ("personae", "runners"):
        return "runners"
    edges = (
        ("personae", "commands"),
        ("personae", "mcp"),
        ("personae", "web"),
        ("personae", "openai_api"),
    )
    if relative[:2] in edges or relative[-1] == "cli.py":
        return "commands"  # the edges: the CLI, the MCP server, the web page, the chat API
    return "core"


def imported_modules(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in walked(path):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def test_every_import_points_down_or_within_its_folder() -> None:
    files = [p for folder in (*FOLDERS, "personae") for p in (ROOT / folder).rglob("*.py")]
    assert len(files) > 50
    wrong: list[str] = []
    for path in files:
        mine = layer_of_file(path)
        for line, module in imported_modules(path):
            theirs = layer_of_module(module)
            if theirs is None or theirs == mine:
                continue
            if (str(path.relative_to(ROOT)), module) in KNOWN_UPWARD:
                continue
            if RANK[theirs] >= RANK[mine]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {module}")
    assert wrong == []


def test_no_paper_imports_another_papers_subfolder() -> None:
    files = [p for folder in (*FOLDERS, "personae") for p in (ROOT / folder).rglob("*.py")]
    crossing: list[str] = []
    for path in files:
        mine = paper_of_file(path)
        for line, module in imported_modules(path):
            theirs = paper_of_module(module)
            if theirs is not None and mine is not None and theirs != mine:
                crossing.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {module}")
    assert crossing == []


def test_every_paper_module_lives_in_its_subfolder() -> None:
    """No module of a job folder's root is named after a paper (``graphs/arcane_x.py``)."""
    prefixes = ("arcane", "amadeus", "bookmark", "profiler", "persona", "novel", "arc_", "probe")
    flat = [
        f"{folder}/{path.name}"
        for folder in (*FOLDERS, "personae/commands")
        for path in (ROOT / folder).glob("*.py")
        if path.name.startswith(prefixes)
    ]
    assert flat == []
    for folder in (*FOLDERS, "personae/commands"):
        for paper in (ROOT / folder).iterdir():
            if paper.is_dir() and paper.name != "__pycache__" and (paper / "__init__.py").exists():
                assert paper.name in PAPERS, f"{folder}/{paper.name} is not a paper subfolder"


def _loose_records(hint: object, where: str, seen: set[object]) -> list[str]:
    """Where ``hint`` holds a list of untyped records (``list[dict[str, Any]]``), nested
    TypedDicts (an arc's trajectory inside the arc's JSON) included."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Annotated:
        return _loose_records(args[0], where, seen)
    if is_typeddict(hint):
        if hint in seen:
            return []
        seen.add(hint)
        fields = typing.get_type_hints(hint, include_extras=True)
        name = getattr(hint, "__name__", "?")
        return [
            p for f, h in fields.items() for p in _loose_records(h, f"{where}.{name}.{f}", seen)
        ]
    if typing.get_origin(hint) is list and args:
        item = args[0]
        if typing.get_origin(item) is dict and typing.get_args(item)[1] is typing.Any:
            return [where]
    return [p for arg in args for p in _loose_records(arg, where, seen)]


def test_records_inside_graph_state_are_typed() -> None:
    loose: list[str] = []
    for name in GRAPHS:
        module = importlib.import_module(graph_module(name))
        builder = module.graph.builder
        for schema in {builder.state_schema, builder.output_schema}:
            hints = typing.get_type_hints(schema, include_extras=True)
            for field, hint in hints.items():
                loose += _loose_records(hint, f"{name}: {field}", set())
    assert loose == []


class _Inner(TypedDict):
    rows: list[dict[str, typing.Any]]


class _Outer(TypedDict):
    inner: list[_Inner]


def test_the_typed_state_check_looks_inside_nested_records() -> None:
    assert _loose_records(_Outer, "state", set()) == ["state._Outer.inner._Inner.rows"]


def test_graph_nodes_are_under_forty_lines() -> None:
    """Every function a graph adds as a node (``add_node(fn)``) is short (STYLE.md: < 40)."""
    lengths: dict[str, list[tuple[str, int]]] = {}
    nodes: set[str] = set()
    for path in (ROOT / "graphs").rglob("*.py"):
        for node in walked(path):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                lengths.setdefault(node.name, []).append((str(path.relative_to(ROOT)), size))
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_node":
                nodes |= {a.id for a in node.args if isinstance(a, ast.Name)}
    assert {"prepare_arc", "match_bookmarks", "summarize_evidence"} <= nodes
    long = [
        f"{where}: {name} has {size} lines"
        for name in sorted(nodes)
        for where, size in lengths.get(name, [])
        if size >= 40
    ]
    assert long == []


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("").parts
    parts = relative[:-1] if relative[-1] == "__init__" else relative
    return ".".join(parts if parts[0] == "personae" else ("personae", *parts))


def import_cycles() -> list[list[str]]:
    """Groups of our modules that import each other, directly or around a circle."""
    paths = [p for folder in (*FOLDERS, "personae") for p in (ROOT / folder).rglob("*.py")]
    modules = {_module_name(p): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        wanted = {module for _, module in imported_modules(path)}
        for node in walked(path):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                wanted |= {f"{node.module}.{alias.name}" for alias in node.names}  # submodules
        graph[name] = {m for m in wanted if m in modules and m != name}
    reach = {name: _reach(graph, name) for name in graph}
    groups = {
        tuple(sorted({name} | {m for m in reach[name] if name in reach[m]}))
        for name in graph
        if name in reach[name]
    }
    return sorted(list(group) for group in groups)


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo += graph[current]
    return seen


def test_no_import_cycle() -> None:
    """Lazy imports count: memory.embeddings opening memory.minilm must not be imported back."""
    assert import_cycles() == []


def test_every_job_folder_says_what_it_holds() -> None:
    """The folder names mislead on their own (``tools/`` holds no LangChain tool, ``agents/`` no
    agent): each root ``__init__`` states what it holds and what lives elsewhere."""
    docs = {
        folder: importlib.import_module(f"personae.{folder}").__doc__ or "" for folder in FOLDERS
    }
    assert [f for f, doc in docs.items() if "Holds:" not in doc or "Not here:" not in doc] == []
    assert "graphs/<paper>/tool.py" in docs["tools"] and "LLM roles, not agents" in docs["agents"]


def test_no_graph_builder_takes_a_store_no_node_reads() -> None:
    """``build_graph(checkpointer)``: a ``store`` parameter no node read and no caller passed
    was removed from six builders (a LangGraph ``BaseStore`` comes back when a graph keeps
    something across threads)."""
    import inspect

    modules = {graph_module(name) for name in GRAPHS}
    with_store = [
        module
        for module in sorted(modules)
        if hasattr(importlib.import_module(module), "build_graph")
        and "store" in inspect.signature(importlib.import_module(module).build_graph).parameters
    ]
    assert len(modules) >= 9 and with_store == []
