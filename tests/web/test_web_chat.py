"""The chat view through Starlette's test client, on the loopback OpenAI-compatible model."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from markupsafe import escape
from profile_page_world import ANSWER, KEPT_FACT, KEY, chat_responders, write_sample_profile
from recipe_world import loopback_llm
from starlette.testclient import TestClient

from personae import AmadeusContext, ChatTurn, index_persona, open_chat, persona_index_settings
from personae.web.app import create_app
from personae.web.options import WebOptions

BASE = "http://127.0.0.1:8765"


def client_of(tmp_path: Path, models: dict[str, str] | None = None) -> TestClient:
    options = WebOptions(
        profiles_dir=tmp_path / "profiles",
        personas_dir=tmp_path / "personas",
        models=models or {},
    )
    return TestClient(create_app(options), base_url=BASE, follow_redirects=False)


def alert(html: str) -> str:
    found = re.search(r'<p class="error" role="alert">(.*?)</p>', html, re.S)
    assert found, html
    return found.group(1).replace("&#39;", "'")


def test_a_profile_indexed_in_one_click_answers_and_shows_the_chunks_it_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_sample_profile(tmp_path / "profiles")
    with loopback_llm(chat_responders(), monkeypatch) as fake:
        client = client_of(tmp_path, {"model": "openai:fake"})
        assert "Index and talk" in client.get(f"/profiles/{KEY}").text
        indexed = client.post("/chat/index", data={"profile": KEY})
        assert indexed.status_code == 303 and indexed.headers["location"] == "/chat/Mara%20Vell"
        assert "Talk to Mara Vell" in client.get(f"/profiles/{KEY}").text  # now indexed
        listing = client.get("/chat").text
        assert '<a href="/chat/Mara%20Vell">Mara Vell</a>' in listing
        assert "No message yet." in client.get("/chat/Mara%20Vell").text
        sent = client.post(
            "/chat/Mara%20Vell", data={"message": "What keeps you busy up in the tower?"}
        )
        assert sent.headers["location"] == "/chat/Mara%20Vell#last"
        page = client.get("/chat/Mara%20Vell").text
    assert {request["model"] for request in fake.requests} == {"fake"}  # the page's model
    assert "What keeps you busy up in the tower?" in page and ANSWER in page
    shown = re.findall(r'<code class="chunk-id">([^<]+)</code>', page)
    texts = re.findall(r'<blockquote class="chunk-text">(.*?)</blockquote>', page, re.S)
    assert (
        len(shown) == 1 and escape(KEPT_FACT) in texts[0]
    )  # the chunk the judge kept, nothing else
    checks = len([r for r in fake.requests if "RelevanceVerdict" in json.dumps(r)])
    assert f"<summary>Guided Selection kept 1 chunk after {checks} checks</summary>" in page
    context = AmadeusContext(memory_dir=str(tmp_path / "personas"), model="openai:fake")
    with loopback_llm(chat_responders(), monkeypatch):
        turns = asyncio_history(context)
    assert [turn.question for turn in turns] == ["What keeps you busy up in the tower?"]
    assert [chunk["id"] for chunk in turns[0].details["selected"]] == shown  # the CLI's thread


def asyncio_history(context: AmadeusContext) -> list[ChatTurn]:
    """The ``default`` thread as ``personae chat --character`` reads it."""

    async def read() -> list[ChatTurn]:
        async with open_chat("Mara Vell", context=context, thread="default") as chat:
            return await chat.history()

    return asyncio.run(read())


def test_chat_refuses_unknown_profiles_drafts_and_characters(tmp_path: Path) -> None:
    client = client_of(tmp_path)
    empty = client.get("/chat")
    assert (
        "No persona indexed yet" in empty.text and "No profile in the profiles folder" in empty.text
    )
    assert not (tmp_path / "personas").exists()  # listing made no memory folder
    for key in ("nobody", "../profiles", "", "Mara Vell"):
        refused = client.post("/chat/index", data={"profile": key})
        assert refused.status_code == 404, key
        assert alert(refused.text).startswith(f"no profile {key!r} in ")
    draft = tmp_path / "profiles" / "d"
    draft.mkdir(parents=True)
    (draft / "draft.json").write_text(
        json.dumps({"character": "D", "checked": False, "dimensions": {}}), encoding="utf-8"
    )
    refused = client.post("/chat/index", data={"profile": "d"})
    assert refused.status_code == 400 and "'d' is an unchecked draft" in alert(refused.text)
    for method in ("get", "post"):
        missing = getattr(client, method)(
            "/chat/%2E%2E", **({"data": {"message": "hi"}} if method == "post" else {})
        )
        assert missing.status_code == 404
        assert alert(missing.text).startswith("no persona index of '..' in ")
    assert not (tmp_path / "personas" / "chats.sqlite").exists()


def test_an_empty_or_overlong_message_is_refused_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "personas").mkdir()
    mara = Path(__file__).resolve().parents[2] / "examples" / "data" / "mara.md"
    with loopback_llm(chat_responders(), monkeypatch) as fake:
        client = client_of(tmp_path, {"model": "openai:fake"})
        context = AmadeusContext(memory_dir=str(tmp_path / "personas"), model="openai:fake")
        where = persona_index_settings(context.memory_dir, context=context)
        asyncio.run(index_persona(mara, character="Mara Vell", index=where, context=context))
        url = "/chat/Mara%20Vell"
        empty = client.post(url, data={"message": "   "})
        long = client.post(url, data={"message": "x" * 4001})
    assert empty.status_code == 400 and alert(empty.text).startswith("the question is empty")
    assert long.status_code == 400 and "4001 characters, more than 4000" in alert(long.text)
    assert fake.requests == []  # nothing was asked of the model
