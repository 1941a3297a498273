"""Print the shape of every graph's run context: the fields a user sets, the rest, the bases.

For each graph of ``langgraph.json`` (its ``context_schema``, what Studio shows) and each context
class of ``personae.__all__``: the constructor fields, split into the run's choices and the
plumbing every graph shares (servers, folders, caches, retries; mostly filled from the
environment, :data:`personae.run_context.PLUMBING_FIELDS`) and the fields whose empty value
follows from another field (:data:`~personae.run_context.DERIVED_FIELDS`, "follows"); what the
class computes (properties and constants from the fields or the paper); the dataclasses it inherits fields
from; model fields without Studio's model picker. Then every two context classes of
``personae.*`` that share a name. Run: ``uv run --frozen python benchmarks/context_shape.py``
(``--json`` for one object). Imports only; no model, no network.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

import personae

ROOT = Path(__file__).resolve().parents[1]
PICKER = {"kind": "llm"}


def _group(name: str) -> frozenset[str]:
    from personae import run_context

    return frozenset(getattr(run_context, name, ()))


def _model_fields(schema: dict[str, Any]) -> list[str]:
    """Fields that hold a provider:model spec (their name says so)."""
    return [
        name for name in schema.get("properties", {}) if name == "model" or name.endswith("_model")
    ]


def shape_of(cls: type) -> dict[str, Any]:
    """One context class's figures."""
    from pydantic import TypeAdapter

    plumbing, follows = _group("PLUMBING_FIELDS"), _group("DERIVED_FIELDS")
    init = [f.name for f in dataclasses.fields(cls) if f.init]
    computed = [f.name for f in dataclasses.fields(cls) if not f.init]
    properties = sorted(
        name
        for klass in cls.__mro__
        for name, value in vars(klass).items()
        if isinstance(value, property) and not name.startswith("_") and name != "settings"
    )
    schema = TypeAdapter(cls).json_schema()
    no_picker = [
        name
        for name in _model_fields(schema)
        if schema["properties"][name].get("__template_metadata__") != PICKER
    ]
    field_bases = [
        klass.__name__
        for klass in cls.__mro__[1:]
        if dataclasses.is_dataclass(klass) and vars(klass).get("__dataclass_fields__")
    ]
    return {
        "fields": len(init),
        "user_set": len([name for name in init if name not in plumbing | follows]),
        "follows": len([name for name in init if name in follows]),
        "plumbing": len([name for name in init if name in plumbing]),
        "computed": len(computed) + len(properties) + len(constants(cls)),
        "dataclass_bases": field_bases,
        "model_fields_without_picker": no_picker,
    }


def constants(cls: type) -> list[str]:
    """Public class constants of a context (``ClassVar`` settings it derives, not fields)."""
    hints = {
        name: hint
        for klass in cls.__mro__
        for name, hint in vars(klass).get("__annotations__", {}).items()
    }
    return [
        name for name, hint in hints.items() if "ClassVar" in str(hint) and "default_" not in name
    ]


def graph_contexts() -> dict[str, type]:
    """``langgraph.json`` graph name -> its context schema."""
    graphs: dict[str, str] = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    found: dict[str, type] = {}
    for name, target in graphs.items():
        path, attribute = target.split(":")
        module = ".".join(("personae", *Path(path).with_suffix("").parts))
        found[name] = getattr(importlib.import_module(module), attribute).context_schema
    return found


def duplicate_names() -> dict[str, list[str]]:
    """Context class names defined by more than one module of ``personae``."""
    owners: dict[str, set[str]] = {}
    for info in pkgutil.walk_packages(personae.__path__, "personae."):
        if ".commands" in info.name or ".web" in info.name or info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - an optional extra missing: not a context module
            continue
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and name.endswith("Context")
                and dataclasses.is_dataclass(value)
                and value.__module__ == info.name
            ):
                owners.setdefault(value.__name__, set()).add(f"{value.__module__}.{name}")
    return {name: sorted(where) for name, where in owners.items() if len(where) > 1}


def shape() -> dict[str, Any]:
    """The figures, as :func:`main` prints them."""
    contexts: dict[str, type] = {}
    for cls in graph_contexts().values():
        contexts.setdefault(cls.__name__, cls)
    for name in personae.__all__:
        if name.endswith("Context"):
            contexts.setdefault(name, getattr(personae, name))
    return {
        "contexts": {name: shape_of(cls) for name, cls in contexts.items()},
        "duplicate_class_names": duplicate_names(),
    }


def main() -> None:
    figures = shape()
    if "--json" in sys.argv[1:]:
        print(json.dumps(figures, indent=2))
        return
    print(f"{'context':<20} fields user-set follows plumbing computed  dataclass bases")
    for name, row in figures["contexts"].items():
        bases = ", ".join(row["dataclass_bases"]) or "-"
        print(
            f"{name:<20} {row['fields']:>6} {row['user_set']:>8} {row['follows']:>7}"
            f" {row['plumbing']:>8} {row['computed']:>8}  {bases}"
        )
        if row["model_fields_without_picker"]:
            print(f"{'':<20} no model picker: {', '.join(row['model_fields_without_picker'])}")
    duplicates = figures["duplicate_class_names"]
    print(f"context class names defined twice: {len(duplicates)}")
    for name, where in duplicates.items():
        print(f"  {name}: {', '.join(where)}")


if __name__ == "__main__":
    main()
