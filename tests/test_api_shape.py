"""Every public call of both faces (``personae``, ``personae.evals``) has one shape.

Required inputs positional, the rest keyword-only; run settings in ``context=``; steps reported
to ``progress=`` (the one :class:`personae.Progress`); a typed result (a dataclass or a pydantic
model, or an async iterator or list of one), never ``dict[str, Any]``; errors from the one family
(:class:`personae.PersonaeError`). The calls that differ are listed below by name, each with why.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

import personae
import personae.evals
from personae.errors import PersonaeError
from personae.progress import Progress

FACES = {"personae": personae, "personae.evals": personae.evals}
BUILDERS = re.compile(r"build_\w+_graph$")
"""Graph builders: ``build_graph(checkpointer)`` returns the compiled graph (no run yet)."""
TOOL_FACTORIES = re.compile(r"create_\w+_tool$")
"""Tool factories: a context in, a LangChain tool out (the agent runs it, not the app)."""
NOT_RUNNERS = {
    "load_settings": "reads the environment once: it makes the settings contexts start from",
    "persona_index_settings": "builds the record of where and how a persona is indexed",
    "profile_document": "turns a profiler result into the profile record (no run)",
    "load_profile_document": "reads one profile.json into its record",
    "read_votes": "parses an annotators' CSV into the votes resume_with_votes takes",
    "read_character_list": "parses a CSV of characters into the rows profile_characters takes",
}
"""Public callables that run nothing: helpers that make or read a record."""
NO_CONTEXT = {
    "import_novel": "no model: splits a text file into chapters; its keywords are its settings",
    "export_rating_sheet": "no model: samples rows of results.jsonl into a CSV sheet",
    "write_arcane_report": "no model: rebuilds the reports from the folder's results.jsonl",
}
"""Runners without a ``context=`` keyword, and why."""
SESSIONS = {
    "open_chat": "opens a conversation: a Chat holds the graph and its checkpointer open (an "
    "async context manager) and returns a typed ChatTurn per turn",
}
"""Runners that return an open resource instead of a record, and why."""
NO_PROGRESS = {
    "predict_action": "one story position: a single step of the graph",
    "ask_character": "one question, one answer",
    "open_chat": "opens a conversation; each turn is one answer",
    "act_at_chapter": "one scene, one answer",
    "index_persona": "one persona; re-indexing embeds only the sections that changed",
    "import_novel": "no model: a text file split in one pass",
    "export_rating_sheet": "no model: one pass over results.jsonl",
    "write_arcane_report": "no model: one pass over results.jsonl",
    "export_vote_sheet": "reads the paused builds' checkpoints into one sheet (no model)",
}
"""Runners without a ``progress=`` keyword: their work is one short step."""


def public_callables() -> list[tuple[str, str]]:
    """(face, name) of every public function of both faces (classes are result types,
    contexts, the error family and the Progress protocol)."""
    return [
        (face, name)
        for face, module in FACES.items()
        for name in sorted(module._EXPORTS)
        if inspect.isfunction(getattr(module, name))
    ]


def runners() -> list[tuple[str, str]]:
    return [
        (face, name)
        for face, name in public_callables()
        if not BUILDERS.match(name) and not TOOL_FACTORIES.match(name) and name not in NOT_RUNNERS
    ]


def resolve(function: Callable[..., Any], annotation: str) -> Any:
    """The object a string annotation names, looked up as the function's module sees it
    (its globals, else what its ``TYPE_CHECKING`` or in-function imports bind)."""
    module = sys.modules[function.__module__]
    if hasattr(module, annotation):
        return getattr(module, annotation)
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == annotation:
                    return getattr(importlib.import_module(node.module), alias.name)
    raise AssertionError(f"{function.__name__}: cannot resolve {annotation!r}")


def is_typed_result(value: Any) -> bool:
    return dataclasses.is_dataclass(value) or (
        isinstance(value, type) and issubclass(value, BaseModel)
    )


def result_type(function: Callable[..., Any]) -> Any:
    """The class a call returns: ``X``, ``list[X]`` or ``AsyncIterator[X]`` give ``X``."""
    annotation = inspect.signature(function).return_annotation
    text = annotation if isinstance(annotation, str) else annotation.__name__
    found = re.fullmatch(r"(?:list|AsyncIterator|Sequence)\[(\w+)\]|(\w+)", text.strip())
    assert found, f"{function.__name__} returns {text}, not a result type"
    return resolve(function, found.group(1) or found.group(2))


@pytest.mark.parametrize(("face", "name"), runners())
def test_every_runner_returns_a_typed_result(face: str, name: str) -> None:
    function = getattr(FACES[face], name)
    returned = result_type(function)
    if name in SESSIONS:
        assert hasattr(returned, "__aenter__") and hasattr(returned, "__aexit__"), name
        return
    assert is_typed_result(returned), f"{face}.{name}: not a dataclass or a model"


@pytest.mark.parametrize(("face", "name"), runners())
def test_required_inputs_are_positional_and_the_rest_keywords(face: str, name: str) -> None:
    parameters = inspect.signature(getattr(FACES[face], name)).parameters.values()
    positional = [p for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in positional if p.default is not p.empty] == [], f"{face}.{name}"
    assert [p.name for p in parameters if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)] == []


@pytest.mark.parametrize(("face", "name"), [r for r in runners() if r[1] not in NO_CONTEXT])
def test_run_settings_come_in_context(face: str, name: str) -> None:
    parameters = inspect.signature(getattr(FACES[face], name)).parameters
    assert "context" in parameters, f"{face}.{name} takes no context="
    assert parameters["context"].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize(("face", "name"), [r for r in runners() if r[1] not in NO_PROGRESS])
def test_long_runs_report_to_the_one_progress(face: str, name: str) -> None:
    function = getattr(FACES[face], name)
    parameters = inspect.signature(function).parameters
    assert "progress" in parameters, f"{face}.{name} takes no progress="
    progress = parameters["progress"]
    assert progress.kind is inspect.Parameter.KEYWORD_ONLY
    assert resolve(function, str(progress.annotation)) is Progress, progress.annotation
    assert progress.default is not inspect.Parameter.empty  # quiet unless asked


@pytest.mark.parametrize(("face", "name"), public_callables())
def test_every_error_a_call_names_is_of_the_one_family(face: str, name: str) -> None:
    """The ``Raises:`` section of a public call names only PersonaeError's subclasses."""
    doc = inspect.getdoc(getattr(FACES[face], name)) or ""
    section = doc.split("Raises:\n", 1)[1] if "Raises:\n" in doc else ""
    raised = re.findall(r"^    (\w+):", section, flags=re.MULTILINE)
    errors = importlib.import_module("personae.errors")
    for error in raised:
        assert issubclass(getattr(errors, error, object), PersonaeError), f"{name}: {error}"


