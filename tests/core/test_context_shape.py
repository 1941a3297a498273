"""Contexts a person can read: few fields a run sets, one class per name, Studio's model picker.

Every graph of ``langgraph.json`` is checked as Studio sees it (``get_context_jsonschema()``),
and every context class of the ``personae`` package by name (benchmarks/context_shape.py prints
the same figures).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import pytest
from studio_world import GRAPHS, graph_module

import personae
from personae.errors import ConfigurationError
from personae.graphs.bookmarks.graph import BookmarksContext
from personae.graphs.characterhub.state import ProfilerContext
from personae.run_context import DERIVED_FIELDS, MODEL_PICKER, PLUMBING_FIELDS, LLMContext

MAX_USER_SET = 15
"""Fields a run sets (not plumbing, not following from another field): "about 15" (STYLE.md)."""


def context_schema(graph: str) -> type:
    schema: type = importlib.import_module(graph_module(graph)).graph.context_schema
    return schema


def user_set(cls: type) -> list[str]:
    return [
        f.name
        for f in dataclasses.fields(cls)
        if f.init and f.name not in PLUMBING_FIELDS | DERIVED_FIELDS
    ]


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_a_run_sets_at_most_about_15_fields_of_a_context(graph: str) -> None:
    chosen = user_set(context_schema(graph))
    assert len(chosen) <= MAX_USER_SET, f"{graph}: {len(chosen)} fields a run sets: {chosen}"


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_a_context_inherits_fields_from_the_llm_base_and_at_most_one_shared_base(
    graph: str,
) -> None:
    cls = context_schema(graph)
    bases = [
        klass.__name__
        for klass in cls.__mro__[1:]
        if dataclasses.is_dataclass(klass) and "__dataclass_fields__" in vars(klass)
    ]
    assert bases[-1:] == ["LLMContext"] and len(bases) <= 2, f"{graph}: {bases}"


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_every_model_field_shows_studio_s_model_picker(graph: str) -> None:
    compiled = importlib.import_module(graph_module(graph)).graph
    schema = compiled.get_context_jsonschema()
    models = [name for name in schema["properties"] if name == "model" or name.endswith("_model")]
    assert "model" in models and "fast_model" in models
    for name in models:
        field = schema["properties"][name]
        assert field.get("__template_metadata__") == MODEL_PICKER["__template_metadata__"], name
        assert field["type"] == "string" and field.get("description"), name
    others = [name for name in schema["properties"] if name not in models]
    assert all("__template_metadata__" not in schema["properties"][name] for name in others)


def test_no_two_context_classes_of_personae_share_a_name() -> None:
    owners: dict[str, set[str]] = {}
    for info in pkgutil.walk_packages(personae.__path__, "personae."):
        if info.name.startswith(("personae.commands", "personae.web")):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and issubclass(value, LLMContext)
                and value.__module__ == info.name
            ):
                owners.setdefault(value.__name__, set()).add(value.__module__)
    assert {name: where for name, where in owners.items() if len(where) > 1} == {}
    assert {"BookmarksContext", "ProfilerContext", "ArcaneEvalContext"} <= set(owners)


def test_what_follows_from_the_method_and_the_rounds_is_derived_not_set() -> None:
    paper, ours = ProfilerContext(method="paper"), ProfilerContext()
    assert (paper.check_citations, paper.canon_rule) == (False, False)
    assert (ours.check_citations, ours.canon_rule) == (True, True)
    # Budgets follow from the rounds (today's figures up to 3 rounds), a run may still set one.
    assert (ours.max_llm_calls, ours.max_tokens, ours.max_search_credits) == (30, 300_000, 60)
    assert ProfilerContext(max_rounds=1).max_llm_calls == 30
    assert ProfilerContext(max_rounds=5).max_search_credits == 100
    assert ProfilerContext(max_llm_calls=8).max_llm_calls == 8
    assert ProfilerContext.paper_queries == 8  # the paper's per-round budget, a constant
    sizes = BookmarksContext(storyline_path="s").sync_settings()
    assert (sizes.state_chunk, sizes.local_scene, sizes.concept_radius) == (64, 10, 8)


def test_a_key_a_run_no_longer_sets_is_refused_naming_what_the_graph_uses() -> None:
    with pytest.raises(ConfigurationError, match="'coverage_target' is no longer set by a run"):
        ProfilerContext(coverage_target=0.9)  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match="released runner's 16"):
        BookmarksContext(storyline_path="s", profile_every=8)  # type: ignore[call-arg]


def test_a_context_whose_annotations_cannot_be_resolved_still_has_a_schema() -> None:
    """An annotation naming nothing importable (a typo in a plugin's context, defined where no
    source is kept) costs its own fields the picker only: the class is still built (its
    schema then fails in pydantic, naming the type), and the fields it inherits keep theirs."""
    namespace: dict[str, object] = {}
    exec(  # noqa: S102 - a class whose annotation names nothing, as a plugin's typo would
        "from __future__ import annotations\n"
        "from dataclasses import dataclass\n"
        "from personae.run_context import LLMContext, described\n"
        "@described\n"
        "@dataclass(frozen=True, kw_only=True)\n"
        "class PluginContext(LLMContext):\n"
        "    style: NoSuchType = ''\n",
        namespace,
    )
    cls = namespace["PluginContext"]
    assert isinstance(cls, type)
    metadata = {f.name: f.metadata for f in dataclasses.fields(cls)}
    assert metadata["model"]["json_schema_extra"] == MODEL_PICKER  # inherited
    assert "json_schema_extra" not in metadata["style"]
