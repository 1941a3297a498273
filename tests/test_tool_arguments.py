"""Each tool factory and its tool use the argument names of the runner doing the same job.

Issue 35: ``profile_character(wiki=...)`` but ``create_profile_tool(wiki_url=...)``, two names
for one thing. A factory's keywords and its tool's arguments must each be a keyword of its
runners or a field of the run context they take; the few that have no runner counterpart are
listed below, each with why.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

import personae

RUNNERS: dict[str, tuple[tuple[str, ...], type[Any]]] = {
    "create_profile_tool": (("profile_character", "index_persona"), personae.ProfilerContext),
    "create_ask_character_tool": (("ask_character",), personae.AmadeusContext),
    "create_arcane_act_tool": (("act_at_chapter",), personae.RoleplayContext),
    "create_storyline_memory_tool": (("predict_action",), personae.BookmarksContext),
}
"""Each tool factory: the runners doing its tool's job, and the run context they take."""
OWN_NAMES: dict[str, dict[str, str]] = {
    "create_ask_character_tool": {
        "checkpointer": "the app's saver for the tool's threads; the runner keeps its chats "
        "in the persona folder's chats.sqlite",
        "thread_prefix": "one thread per character, named by the tool (the runner's thread is "
        "one conversation the caller names)",
    },
    "create_storyline_memory_tool": {
        "settings": "the BOOKMARKS step's settings (K', derive, sync sizes), which the graph "
        "derives from its context (BookmarksContext.step_settings())",
        "question": "the tool answers a question (the step's Question record); the runner "
        "predicts an action",
        "type": "the Question record's type",
        "keyword": "the Question record's keyword",
    },
}
"""Names with no runner counterpart, per factory, and why."""


def keywords(function: Callable[..., Any]) -> set[str]:
    return set(inspect.signature(function).parameters)


def runner_names(factory: str) -> set[str]:
    runners, context = RUNNERS[factory]
    names = {field.name for field in dataclasses.fields(context)}
    for runner in runners:
        names |= keywords(getattr(personae, runner))
    return names


def test_every_tool_factory_is_paired_with_its_runners() -> None:
    factories = {name for name in personae._EXPORTS if name.startswith("create_")}
    assert factories == set(RUNNERS)


@pytest.mark.parametrize("factory", sorted(RUNNERS))
def test_a_factory_and_its_tool_say_what_the_runner_says(factory: str) -> None:
    own = OWN_NAMES.get(factory, {})
    names = runner_names(factory)
    factory_keywords = keywords(getattr(personae, factory))
    assert factory_keywords - names - set(own) == set(), factory
    arguments = tool_arguments(factory)
    assert arguments - names - set(own) == set(), factory
    stale = set(own) - factory_keywords - arguments
    assert not stale, f"{factory}: listed but gone: {stale}"
    assert not set(own) & names, f"{factory}: listed, but the runner has it: {set(own) & names}"


def test_the_profile_tool_pins_the_wiki_as_the_runner_does() -> None:
    parameters = inspect.signature(personae.create_profile_tool).parameters
    runner = inspect.signature(personae.profile_character).parameters
    assert parameters["wiki"].annotation == runner["wiki"].annotation
    assert "wiki_url" not in parameters
    assert parameters["index"].kind is inspect.Parameter.KEYWORD_ONLY


def tool_arguments(factory: str) -> set[str]:
    """The arguments the factory's tool offers the model (its args schema's fields)."""
    from personae.graphs.amadeus.tool import AskCharacterArgs
    from personae.graphs.arcane.tool import ArcaneActArgs
    from personae.graphs.bookmarks.tool import StorylineMemoryArgs
    from personae.graphs.characterhub.tool import ProfileCharacterArgs

    schemas: dict[str, type[BaseModel]] = {
        "create_profile_tool": ProfileCharacterArgs,
        "create_ask_character_tool": AskCharacterArgs,
        "create_arcane_act_tool": ArcaneActArgs,
        "create_storyline_memory_tool": StorylineMemoryArgs,
    }
    return set(schemas[factory].model_fields)
