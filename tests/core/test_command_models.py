"""The one model rule every command shares: flag > environment > default, per role."""

from __future__ import annotations

from pathlib import Path

import pytest
from bookmarks_world import scripted_model_as, write_storyline

from personae.cli import build_parser, main
from personae.commands.models import Role, resolve_models
from personae.errors import ConfigurationError
from personae.llm import NO_MODEL_HINT

KEY = {"OPENAI_API_KEY": "test-key"}
ALL: tuple[Role, ...] = ("strong", "fast", "judge")
# Each command's arguments before the model flags; only parsed here, never run.
COMMANDS = {
    "act": ["act", "story.jsonl", "--character", "Haruhi", "--at", "3"],
    "profile": ["profile", "Kenshiro"],
    "eval": ["eval", "profile", "profile.json", "--reference", "page.html"],
    "bench": ["bench", "bookmarks", "story.jsonl"],
}
WITH_JUDGE = ("eval", "bench")


def specs(
    command: str, *flags: str, env: dict[str, str] | None = None, roles: tuple[Role, ...] = ALL
) -> dict[Role, str]:
    args = build_parser().parse_args([*COMMANDS[command], *flags])
    return dict(resolve_models(args, roles, env=KEY | (env or {})).specs)


def test_act_model_flag_alone_is_also_the_fast_model() -> None:
    assert specs("act", "--model", "openai:x", roles=("strong", "fast")) == {
        "strong": "openai:x",
        "fast": "openai:x",
    }


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_applies_the_same_rule(command: str) -> None:
    judge = ("--judge-model", "openai:j") if command in WITH_JUDGE else ()
    assert specs(command, "--model", "openai:x") == {
        "strong": "openai:x",
        "fast": "openai:x",
        "judge": "openai:x",
    }
    assert specs(command, "--model", "openai:x", "--fast-model", "openai:f", *judge) == {
        "strong": "openai:x",
        "fast": "openai:f",
        "judge": "openai:j" if judge else "openai:x",
    }


def test_defaults_and_environment() -> None:
    assert specs("bench") == {
        "strong": "openai:gpt-4.1",
        "fast": "openai:gpt-4.1-mini",
        "judge": "openai:gpt-4.1",
    }
    assert specs("bench", env={"PERSONAE_MODEL": "openai:env"}) == {
        "strong": "openai:env",
        "fast": "openai:env",  # PERSONAE_MODEL alone serves both roles
        "judge": "openai:env",
    }
    env = {
        "PERSONAE_MODEL": "openai:env",
        "PERSONAE_FAST_MODEL": "openai:env-fast",
        "PERSONAE_JUDGE_MODEL": "openai:env-judge",
    }
    assert specs("bench", env=env) == {
        "strong": "openai:env",
        "fast": "openai:env-fast",
        "judge": "openai:env-judge",
    }


def test_flags_beat_the_environment() -> None:
    env = {"PERSONAE_MODEL": "openai:env", "PERSONAE_JUDGE_MODEL": "openai:env-judge"}
    # --model beats PERSONAE_MODEL for the fast role too, when no fast model is named ...
    assert specs("bench", "--model", "openai:x", env=env) == {
        "strong": "openai:x",
        "fast": "openai:x",
        "judge": "openai:env-judge",
    }
    # ... but PERSONAE_FAST_MODEL names one, and --judge-model beats PERSONAE_JUDGE_MODEL.
    env["PERSONAE_FAST_MODEL"] = "openai:env-fast"
    assert specs("bench", "--model", "openai:x", "--judge-model", "openai:j", env=env) == {
        "strong": "openai:x",
        "fast": "openai:env-fast",
        "judge": "openai:j",
    }
    assert specs("bench", "--fast-model", "openai:f", env=env)["fast"] == "openai:f"


def test_settings_carry_the_flags() -> None:
    args = build_parser().parse_args([*COMMANDS["profile"], "--model", "openai:x"])
    settings = resolve_models(args, ("strong",), base_url="http://llm/v1", env=KEY).settings
    assert (settings.model, settings.fast_model) == ("openai:x", "openai:x")
    assert settings.openai_base_url == "http://llm/v1" and settings.model_configured


