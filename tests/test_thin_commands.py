"""The CLI commands are thin callers: the runners write the output files, not the commands.

Issue 25: a job's files (results, reports, profiles) are written by the library runner the
CLI, the MCP server, ``--server`` runs and apps all call, so a library user gets the same files
as ``personae ...``. This reads every command module and fails when one writes a file itself
(``write_text``, ``write_*_atomic``, ``append_jsonl``, ``json.dump``, ``open(..., "w")``,
``mkdir``...), except the modules listed below, whose jobs have no runner yet. The list is
exact: a module that stops writing must leave it, so it only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ROOT / "personae" / "commands"
WRITERS = frozenset(
    {
        "write_text",
        "write_bytes",
        "write_text_atomic",
        "write_json_atomic",
        "write_jsonl_atomic",
        "append_jsonl",
        "dump",
        "mkdir",
        "touch",
        "write_profile",
        "write_draft",
        "save_novel",
    }
)
"""Path's writers, :mod:`personae.files`', the stores' and ``json.dump``: what writes a file
(not ``sys.stdout.write`` or ``json.dumps``, which print). A writer handed on
(``asyncio.to_thread(write_profile, ...)``) counts as a call."""
NO_RUNNER_YET: dict[str, str] = {}
"""Command modules that still write their files, and what: each is a job to move into a runner."""


def writes(source: str) -> list[str]:
    """The calls in ``source`` that write a file (or hand a writer on), as source text."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name in WRITERS:
                found.append(ast.unparse(node))
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        name = node.func.id if isinstance(node.func, ast.Name) else name
        modes = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
        mode = next(
            (m.value for m in modes if isinstance(m, ast.Constant) and isinstance(m.value, str)),
            "r",
        )
        if name == "open" and set(mode) & set("wax+"):
            found.append(ast.unparse(node))
    return found


def test_the_check_finds_each_kind_of_write_and_nothing_that_prints() -> None:
    planted = """
path.write_text("x")
write_json_atomic(out / "summary.json", summary)
files.append_jsonl(out / "results.jsonl", record)
json.dump(data, handle)
open(path, "w")
path.open(mode="a")
out.mkdir(parents=True)
await asyncio.to_thread(write_profile, out, values)
"""
    assert len(writes(planted)) == 8
    harmless = """
sys.stdout.write(text)
json.dumps(data)
open(path)
path.open("r", encoding="utf-8")
writer.writerow(row)
name.replace("_", "-")
write_arcane_report(out)
"""
    assert writes(harmless) == []


def test_no_command_with_a_runner_writes_files_itself() -> None:
    writing = {
        path.relative_to(COMMANDS).as_posix(): found
        for path in sorted(COMMANDS.rglob("*.py"))
        if (found := writes(path.read_text(encoding="utf-8")))
    }
    unexpected = {module: calls for module, calls in writing.items() if module not in NO_RUNNER_YET}
    assert unexpected == {}, "a command writes files: move the writing into its runner"
    stale = sorted(set(NO_RUNNER_YET) - set(writing))
    assert stale == [], "these commands write no file any more: drop them from NO_RUNNER_YET"


RUNS_A_PROTOCOL_ITSELF: dict[str, str] = {}
"""Command modules that still run an evaluation protocol's coroutines themselves, and why;
like NO_RUNNER_YET, exact and only shrinking."""


def protocol_coroutines(path: Path) -> list[str]:
    """The coroutine functions ``path`` imports from ``personae.evals.<paper>...`` that are not
    public runners (``personae.evals.__all__``): protocol work a runner should do."""
    import importlib
    import inspect

    import personae.evals

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("personae.evals."):
            module = importlib.import_module(str(node.module))
            found += [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if inspect.iscoroutinefunction(getattr(module, alias.name, None))
                and alias.name not in personae.evals.__all__
            ]
    return found


def test_commands_call_runners_not_the_protocols_inside_them() -> None:
    """Issue 34: the personality, persona-QA and profile-evaluation commands ran the protocol
    themselves (built the interviewees, found the references, estimated, ran the eval
    coroutine); their runners do now."""
    running = {
        path.relative_to(COMMANDS).as_posix(): found
        for path in sorted(COMMANDS.rglob("*.py"))
        if (found := protocol_coroutines(path))
    }
    assert set(running) == set(RUNS_A_PROTOCOL_ITSELF), running
