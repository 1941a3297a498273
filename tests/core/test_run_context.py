"""One settings rule for every way in: run contexts, the CLI and the library tools.

A run context is built at the edge (the CLI from its flags, the LangGraph server from a run's
``context``, a tool factory) and fills what the run left out from the settings, by one rule
(the server's side runs over HTTP in test_langgraph_server.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookmarks_world import scripted_model as bookmarks_model
from bookmarks_world import write_storyline
from profiler_world import scripted_model as profiler_model
from profiler_world import serve_fake_web
from pydantic import TypeAdapter
from studio_world import GRAPHS, graph_module

from personae.cli import build_parser
from personae.commands.amadeus.chat import agent_context
from personae.commands.arcane.arcane import roleplay_context
from personae.commands.arcane.eval import eval_context
from personae.commands.bookmarks.act import act_context
from personae.commands.characterhub.profile import make_context as profile_context
from personae.commands.models import model_fields
from personae.errors import ConfigurationError
from personae.graphs.bookmarks.acting import ActingContext
from personae.graphs.bookmarks.graph import BookmarksContext
from personae.graphs.bookmarks.tool import create_storyline_memory_tool
from personae.graphs.characterhub.state import ProfilerContext
from personae.graphs.characterhub.tool import create_profile_tool
from personae.llm import ROLES, retry_budget
from personae.run_context import LLMContext, check_context_keys
from personae.settings import DEFAULT_TAVILY_BASE_URL
from personae.testing import override_models

# (environment, what the run names as model / fast model) -> (strong, fast)
CASES: list[tuple[dict[str, str], str, str, tuple[str, str]]] = [
    ({}, "", "", ("openai:gpt-4.1", "openai:gpt-4.1-mini")),
    ({"PERSONAE_MODEL": "openai:env"}, "", "", ("openai:env", "openai:env")),
    ({}, "openai:run", "", ("openai:run", "openai:run")),  # the model alone serves both roles
    ({"PERSONAE_MODEL": "openai:env"}, "openai:run", "", ("openai:run", "openai:run")),
    (
        {"PERSONAE_FAST_MODEL": "openai:env-fast"},
        "openai:run",
        "",
        ("openai:run", "openai:env-fast"),
    ),
    (
        {"PERSONAE_MODEL": "openai:env", "PERSONAE_FAST_MODEL": "openai:env-fast"},
        "",
        "openai:run-fast",
        ("openai:env", "openai:run-fast"),
    ),
]
IDS = ["defaults", "env-model", "run-model", "run-beats-env", "env-fast", "run-fast"]

ENV_EXAMPLE_LINE = re.compile(r"^# ([A-Z][A-Z0-9_]*)=")
"""A variable line of .env.example: commented out, so copying the file sets nothing."""


@pytest.mark.parametrize(("env", "model", "fast", "expected"), CASES, ids=IDS)
def test_context_and_cli_follow_one_model_rule(
    env: dict[str, str],
    model: str,
    fast: str,
    expected: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    context = LLMContext(model=model, fast_model=fast)
    assert (context.model, context.fast_model) == expected
    flags = ["--model", model] if model else []
    flags += ["--fast-model", fast] if fast else []
    args = build_parser().parse_args(
        ["bookmarks", "act", "s.jsonl", "--character", "A", "--at", "1", *flags]
    )
    cli = BookmarksContext(storyline_path="s.jsonl", **model_fields(args))
    assert (cli.model, cli.fast_model) == expected


def test_the_server_and_key_come_from_the_environment_and_the_key_never_travels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    context = LLMContext(model="openai:qwen")
    assert context.openai_base_url == "http://127.0.0.1:9/v1"
    chat = context.llm("strong")
    assert chat.openai_api_base == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]
    assert chat.openai_api_key.get_secret_value() == "sk-secret"  # type: ignore[attr-defined]
    schema = TypeAdapter(LLMContext).json_schema()
    shown = str(dataclasses.asdict(context)) + repr(context) + str(schema)
    assert "sk-secret" not in shown and "api_key" not in str(schema)
    assert LLMContext(openai_base_url="http://run/v1").openai_base_url == "http://run/v1"


def test_no_llm_configured_fails_when_a_node_asks_for_one() -> None:
    with pytest.raises(ConfigurationError, match="no LLM is configured"):
        LLMContext().llm("fast")


def test_sampling_comes_from_the_run_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("PERSONAE_TEMPERATURE", "0.3,judge=0")
    context = LLMContext(model="openai:m")
    assert context.temperature == "0.3,judge=0"
    assert context.llm("strong").temperature == 0.3  # type: ignore[attr-defined]
    assert context.chat_model("openai:j", "judge").temperature == 0.0  # type: ignore[attr-defined]
    run = LLMContext(model="openai:m", temperature="fast=1.1")
    assert run.llm("fast").temperature == 1.1  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="temperature 'hot' is not a number"):
        LLMContext(temperature="hot")


def test_profiler_context_reads_tavily_cache_and_contact_at_construction(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TAVILY_BASE_URL", "http://tavily.local")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-k")
    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("PERSONAE_CONTACT", "me@example.org")
    context = ProfilerContext()
    assert (context.tavily_base_url, context.cache_dir) == (
        "http://tavily.local",
        str(tmp_path / "c"),
    )
    assert context.contact == "me@example.org" and context.tavily_api_key == "tvly-k"
    assert "tvly-k" not in repr(context) + str(dataclasses.asdict(context))
    assert ProfilerContext(cache_dir=None).cache_dir is None  # null disables the cache
    monkeypatch.setenv("TAVILY_API_KEY", "")
    monkeypatch.delenv("TAVILY_BASE_URL")
    later = ProfilerContext(tavily_base_url="http://run")
    assert later.tavily_base_url == "http://run" and later.tavily_api_key is None
    assert ProfilerContext().tavily_base_url == DEFAULT_TAVILY_BASE_URL


def test_acting_context_reads_the_chroma_server_at_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ActingContext(storyline_path="s").chroma == ""
    monkeypatch.setenv("CHROMA_HOST", "chroma.local")
    monkeypatch.setenv("CHROMA_PORT", "9000")
    assert ActingContext(storyline_path="s").chroma == "chroma.local:9000"
    assert ActingContext(storyline_path="s", chroma_host="run").chroma == "run:8000"
    monkeypatch.setenv("CHROMA_PORT", "x")
    with pytest.raises(ConfigurationError, match="CHROMA_PORT='x' is not a port number"):
        ActingContext(storyline_path="s")


def test_every_context_field_is_described_for_studio() -> None:
    schema = TypeAdapter(BookmarksContext).json_schema()
    missing = [name for name, f in schema["properties"].items() if not f.get("description")]
    assert missing == []
    assert "PERSONAE_FAST_MODEL" in schema["properties"]["fast_model"]["description"]


async def test_profile_tool_takes_models_and_tavily_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted = profiler_model(score=0.9)
    override_models(specs={"openai:env-model": scripted})
    with serve_fake_web(monkeypatch) as web:
        monkeypatch.setenv("PERSONAE_MODEL", "openai:env-model")
        monkeypatch.setenv("TAVILY_BASE_URL", web.url)
        tool = create_profile_tool(wiki=web.url)  # no context: all from the environment
        answer = await tool.ainvoke({"name": "Kenshiro", "franchise": "Fist of the North Star"})
    assert answer.startswith("I am Kenshiro")
    assert "https://example.org/kenshiro-bio" in answer  # a web result: Tavily was reached
    assert scripted.calls_for("QueryPlan") and scripted.calls_for("ProfileDraft")


async def test_storyline_memory_tool_takes_its_models_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    strong, fast = bookmarks_model(), bookmarks_model()
    override_models(specs={"openai:env-strong": strong, "openai:env-fast": fast})
    monkeypatch.setenv("PERSONAE_MODEL", "openai:env-strong")
    monkeypatch.setenv("PERSONAE_FAST_MODEL", "openai:env-fast")
    tool = create_storyline_memory_tool(str(story), memory_dir=str(tmp_path / "mem"))
    answer = await tool.ainvoke({"character": "Kyon", "question": "Where is Kyon?", "position": 40})
    assert "valid at position 40" in answer
    # The paper's method (released prompts) by default: the state check on the fast model.
    assert fast.calls_for("StateCheck") and not strong.calls_for("StateCheck")


class _Recording(dict[str, str]):
    """An environment that remembers every variable asked for."""

    asked: set[str]

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)


def test_env_example_lists_every_variable_the_graph_contexts_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = Path(__file__).resolve().parents[2]
    names = [
        match.group(1)
        for line in (root / ".env.example").read_text().splitlines()
        if (match := ENV_EXAMPLE_LINE.match(line))
    ]
    listed = set(names)
    assert len(names) == len(listed), "a variable is listed twice in .env.example"
    schemas = [importlib.import_module(graph_module(name)).graph.context_schema for name in GRAPHS]
    environment = _Recording(os.environ)
    environment.asked = set()
    monkeypatch.setattr(os, "environ", environment)
    for schema in schemas:  # built as the server builds a run's context
        required = {
            f.name: "x"
            for f in dataclasses.fields(schema)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        schema(**required)
    read = environment.asked - {"XDG_CACHE_HOME", "HOME"}
    assert {"PERSONAE_MODEL", "TAVILY_BASE_URL", "CHROMA_HOST", "PERSONAE_CACHE_DIR"} <= read
    assert read - listed == set()


SERVER_ENV = {
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    "OPENAI_API_KEY": "sk-k",
    "PERSONAE_MODEL": "openai:env",
    "PERSONAE_FAST_MODEL": "openai:env-fast",
    "PERSONAE_JUDGE_MODEL": "openai:env-judge",
    "PERSONAE_TEMPERATURE": "0.4,judge=0",
    "PERSONAE_TOP_P": "0.9",
    "PERSONAE_LLM_RETRY_SECONDS": "7",
    "PERSONAE_EMBEDDINGS": "hashing:64",
    "CHROMA_HOST": "chroma.local",
    "CHROMA_PORT": "9001",
}
Builder = Callable[[argparse.Namespace], Any]
# (graph of langgraph.json, the command that runs it, the command's context builder, the
# required fields a Studio user passes)
WAYS_IN: list[tuple[str, list[str], Builder, dict[str, Any]]] = [
    (
        "bookmarks",
        ["bookmarks", "act", "club.jsonl", "--character", "Haruhi", "--at", "3"],
        act_context,
        {"storyline_path": "club.jsonl"},
    ),
    ("profiler", ["profile", "Kenshiro"], profile_context, {}),
    ("amadeus", ["chat", "--character", "Megumin"], agent_context, {}),
    (
        "arcane_roleplay",
        ["arcane", "act", "the_river", "a storm", "--character", "Ada", "--chapter", "2"],
        roleplay_context,
        {},
    ),
    ("arcane_eval", ["arcane", "eval", "the_river"], eval_context, {}),
]


def resolved(context: Any) -> dict[str, Any]:
    """What a run's models and stores come out as: specs, sampling, retry budget, embedding."""
    strong = context.llm("strong")
    return {
        "models": (context.model, context.fast_model, context.judge_spec()),
        "server": context.openai_base_url,
        "sampling": {role: context.sampling(role) for role in ROLES},
        "retry": (
            context.llm_retry_seconds,
            retry_budget(strong),
            retry_budget(context.llm("fast")),
        ),
        "chat": (strong.model_name, strong.openai_api_base, strong.temperature),
        "embedding": getattr(context, "embedding", None),
        "store": getattr(context, "chroma", None),
        "cache_name": context.cache_name(context.model),
    }


