"""Every answer schema Personae sends a model, as the tool call carries it, and what a grammar
would miss in it.

Tool-call grammars (llama.cpp's, which Ollama and llama-cpp-python's server also use) turn the
JSON schema of a forced tool call into a grammar, and enforce only part of JSON schema: enums,
required keys, ``additionalProperties``, item counts and string lengths, and patterns that are
anchored (``^...$``) and written with plain character classes, read on the raw JSON text (so
a ``.`` there also matches the closing quote). They ignore numeric bounds, and one unanchored
pattern makes llama-cpp-python drop the whole schema for "any JSON". So a check the code
relies on must be in the part they enforce (issue 16 §1).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel
from test_answer_schemas import INVARIANTS

from personae.llm_endpoint import tool_call_schema

IGNORED_BY_GRAMMARS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "not",
    "if",
)
"""Keywords llama.cpp's schema-to-grammar converter passes over (llama_grammar.py,
``SchemaConverter.visit``): an answer breaking them still follows the grammar."""
_ESCAPED_CLASS = re.compile(r"\\[sSdDwWbB]")
"""``\\s``-like escapes: the grammar reads them as letters, or fails to parse."""
_QUOTE_CAN_MATCH = re.compile(r"(?<!\\)\.|\[\^[^\]\"]*\]")
"""A ``.`` or a negated class without ``"``: the grammar reads a pattern on the raw JSON text,
where such a character also matches the closing quote."""
_PACKAGES = ("personae.agents", "personae.evals", "personae.graphs")


def answer_schemas() -> dict[str, type[BaseModel]]:
    """Every pydantic model the three job folders define, and each per-call schema built on
    small example ids (``tests/test_answer_schemas.py``'s :data:`INVARIANTS`)."""
    found: dict[str, type[BaseModel]] = {}
    for package in _PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseModel)
                    and value.__module__ == module.__name__
                ):
                    found[f"{module.__name__}.{name}"] = value
    for name, factory, _ in INVARIANTS:
        found[f"{name}(...)"] = factory()
    return found


def tool_parameters(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema a forced tool call carries for ``schema``, as Personae sends it."""
    parameters: dict[str, Any] = tool_call_schema(schema)["function"]["parameters"]
    return parameters


def grammar_gaps(schema: Any, where: str = "") -> Iterator[str]:
    """What a tool-call grammar would not enforce in ``schema``, one line each."""
    if isinstance(schema, list):
        for n, item in enumerate(schema):
            yield from grammar_gaps(item, f"{where}[{n}]")
        return
    if not isinstance(schema, Mapping):
        return
    constrained_by_enum = "enum" in schema or "const" in schema
    for key, value in schema.items():
        if key in ("enum", "const", "description", "title", "default", "examples"):
            continue
        if key in IGNORED_BY_GRAMMARS and not constrained_by_enum:
            yield f"{where or '/'}: {key}={value!r} is ignored by tool-call grammars"
        elif key == "pattern":
            yield from _pattern_gaps(str(value), where or "/")
        elif key in ("properties", "$defs", "definitions"):
            for name, sub in value.items():
                yield from grammar_gaps(sub, f"{where}/{name}")
        else:
            yield from grammar_gaps(value, f"{where}/{key}")


def _pattern_gaps(pattern: str, where: str) -> Iterator[str]:
    if not (pattern.startswith("^") and pattern.endswith("$")):
        yield f"{where}: pattern {pattern!r} is not anchored (^...$): the grammar drops the schema"
    if _ESCAPED_CLASS.search(pattern):
        yield f"{where}: pattern {pattern!r} uses \\s-like escapes a grammar cannot read"
    if "(?" in pattern:
        yield f"{where}: pattern {pattern!r} uses (?...) groups a grammar cannot read"
    if _QUOTE_CAN_MATCH.search(pattern):
        yield f"{where}: pattern {pattern!r} matches a raw quote: the string never ends"