@pytest.mark.parametrize("command", COMMANDS)
def test_no_llm_configured_is_the_one_line_hint(command: str) -> None:
    args = build_parser().parse_args(COMMANDS[command])
    with pytest.raises(ConfigurationError) as caught:
        resolve_models(args, ("fast",), env={"PERSONAE_FAST_MODEL": "openai:x"})
    assert str(caught.value) == f"no LLM is configured; {NO_MODEL_HINT}"


def test_model_flag_or_base_url_configures_an_llm() -> None:
    args = build_parser().parse_args([*COMMANDS["act"], "--model", "openai:t"])
    with scripted_model_as("t") as scripted:
        assert resolve_models(args, ("strong", "fast"), env={}).chat_models == {
            "strong": scripted,
            "fast": scripted,
        }
    args = build_parser().parse_args(COMMANDS["profile"])
    models = resolve_models(args, ("strong",), base_url="http://llm/v1", env={})
    assert models.specs == {"strong": "openai:gpt-4.1"}


def test_only_the_roles_asked_for_are_resolved() -> None:
    args = build_parser().parse_args([*COMMANDS["act"], "--model", "openai:x"])
    models = resolve_models(args, ("strong", "fast"), env=KEY | {"PERSONAE_JUDGE_MODEL": "bad"})
    assert set(models.chat_models) == {"strong", "fast"}  # an unused judge setting is no error


def test_a_bad_spec_fails_up_front() -> None:
    args = build_parser().parse_args([*COMMANDS["bench"], "--judge-model", "nonsense"])
    with pytest.raises(ConfigurationError, match="'nonsense' is not a provider:model string"):
        resolve_models(args, ALL, env=KEY)


def test_act_with_model_alone_runs_everything_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No key and no fast model anywhere: before, the fast role fell back to an unreachable
    # openai:gpt-4.1-mini and `act --model X` failed while `eval`/`bench --model X` ran.
    story = write_storyline(tmp_path / "club.jsonl")
    memory = ["--memory", str(tmp_path / "mem")]
    with scripted_model_as("t") as scripted:
        argv = ["act", str(story), "--character", "Haruhi", "--at", "40", "--model", "openai:t"]
        code = main([*argv, *memory])
    assert code == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("Haruhi smiles at the brigade.\n")
    called = {name for name, _ in scripted.calls}
    assert {"ProposedQuestions", "StateUpdate", "NextAction"} <= called


def test_cache_names_tell_openai_compatible_servers_apart() -> None:
    args = build_parser().parse_args([*COMMANDS["bench"], "--judge-model", "openai:qwen"])
    local = resolve_models(args, ("judge",), env={"OPENAI_BASE_URL": "http://llm-a/v1"})
    other = resolve_models(args, ("judge",), env={"OPENAI_BASE_URL": "http://llm-b/v1"})
    assert local.cache_name("judge") == "openai:qwen@http://llm-a/v1"
    assert other.cache_name("judge") != local.cache_name("judge")
    hosted = resolve_models(args, ("judge",), env=KEY)
    assert hosted.cache_name("judge") == "openai:qwen"  # OpenAI itself: the spec alone


def test_a_command_default_judge_is_never_the_acting_model_and_sampling_defaults() -> None:
    args = build_parser().parse_args([*COMMANDS["bench"], "--model", "openai:x"])
    models = resolve_models(
        args,
        ALL,
        env=KEY,
        default_judge="openai:gpt-4.1",
        default_sampling={"temperature": 0.0},
    )
    assert models.specs["judge"] == "openai:gpt-4.1" and models.specs["strong"] == "openai:x"
    assert {role: dict(v) for role, v in models.sampling.items()} == {
        role: {"temperature": 0.0} for role in ALL
    }
    flagged = build_parser().parse_args(
        [*COMMANDS["bench"], "--model", "openai:x", "--temperature", "judge=0.5"]
    )
    mixed = resolve_models(flagged, ALL, env=KEY, default_sampling={"temperature": 0.0})
    assert mixed.sampling["judge"] == {"temperature": 0.5}
    assert mixed.sampling["strong"] == {"temperature": 0.0}
