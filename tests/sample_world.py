"""The sample data of ``examples/data`` in a fresh folder, and a model that plays its cast.

Shared by the tour test and the Studio examples test: both run what a reader of the docs runs,
in a folder holding only a copy of ``examples/data`` (what a fresh clone has), with one
scripted model answering every role of every graph. That model is the Studio world's
(``studio_world.scripted_model``), its answers moved to the sample story's cast (Ada and Bram
become Mara and Elias) and its arc phases into the sample novel's five chapters.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