@pytest.mark.parametrize(
    ("graph", "argv", "build", "required"), WAYS_IN, ids=[w[0] for w in WAYS_IN]
)
@pytest.mark.parametrize("named", [False, True], ids=["from-env", "named-by-the-run"])
def test_the_cli_and_the_server_resolve_one_way(
    graph: str,
    argv: list[str],
    build: Builder,
    required: dict[str, Any],
    named: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in SERVER_ENV.items():
        monkeypatch.setenv(name, value)
    flags = ["--model", "openai:run", "--temperature", "strong=1.1", "--top-p", "0.5"]
    fields = {"model": "openai:run", "temperature": "strong=1.1", "top_p": "0.5"}
    cli = build(build_parser().parse_args([*argv, *(flags if named else [])]))
    schema = importlib.import_module(graph_module(graph)).graph.context_schema
    server = schema(**required, **(fields if named else {}))  # what LangGraph does with a dict
    assert type(cli) is schema
    assert resolved(cli) == resolved(server)
    found = resolved(cli)
    assert found["retry"] == (7.0, 7.0, 7.0) and found["server"] == SERVER_ENV["OPENAI_BASE_URL"]
    if graph != "profiler":
        assert found["embedding"] == "hashing:64" and found["store"] == "chroma.local:9001"
    if named:
        assert found["models"][0] == "openai:run" and found["sampling"]["strong"] == {
            "temperature": 1.1,
            "top_p": 0.5,
        }
        # The run's temperature replaces the variable's whole; a graph default fills the rest.
        # BOOKMARKS: temperature 0 for every role; ARCANE: its judges at T = 0 (App. D).
        zero = graph == "bookmarks" or graph.startswith("arc")
        judge = {"temperature": 0.0, "top_p": 0.5} if zero else {"top_p": 0.5}
        assert found["sampling"]["judge"] == judge
    else:
        assert found["models"] == ("openai:env", "openai:env-fast", "openai:env-judge")
        assert found["sampling"]["fast"] == {"temperature": 0.4, "top_p": 0.9}


def test_the_bookmarks_graphs_default_to_temperature_0_on_every_way_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    context = ActingContext(storyline_path="s")
    assert {role: context.sampling(role) for role in ROLES} == {
        role: {"temperature": 0.0} for role in ROLES
    }
    assert context.llm("strong").temperature == 0.0  # type: ignore[attr-defined]
    assert LLMContext().sampling("strong") == {}  # other graphs: the server's default
    monkeypatch.setenv("PERSONAE_TEMPERATURE", "0.7")
    assert ActingContext(storyline_path="s").sampling("fast") == {"temperature": 0.7}


def test_a_renamed_context_key_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError) as caught:
        BookmarksContext(**{"storyline_path": "s", "embeddings": "local"})  # type: ignore[arg-type]
    assert str(caught.value) == (
        "the context field 'embeddings' is now 'embedding'; pass 'embedding' instead (same values)"
    )