def test_the_classifications_name_real_public_calls() -> None:
    """A stale name in the lists above (a call renamed or gone) fails instead of hiding."""
    names = {name for _, name in public_callables()}
    for listed in (NOT_RUNNERS, NO_CONTEXT, NO_PROGRESS, SESSIONS):
        assert set(listed) <= names, set(listed) - names


def test_the_shape_check_catches_a_dict_result_and_a_callback() -> None:
    def planted(path: str, limit: int = 3, *, on_step: Callable[[str], None]) -> dict[str, Any]:
        """A call of the old shapes."""
        return {}

    parameters = inspect.signature(planted).parameters.values()
    assert [
        p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD and p.default != p.empty
    ]
    assert "context" not in inspect.signature(planted).parameters
    with pytest.raises(AssertionError, match="not a result type"):
        result_type(planted)


@pytest.mark.parametrize(("face", "name"), [r for r in public_callables() if BUILDERS.match(r[1])])
def test_every_graph_builder_takes_only_a_checkpointer(face: str, name: str) -> None:
    """``build_*_graph(checkpointer=None)``: the compiled graph; its run settings are the
    context passed to each invoke, as the LangGraph server passes them."""
    parameters = inspect.signature(getattr(FACES[face], name)).parameters
    assert list(parameters) == ["checkpointer"] and parameters["checkpointer"].default is None


@pytest.mark.parametrize(
    ("face", "name"), [r for r in public_callables() if TOOL_FACTORIES.match(r[1])]
)
def test_every_tool_factory_returns_a_langchain_tool(face: str, name: str) -> None:
    from langchain_core.tools import BaseTool

    function = getattr(FACES[face], name)
    returned = result_type(function)
    assert isinstance(returned, type) and issubclass(returned, BaseTool), returned
    assert all(
        p.kind is p.KEYWORD_ONLY
        for p in inspect.signature(function).parameters.values()
        if p.default is not p.empty and p.name != "context"
    )
