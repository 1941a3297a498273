"""The one model rule every command shares: flag > environment > default, per role.

Commands turn their flags into run-context fields (:func:`personae.commands.models.model_fields`)
and ask the context for models; the context applies the rule (personae.run_context).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import chromadb
import numpy as np
import pytest
from bookmarks_world import scripted_model_as, write_storyline

from personae.cli import build_parser, main
from personae.commands.characterhub.profile import make_context
from personae.commands.models import model_fields
from personae.errors import ConfigurationError
from personae.evals.bookmarks.bench import BenchModels
from personae.llm import NO_MODEL_HINT, ModelRole
from personae.memory.embeddings import TextEmbedding, embed_text, override_embeddings
from personae.run_context import LLMContext

KEY = {"OPENAI_API_KEY": "test-key"}
ALL: tuple[ModelRole, ...] = ("strong", "fast", "judge")
# Each command's arguments before the model flags; only parsed here, never run.
COMMANDS = {
    "act": ["bookmarks", "act", "story.jsonl", "--character", "Haruhi", "--at", "3"],
    "profile": ["profile", "Kenshiro"],
    "eval": ["characterhub", "eval", "profile.json", "--reference", "page.html"],
    "bench": ["bookmarks", "bench", "story.jsonl"],
}
WITH_JUDGE = ("eval", "bench")


def context_of(command: str, *flags: str) -> tuple[LLMContext, str]:
    """The run context a command builds from these flags, and its judge."""
    args = build_parser().parse_args([*COMMANDS[command], *flags])
    context = LLMContext(**model_fields(args))
    return context, context.judge_spec(getattr(args, "judge_model", None) or "")


def specs(
    monkeypatch: pytest.MonkeyPatch, command: str, *flags: str, env: dict[str, str] | None = None
) -> dict[ModelRole, str]:
    with monkeypatch.context() as patch:
        for name, value in (KEY | (env or {})).items():
            patch.setenv(name, value)
        context, judge = context_of(command, *flags)
    return {"strong": context.model, "fast": context.fast_model, "judge": judge}


def test_act_model_flag_alone_is_also_the_fast_model(monkeypatch: pytest.MonkeyPatch) -> None:
    found = specs(monkeypatch, "act", "--model", "openai:x")
    assert (found["strong"], found["fast"]) == ("openai:x", "openai:x")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_applies_the_same_rule(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    judge = ("--judge-model", "openai:j") if command in WITH_JUDGE else ()
    assert specs(monkeypatch, command, "--model", "openai:x") == {
        "strong": "openai:x",
        "fast": "openai:x",
        "judge": "openai:x",
    }
    assert specs(
        monkeypatch, command, "--model", "openai:x", "--fast-model", "openai:f", *judge
    ) == {
        "strong": "openai:x",
        "fast": "openai:f",
        "judge": "openai:j" if judge else "openai:x",
    }


def test_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert specs(monkeypatch, "bench") == {
        "strong": "openai:gpt-4.1",
        "fast": "openai:gpt-4.1-mini",
        "judge": "openai:gpt-4.1",
    }
    assert specs(monkeypatch, "bench", env={"PERSONAE_MODEL": "openai:env"}) == {
        "strong": "openai:env",
        "fast": "openai:env",  # PERSONAE_MODEL alone serves both roles
        "judge": "openai:env",
    }
    env = {
        "PERSONAE_MODEL": "openai:env",
        "PERSONAE_FAST_MODEL": "openai:env-fast",
        "PERSONAE_JUDGE_MODEL": "openai:env-judge",
    }
    assert specs(monkeypatch, "bench", env=env) == {
        "strong": "openai:env",
        "fast": "openai:env-fast",
        "judge": "openai:env-judge",
    }


def test_flags_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"PERSONAE_MODEL": "openai:env", "PERSONAE_JUDGE_MODEL": "openai:env-judge"}
    # --model beats PERSONAE_MODEL for the fast role too, when no fast model is named ...
    assert specs(monkeypatch, "bench", "--model", "openai:x", env=env) == {
        "strong": "openai:x",
        "fast": "openai:x",
        "judge": "openai:env-judge",
    }
    # ... but PERSONAE_FAST_MODEL names one, and --judge-model beats PERSONAE_JUDGE_MODEL.
    env["PERSONAE_FAST_MODEL"] = "openai:env-fast"
    flags = ("--model", "openai:x", "--judge-model", "openai:j")
    assert specs(monkeypatch, "bench", *flags, env=env) == {
        "strong": "openai:x",
        "fast": "openai:env-fast",
        "judge": "openai:j",
    }
    assert specs(monkeypatch, "bench", "--fast-model", "openai:f", env=env)["fast"] == "openai:f"


def test_the_context_carries_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    args = build_parser().parse_args(
        [*COMMANDS["profile"], "--model", "openai:x", "--base-url", "http://llm/v1"]
    )
    context = make_context(args)  # the profile command's own context builder
    assert (context.model, context.fast_model) == ("openai:x", "openai:x")
    assert context.openai_base_url == "http://llm/v1"  # --base-url beats OPENAI_BASE_URL


@pytest.mark.parametrize("command", COMMANDS)
def test_no_llm_configured_is_the_one_line_hint(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERSONAE_FAST_MODEL", "openai:x")
    context, _ = context_of(command)
    with pytest.raises(ConfigurationError) as caught:
        context.llm("fast")
    assert str(caught.value) == f"no LLM is configured; {NO_MODEL_HINT}"


def test_model_flag_or_base_url_configures_an_llm() -> None:
    with scripted_model_as("t") as scripted:
        context, _ = context_of("act", "--model", "openai:t")
        for chat in (context.llm("strong"), context.llm("fast")):
            assert chat.responders is scripted.responders  # type: ignore[attr-defined]
    context, _ = context_of("profile", "--base-url", "http://llm/v1")
    assert context.model == "openai:gpt-4.1"
    assert context.llm("strong").openai_api_base == "http://llm/v1"  # type: ignore[attr-defined]


def test_only_the_roles_asked_for_are_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("PERSONAE_JUDGE_MODEL", "bad")
    context, judge = context_of("act", "--model", "openai:x")
    context.llm("strong")  # an unused judge setting is no error
    context.llm("fast")
    with pytest.raises(ConfigurationError, match="'bad' is not a provider:model string"):
        context.chat_model(judge, "judge")


def test_a_bad_spec_fails_up_front(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    with scripted_model_as("t"):
        argv = ["bookmarks", "bench", str(story), "--out", str(tmp_path / "out")]
        code = main([*argv, "--model", "openai:t", "--judge-model", "nonsense"])
    err = capsys.readouterr().err
    assert code == 2 and "'nonsense' is not a provider:model string" in err
    assert not (tmp_path / "out/results.jsonl").exists()  # nothing ran


def test_act_with_model_alone_runs_everything_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No key and no fast model anywhere: before, the fast role fell back to an unreachable
    # openai:gpt-4.1-mini and `act --model X` failed while `eval`/`bench --model X` ran.
    story = write_storyline(tmp_path / "club.jsonl")
    memory = ["--memory", str(tmp_path / "mem")]
    with scripted_model_as("t") as scripted:
        argv = [
            "bookmarks",
            "act",
            str(story),
            "--character",
            "Haruhi",
            "--at",
            "40",
            "--model",
            "openai:t",
        ]
        code = main([*argv, *memory])
    assert code == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("Haruhi smiles at the brigade.\n")
    called = {name for name, _ in scripted.calls}
    assert {"ReleasedQueries", "StateCheck", "NextAction"} <= called  # the paper's method


def test_cache_names_tell_openai_compatible_servers_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm-a/v1")
    local, judge = context_of("bench", "--judge-model", "openai:qwen")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm-b/v1")
    other, _ = context_of("bench", "--judge-model", "openai:qwen")
    assert local.cache_name(judge) == "openai:qwen@http://llm-a/v1"
    assert other.cache_name(judge) != local.cache_name(judge)
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    hosted, _ = context_of("bench", "--judge-model", "openai:qwen")
    assert hosted.cache_name(judge) == "openai:qwen"  # OpenAI itself: the spec alone


def test_a_command_default_judge_is_never_the_acting_model_and_sampling_defaults() -> None:
    args = build_parser().parse_args([*COMMANDS["bench"], "--model", "openai:x"])
    models = BenchModels(**model_fields(args))
    assert models.judge_model == "openai:gpt-4.1" and models.model == "openai:x"
    assert {role: models.sampling(role) for role in ALL} == {
        role: {"temperature": 0.0} for role in ALL
    }
    flagged = build_parser().parse_args(
        [*COMMANDS["bench"], "--model", "openai:x", "--temperature", "judge=0.5"]
    )
    mixed = BenchModels(**model_fields(flagged))
    assert mixed.sampling("judge") == {"temperature": 0.5}
    assert mixed.sampling("strong") == {"temperature": 0.0}


class _Counting(TextEmbedding):
    """The hashing vectors, counting what it embeds (injected for one spec)."""

    spec = "openai:counting"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return np.stack([embed_text(t) for t in texts])


def _collections(folder: Path) -> list[str]:
    names = []
    for database in folder.rglob("chroma.sqlite3"):
        client = chromadb.PersistentClient(path=str(database.parent))
        names += [c.name for c in client.list_collections()]
    return names


def test_act_embedding_flag_picks_the_bank_embedding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    counting = _Counting()
    override_embeddings({"openai:counting": counting})
    argv = [
        "bookmarks",
        "act",
        str(story),
        "--character",
        "Haruhi",
        "--at",
        "40",
        "--model",
        "openai:t",
    ]
    with scripted_model_as("t"):
        code = main([*argv, "--memory", str(tmp_path / "mem"), "--embedding", "openai:counting"])
    assert code == 0, capsys.readouterr().err
    assert counting.texts  # the bank's questions went through the flag's embedding
    names = _collections(tmp_path / "mem")
    assert names and all("openai-counting" in name for name in names), names
    with scripted_model_as("t"):
        assert main([*argv, "--embedding", "glove"]) == 2
    assert "unknown embeddings 'glove'" in capsys.readouterr().err


@pytest.mark.endtoend
def test_bench_embedding_flag_reaches_every_chroma_method(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    counting = _Counting()
    override_embeddings({"openai:counting": counting})
    out = tmp_path / "out"
    argv = ["bookmarks", "bench", str(story), "--out", str(out), "--model", "openai:t"]
    argv += ["--judge-model", "openai:t"]  # the default judge is the paper's gpt-4.1
    with scripted_model_as("t"):
        flags = ["--method", "ricl,bookmarks", "--limit", "1", "--embedding", "openai:counting"]
        code = main([*argv, *flags])
    assert code == 0, capsys.readouterr().err
    assert any(text.startswith("(") for text in counting.texts)  # RICL's scenes
    for label in ("ricl", "bookmarks"):
        names = _collections(out / "memory" / label)
        assert names and all("openai-counting" in name for name in names), (label, names)


def test_act_help_states_the_temperature_its_requests_are_sent_at(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`act --help` once said "default the server's" while every request went at 0."""
    from personae.graphs.bookmarks.graph import BookmarksContext

    with pytest.raises(SystemExit):
        main(["bookmarks", "act", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "(PERSONAE_TEMPERATURE; default 0 for every role" in shown
    context = BookmarksContext(storyline_path="story.jsonl")
    assert {role: context.sampling(role) for role in ALL} == {
        role: {"temperature": 0.0} for role in ALL
    }