async def test_a_studio_run_with_the_old_key_fails_naming_the_new_one() -> None:
    module = importlib.import_module(graph_module("amadeus"))
    with pytest.raises(ConfigurationError, match="'embeddings' is now 'embedding'"):
        await module.graph.ainvoke(
            {"character": "Megumin", "query": "Hi"},
            context={"method": "none", "embeddings": "hashing"},
        )


def execution(context: dict[str, Any] | None) -> Any:
    """What the LangGraph server hands a graph factory: the run's context as sent, or none."""
    from langgraph.store.memory import InMemoryStore
    from langgraph_sdk.runtime import _ExecutionRuntime, _ReadRuntime

    store = InMemoryStore()
    if context is None:
        return _ReadRuntime(access_context="assistants.read", user=None, store=store)
    return _ExecutionRuntime(
        access_context="threads.create_run", user=None, store=store, context=context
    )


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_every_served_graph_checks_the_raw_context_of_a_run(graph: str) -> None:
    """The server drops keys its schema lacks before a run; the entry langgraph.json names
    sees them first (tests/test_langgraph_server.py runs this through ``langgraph dev``)."""
    assert GRAPHS[graph].endswith(":served")
    module = importlib.import_module(graph_module(graph))
    assert module.served(execution(None)) is module.graph  # schemas, state reads
    assert module.served(execution({})) is module.graph
    with pytest.raises(ConfigurationError, match="'embeddings' is now 'embedding'"):
        module.served(execution({"embeddings": "hashing"}))
    with pytest.raises(ConfigurationError) as unknown:
        module.served(execution({"model": "openai:m", "no_such_field": 1}))
    name = module.graph.context_schema.__name__
    assert str(unknown.value).startswith(f"{name} has no context field 'no_such_field'; drop it")


