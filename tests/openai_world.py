"""A persona indexed in a fresh folder and ``personae serve openai``'s app on a loopback port.

The model behind the server is the loopback OpenAI-compatible fake (:func:`loopback_llm`), so
the server's own model client runs; the clients under test (the ``openai`` SDK, LangChain's
``ChatOpenAI``, raw SSE) talk to the chat server over real HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_openai import ChatResponder, FakeOpenAIChat
from recipe_world import loopback_llm
from web_world import serving

from personae import AmadeusContext, index_persona, persona_index_settings
from personae.openai_api.app import create_app
from personae.openai_api.options import OpenAIServerOptions

CHARACTER = "Iago"
PROFILE: dict[str, Any] = {
    "character": CHARACTER,
    "profile": "I am Othello's ensign. I hate the Moor.",
    "dimensions": {"deeds": [{"text": "I set Roderigo on Brabantio."}]},
}
ANSWER = "I am not what I am."
"""The role-play answer the fake model gives (the character's line)."""
TOKEN = "s3cret-tökén"
"""A token with non-ASCII characters (they must be compared, not crash the comparison)."""


def prompt_of(request: dict[str, Any]) -> str:
    """Every message of a request the fake model received, joined."""
    return "\n".join(str(message.get("content") or "") for message in request["messages"])


def responders() -> dict[str, ChatResponder]:
    """The fake model's answers for an AMADEUS turn with Iago."""
    return {
        "RelevanceVerdict": lambda messages: {"reason": "r", "relevant": True},
        "CharacterAttributes": lambda messages: {
            "belief_and_value": "Self first.",
            "psychological_traits": "Cold.",
        },
        "text": lambda messages: ANSWER,
    }


def index_iago(personas: Path) -> None:
    """Index Iago's profile document into ``personas`` (hashing embedding: no model)."""
    context = AmadeusContext(memory_dir=str(personas), model="openai:fake")
    where = persona_index_settings(context.memory_dir, context=context)
    asyncio.run(index_persona(PROFILE, index=where, context=context))


@dataclass(frozen=True)
class ChatServer:
    """The running chat server and the fake model behind it."""

    url: str
    """The server's base URL (``http://127.0.0.1:PORT``); clients use ``url + "/v1"``."""
    model: FakeOpenAIChat
    """The model server the characters' calls reach (its ``requests`` log)."""

    @property
    def base_url(self) -> str:
        """What an OpenAI client's ``base_url`` is set to."""
        return f"{self.url}/v1"


@contextmanager
def chat_server(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    token: str | None = None,
    data_dir: Path | None = None,
    model: str = "openai:fake",
    base_url: str = "",
) -> Iterator[ChatServer]:
    """Index Iago under ``tmp_path``, then serve the chat server over it on a free port.

    ``base_url`` points the characters' model elsewhere (``--base-url``'s run-context field).
    """
    with loopback_llm(responders(), monkeypatch) as fake:
        index_iago(tmp_path / "personas")
        options = OpenAIServerOptions(
            personas_dir=tmp_path / "personas",
            data_dir=data_dir or tmp_path / "data",
            models={"model": model, "openai_base_url": base_url},
        )
        with serving(create_app(options, token=token)) as url:
            yield ChatServer(url, fake)
