"""The sample data of ``examples/data`` in a fresh folder, and a model that plays its cast.

Shared by the tour test and the Studio examples test: both run what a reader of the docs runs,
in a folder holding only a copy of ``examples/data`` (what a fresh clone has), with one
scripted model answering every role of every graph. That model is the Studio world's
(``studio_world.scripted_model``), its answers moved to the sample story's cast (Ada and Bram
become Mara and Elias) and its arc phases into the sample novel's five chapters. It answers
behind an OpenAI-compatible server on loopback (:func:`sample_llm`), configured through the
settings a user sets for a local server, so the project's own OpenAI client code runs.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_openai import METHODS, FakeOpenAIChat
from mcp_world import over_http
from studio_world import scripted_model as studio_model

from personae.cli import main
from personae.loopback import LoopbackWebServer
from personae.sample_wiki import MediaWikiSite, saved_pages
from personae.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "examples" / "data"
CHAPTERS = 5
"""Chapters of the sample novel (examples/data/gull_rock.txt)."""
WIKI_COMMAND = "uv run python -m personae.sample_wiki "
PERSONAE_COMMAND = "uv run personae "
SAMPLE_MODEL = "sample-model"
"""The model name the sample server serves (``PERSONAE_MODEL=openai:sample-model``)."""


def copy_samples(folder: Path) -> Path:
    """``examples/data`` copied under ``folder`` as a fresh clone lays it out; ``folder``."""
    shutil.copytree(SAMPLES, folder / "examples" / "data")
    return folder


def _recast(value: Any, key: str = "") -> Any:
    if isinstance(value, str):
        return value.replace("Ada", "Mara").replace("Bram", "Elias")
    if isinstance(value, list):
        if key == "chapter_range" and all(isinstance(item, int) for item in value):
            return [min(item, CHAPTERS) for item in value]
        return [_recast(item) for item in value]
    if isinstance(value, dict):
        return {name: _recast(item, name) for name, item in value.items()}
    return value


def _recast_responder(respond: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda messages: _recast(respond(messages))


def sample_model() -> ScriptedChatModel:
    """One model answering every role of every graph, about the sample story's cast."""
    responders = {
        name: _recast_responder(respond) for name, respond in studio_model().responders.items()
    }
    return ScriptedChatModel(responders=responders)


@contextmanager
def sample_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIChat]:
    """:func:`sample_model` served as an OpenAI-compatible server on loopback, configured as
    the Getting started page configures a local server (Ollama, vLLM, llama.cpp).

    Only settings: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``PERSONAE_MODEL`` and (one server
    serves the evaluations too) ``PERSONAE_JUDGE_MODEL``; the
    structured-output method is left at ``auto``, so the client probes the server as it
    would a real one. The retry budget the suite sets to 0 gets a few seconds: a connection
    the loopback server drops under many concurrent calls is retried, as a real server's is.
    """
    fake = FakeOpenAIChat(over_http(sample_model()), methods=METHODS, models=(SAMPLE_MODEL,))
    with LoopbackWebServer(fake) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sample-key")
        monkeypatch.setenv("PERSONAE_MODEL", f"openai:{SAMPLE_MODEL}")
        monkeypatch.setenv("PERSONAE_JUDGE_MODEL", f"openai:{SAMPLE_MODEL}")  # one server
        monkeypatch.setenv("PERSONAE_LLM_RETRY_SECONDS", "10")
        yield fake


@contextmanager
def sample_wiki(command: str) -> Iterator[tuple[str, str]]:
    """Serve the wiki a ``python -m personae.sample_wiki FOLDER --port P`` line names.

    Yields the URL the line means (its port) and the URL it is served at (a free port).
    """
    argv = shlex.split(command.rstrip("&").strip())
    folder = Path(argv[argv.index("personae.sample_wiki") + 1])
    meant = f"http://127.0.0.1:{argv[argv.index('--port') + 1]}"
    with LoopbackWebServer(MediaWikiSite(saved_pages(folder)).route) as server:
        yield meant, server.url


def run_personae(command: str) -> int:
    """Run one ``uv run personae ...`` line in this process (``personae.cli.main``)."""
    assert command.startswith(PERSONAE_COMMAND), command
    return main(shlex.split(command)[3:])