def test_an_unknown_context_key_close_to_a_field_is_named() -> None:
    with pytest.raises(ConfigurationError) as caught:
        check_context_keys(ProfilerContext, {"max_round": 1})
    assert str(caught.value) == (
        "ProfilerContext has no context field 'max_round'; did you mean 'max_rounds'? "
        f"(the graph's context schema lists its {len(dataclasses.fields(ProfilerContext))} fields)"
    )
    check_context_keys(ProfilerContext, {"max_rounds": 1, "model": "openai:m"})  # known: fine


def test_a_context_made_from_a_context_keeps_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a node (ARCANE's evaluation runs the role-play graph) nothing reads them again."""
    from personae.evals.arcane.eval_graph import ArcaneEvalContext

    monkeypatch.setenv("OPENAI_BASE_URL", "http://first/v1")
    monkeypatch.setenv("PERSONAE_EMBEDDINGS", "hashing:64")
    evaluation = ArcaneEvalContext(model="openai:m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://changed/v1")
    monkeypatch.setenv("PERSONAE_LLM_RETRY_SECONDS", "3")
    roleplay = evaluation.roleplay_context()
    assert roleplay.settings is evaluation.settings
    assert (roleplay.openai_base_url, roleplay.embedding) == ("http://first/v1", "hashing:64")
    assert roleplay.llm_retry_seconds == evaluation.llm_retry_seconds == 0.0
    journaled = evaluation.replaced(call_journal="steps")
    assert journaled.settings is evaluation.settings and journaled.call_journal == "steps"
    assert ArcaneEvalContext().openai_base_url == "http://changed/v1"  # a new one reads anew
