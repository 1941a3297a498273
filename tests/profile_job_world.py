"""The new-character page's world: the sample wiki, and a loopback model that can hold a call.

The model is the sample world's scripted cast (``sample_world.sample_model``) behind the
OpenAI-compatible loopback server, so the page's jobs run the project's own client code. A
held schema's calls wait until :meth:`HeldSampleChat.release`: a test sees a job's progress
mid-run, or stops the server while the rewrite is in flight.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_openai import METHODS, FakeOpenAIChat
from langchain_core.messages import convert_to_messages
from recipe_world import schema_of
from sample_world import SAMPLES, sample_model

from personae.loopback import LoopbackWebServer
from personae.sample_wiki import MediaWikiSite, saved_pages
from personae.web.options import WebOptions

NAME = "Mara Vell"
FRANCHISE = "The Keeper of Gull Rock"
KEY = "mara-vell--the-keeper-of-gull-rock"
"""The sample character's profile folder (and its page's key)."""
FROM_SCRATCH = (
    "QueryPlan",
    "EvidenceNotes",
    "ClaimChecks",
    "CoverageReview",
    "ProfileDraft",
    "ClaimChecks",
    "ProseCheck",
)
"""The calls a planned profile of the sample character makes from scratch, in order."""


class HeldSampleChat(FakeOpenAIChat):
    """The sample cast over HTTP; calls of a ``held`` schema wait until it is released."""

    def __init__(self, *held: str, **overrides: Callable[[Any], Any]) -> None:
        scripted = sample_model()
        scripted.responders.update(overrides)
        super().__init__(
            {name: self._answer(name, scripted.responders[name]) for name in scripted.responders},
            methods=METHODS,
        )
        self.released = {name: threading.Event() for name in held}
        self.waiting = {name: threading.Event() for name in held}
        """Set when a call of that schema has arrived (and waits)."""

    def _answer(self, name: str, respond: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def answer(raw: list[dict[str, Any]]) -> Any:
            if name in self.released:
                self.waiting[name].set()
                self.released[name].wait(timeout=60)
            return respond(convert_to_messages(raw))

        return answer

    def release(self, *names: str) -> None:
        """Let the calls of ``names`` (default: every held schema) be answered from now on."""
        for name in names or tuple(self.released):
            self.released[name].set()

    def schemas(self) -> list[str]:
        """The schema of every call received so far, in order."""
        return [schema_of(request) for request in self.requests]


@contextmanager
def sample_servers(
    monkeypatch: pytest.MonkeyPatch, chat: HeldSampleChat
) -> Iterator[tuple[str, str]]:
    """The sample wiki and ``chat`` on loopback; yields (wiki URL, model server URL)."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    wiki = LoopbackWebServer(MediaWikiSite(saved_pages(SAMPLES / "wiki")).route)
    llm = LoopbackWebServer(chat)
    with wiki, llm:
        try:
            yield wiki.url, f"{llm.url}/v1"
        finally:
            chat.release()


def options(folder: Path, model_url: str = "") -> WebOptions:
    """The page's folders under ``folder``; the model on ``model_url`` (wiki only, no web)."""
    models = {"openai_base_url": model_url, "model": "openai:fake"} if model_url else {}
    return WebOptions(
        profiles_dir=folder / "profiles",
        personas_dir=folder / "personas",
        data_dir=folder / "data",
        runs_dir=folder / "runs",
        web_search=False,
        models=models,
    )


def wait_for(check: Callable[[], Any], seconds: float = 30) -> Any:
    """``check()`` once it is truthy (polled); fails the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"not reached in {seconds} s")
