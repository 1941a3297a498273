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
from personae.graphs.store_context import ChromaAccess
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


def own_fields(cls: type) -> set[str]:
    """The fields ``cls`` declares itself (annotated in its body), not those it inherits."""
    return {f.name for f in dataclasses.fields(cls)} & set(vars(cls).get("__annotations__", {}))


def is_store_base(cls: type) -> bool:
    """A base that holds one store's fields: named so, with a store's behaviour, plumbing only."""
    return (
        cls.__name__.endswith("StoreContext")
        and issubclass(cls, ChromaAccess)
        and own_fields(cls) <= PLUMBING_FIELDS
    )


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_a_context_inherits_fields_from_the_llm_base_one_shared_base_and_one_store_base(
    graph: str,
) -> None:
    """Flat contexts: fields come from LLMContext, at most one shared base (the paper's) and at
    most one store base (a store's server and embedding, declared once for the graphs that
    read that store), and the context declares none of its store's fields again."""
    cls = context_schema(graph)
    field_bases = [
        klass
        for klass in cls.__mro__[1:]
        if dataclasses.is_dataclass(klass) and "__dataclass_fields__" in vars(klass)
    ]
    stores = [klass for klass in field_bases if is_store_base(klass)]
    shared = [klass.__name__ for klass in field_bases if klass not in stores]
    names = [klass.__name__ for klass in field_bases]
    assert shared[-1:] == ["LLMContext"] and len(shared) <= 2, f"{graph}: {names}"
    assert len(stores) <= 1, f"{graph}: {names}"
    for store in stores:
        assert own_fields(cls) & own_fields(store) == set(), f"{graph}: {store.__name__}"


def test_the_arcane_chunk_store_fields_are_declared_once() -> None:
    from personae.evals.arcane.eval_graph import ArcaneEvalContext
    from personae.graphs.arcane.context import ChunkStoreContext
    from personae.graphs.arcane.roleplay import RoleplayContext

    assert own_fields(ChunkStoreContext) == {"embedding", "chroma_host", "chroma_port"}
    assert is_store_base(ChunkStoreContext)
    for cls in (RoleplayContext, ArcaneEvalContext):
        assert issubclass(cls, ChunkStoreContext)
        assert own_fields(cls) & own_fields(ChunkStoreContext) == set(), cls.__name__
        context = cls(embedding="hashing", chroma_host="chroma.test", chroma_port=0)
        assert context.chroma == "chroma.test:8000"  # filled by the store base's __post_init__


def test_a_base_named_as_a_store_but_holding_run_choices_is_not_a_store_base() -> None:
    from personae.graphs.arcane.context import ChunkStoreContext

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class JudgeStoreContext(ChunkStoreContext):
        judge_scale: int = 100  # a run's choice, not plumbing: a second shared base in disguise

    assert not is_store_base(JudgeStoreContext)


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
