"""Settings: every variable Personae reads is read in personae/settings.py, once, and listed."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest
from source_tree import walked

from personae.errors import ConfigurationError
from personae.settings import SYSTEM_VARIABLES, VARIABLES, Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ("agents", "tools", "memory", "graphs", "evals", "personae")
THE_READER = ROOT / "personae" / "settings.py"
ENV_FUNCTIONS = {"getenv", "getenvb", "putenv", "unsetenv", "environ", "environb"}

ENV_EXAMPLE_LINE = re.compile(r"^# ([A-Z][A-Z0-9_]*)=")
"""A variable line of .env.example: commented out, so copying the file sets nothing."""


def test_chroma_port_defaults_to_8000_and_reads_the_setting() -> None:
    assert load_settings({}).chroma_port == 8000
    assert load_settings({"CHROMA_PORT": " 8123 "}).chroma_port == 8123


def test_chroma_port_that_int_cannot_read_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="CHROMA_PORT"):
        load_settings({"CHROMA_HOST": "localhost", "CHROMA_PORT": "8²"})  # isdigit, not int()


def test_chroma_port_is_not_checked_without_a_chroma_server() -> None:
    settings = load_settings({"CHROMA_PORT": "eighty", "OPENAI_API_KEY": "sk-x"})
    assert settings.chroma_host is None and settings.openai_api_key == "sk-x"


def _environment_uses(path: Path) -> list[str]:
    """``file:line`` of every use of the process environment in ``path`` (reads and writes)."""
    found = []
    for node in walked(path):
        if isinstance(node, ast.Attribute) and node.attr in ENV_FUNCTIONS:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} ({node.attr})")  # os.environ...
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "posix"):
            names = [a.name for a in node.names if a.name in ENV_FUNCTIONS]
            found += [f"{path.relative_to(ROOT)}:{node.lineno} ({name})" for name in names]
    return found


def test_no_module_but_settings_touches_the_environment() -> None:
    """The rule: ``personae/settings.py`` alone reads ``os.environ``, and nothing writes it.

    No exceptions: Chroma's telemetry is turned off in code (memory/chroma.py passes
    ``anonymized_telemetry=False`` to every client), not by setting ``ANONYMIZED_TELEMETRY``.
    """
    files = [p for folder in PACKAGE for p in (ROOT / folder).rglob("*.py")]
    assert len(files) > 100
    assert _environment_uses(THE_READER)  # the scan sees the one reader it allows
    uses = [use for path in files if path != THE_READER for use in _environment_uses(path)]
    assert uses == []


class _Recording(dict[str, str]):
    """An environment that remembers every variable asked for."""

    asked: set[str]

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)


def test_every_variable_read_is_a_settings_field_and_listed_in_env_example(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PERSONAE_CACHE_DIR")  # so the cache folder's fallback is consulted too
    environment = _Recording(os.environ)
    environment.asked = set()
    monkeypatch.setattr(os, "environ", environment)
    load_settings()
    asked = set(environment.asked)
    monkeypatch.undo()
    assert asked == set(VARIABLES) | set(SYSTEM_VARIABLES)
    fields = {f.name for f in dataclasses.fields(Settings)}
    assert set(VARIABLES.values()) <= fields
    derived = fields - set(VARIABLES.values())  # computed from the variables, never read
    assert derived == {"fast_model_set", "model_configured"}
    lines = (ROOT / ".env.example").read_text(encoding="utf-8").splitlines()
    listed = {match.group(1) for line in lines if (match := ENV_EXAMPLE_LINE.match(line))}
    assert set(VARIABLES) <= listed
    assert not set(SYSTEM_VARIABLES) & listed  # the desktop's own, not ours to document


def test_every_variable_reaches_its_field() -> None:
    env = {
        "PERSONAE_JUDGE_MODEL": "openai:j",
        "PERSONAE_TEMPERATURE": "judge=0",
        "PERSONAE_TOP_P": "0.9",
        "PERSONAE_LLM_RETRY_SECONDS": "5",
        "PERSONAE_DATA_DIR": "novels-here",
        "HF_ENDPOINT": "http://hub.local",
        "HF_TOKEN": "hf_x",
        "PERSONAE_EMBEDDINGS": "local",
    }
    settings = load_settings(env)
    assert (settings.judge_model, settings.temperature, settings.top_p) == (
        "openai:j",
        "judge=0",
        "0.9",
    )
    assert settings.llm_retry_seconds == "5" and settings.data_dir == Path("novels-here")
    assert (settings.hf_endpoint, settings.hf_token) == ("http://hub.local", "hf_x")
    assert settings.embedding == "local:all-MiniLM-L6-v2"
    empty = load_settings({})
    assert (empty.judge_model, empty.temperature, empty.data_dir) == ("", "", Path("data"))
    assert empty.hf_endpoint is None and empty.hf_token is None


def test_a_stray_sampling_variable_breaks_no_command_that_does_not_sample() -> None:
    """Sampling and the retry budget are checked when a run context is built, not here."""
    settings = load_settings({"PERSONAE_TEMPERATURE": "hot", "PERSONAE_LLM_RETRY_SECONDS": "x"})
    assert settings.temperature == "hot" and settings.llm_retry_seconds == "x"


@pytest.mark.parametrize(
    ("env", "run", "expected"),
    [
        ({}, ("", ""), ("openai:gpt-4.1", "openai:gpt-4.1-mini")),
        ({"PERSONAE_MODEL": "openai:e"}, ("", ""), ("openai:e", "openai:e")),
        ({"PERSONAE_MODEL": "openai:e"}, ("openai:r", ""), ("openai:r", "openai:r")),
        ({"PERSONAE_FAST_MODEL": "openai:ef"}, ("openai:r", ""), ("openai:r", "openai:ef")),
        ({"PERSONAE_FAST_MODEL": "openai:ef"}, ("", "openai:rf"), ("openai:gpt-4.1", "openai:rf")),
    ],
)
def test_the_model_rule(
    env: dict[str, str], run: tuple[str, str], expected: tuple[str, str]
) -> None:
    assert load_settings(env).model_specs(*run) == expected


def test_the_judge_rule() -> None:
    judged = load_settings({"PERSONAE_JUDGE_MODEL": "openai:ej"})
    assert judged.judge_spec("openai:rj", "openai:default", "openai:s") == "openai:rj"
    assert judged.judge_spec("", "openai:default", "openai:s") == "openai:ej"
    unset = load_settings({})
    assert unset.judge_spec("", "openai:default", "openai:s") == "openai:default"
    assert unset.judge_spec("", "", "openai:s") == "openai:s"  # else the strong model
