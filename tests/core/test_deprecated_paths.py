"""The import paths the README documented before the per-paper folders still work, with a warning."""

from __future__ import annotations

import importlib

import pytest

from personae.graphs.amadeus.graph import AmadeusContext
from personae.graphs.amadeus.graph import build_graph as build_amadeus
from personae.graphs.amadeus.tool import create_ask_character_tool
from personae.graphs.bookmarks.graph import BookmarksContext
from personae.graphs.bookmarks.tool import create_storyline_memory_tool
from personae.graphs.characterhub.profiler import build_graph as build_profiler
from personae.graphs.characterhub.tool import create_profile_tool

OLD = [
    ("personae.graphs.profiler", "build_graph", build_profiler),
    ("personae.graphs.profile_tool", "create_profile_tool", create_profile_tool),
    ("personae.graphs.bookmark_tool", "create_storyline_memory_tool", create_storyline_memory_tool),
    ("personae.graphs.amadeus_tool", "create_ask_character_tool", create_ask_character_tool),
    ("personae.graphs.amadeus", "build_graph", build_amadeus),
    ("personae.graphs.amadeus", "AmadeusContext", AmadeusContext),
    ("personae.graphs.bookmarks", "BookmarksContext", BookmarksContext),
]


@pytest.mark.parametrize(("module", "name", "expected"), OLD)
def test_an_old_path_gives_the_same_object_and_names_the_new_one(
    module: str, name: str, expected: object
) -> None:
    with pytest.warns(DeprecationWarning, match=r"moved to personae\.graphs\.\w+\.\w+") as caught:
        value = getattr(importlib.import_module(module), name)
    assert value is expected
    assert caught[0].filename == __file__  # points at the caller's line, not at our shim


def test_the_new_packages_load_their_submodules_without_a_warning() -> None:
    # The packages took the old modules' names: their own submodules must not be forwarded.
    from personae.graphs.amadeus import tool
    from personae.graphs.bookmarks import step, sync

    assert (step.__name__, sync.__name__, tool.__name__) == (
        "personae.graphs.bookmarks.step",
        "personae.graphs.bookmarks.sync",
        "personae.graphs.amadeus.tool",
    )


def test_an_unknown_name_under_an_old_path_is_an_attribute_error() -> None:
    with pytest.raises(ImportError, match="no_such_thing"):
        from personae.graphs.profiler import no_such_thing  # noqa: F401  # pyright: ignore[reportMissingImports]
