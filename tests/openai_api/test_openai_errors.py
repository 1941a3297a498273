"""The chat server refuses as OpenAI's API does: its error JSON, its statuses, its API key."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, Protocol

import httpx
import openai
import pytest
from openai_world import ANSWER, CHARACTER, TOKEN, chat_server
from starlette.testclient import TestClient

from personae.cli import main
from personae.openai_api.app import create_app
from personae.openai_api.options import OpenAIServerOptions

USER = [{"role": "user", "content": "Who are you?"}]


class JSONAnswer(Protocol):
    """An HTTP answer (httpx's, or the Starlette test client's)."""

    def json(self) -> Any: ...


def error_of(answer: JSONAnswer) -> dict[str, object]:
    """The ``error`` object of an answer, checked to have OpenAI's four fields."""
    body = answer.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    error: dict[str, object] = body["error"]
    return error


def test_bad_requests_get_openai_errors_with_their_statuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with chat_server(tmp_path, monkeypatch) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.NotFoundError) as unknown:
            client.chat.completions.create(model="Othello", messages=USER)  # type: ignore[arg-type]
        url = f"{server.base_url}/chat/completions"
        answers = {
            "no messages": httpx.post(url, json={"model": CHARACTER}),
            "empty messages": httpx.post(url, json={"model": CHARACTER, "messages": []}),
            "wrong type": httpx.post(url, json={"model": CHARACTER, "messages": "hi"}),
            "bad role": httpx.post(
                url, json={"model": CHARACTER, "messages": [{"role": "narrator", "content": "x"}]}
            ),
            "ends with the character": httpx.post(
                url,
                json={
                    "model": CHARACTER,
                    "messages": [*USER, {"role": "assistant", "content": "I"}],
                },
            ),
            "an image": httpx.post(
                url,
                json={
                    "model": CHARACTER,
                    "messages": [{"role": "user", "content": [{"type": "image_url"}]}],
                },
            ),
            "not json": httpx.post(url, content=b"{", headers={"Content-Type": "application/json"}),
            "a form": httpx.post(url, data={"model": CHARACTER}),
            "two answers": httpx.post(url, json={"model": CHARACTER, "messages": USER, "n": 2}),
            "too long": httpx.post(
                url,
                json={"model": CHARACTER, "messages": [{"role": "user", "content": "x" * 10**6}]},
            ),
        }
        no_route = httpx.get(f"{server.base_url}/completions")
        wrong_method = httpx.get(url)
        no_model = httpx.get(f"{server.base_url}/models/Othello")
        calls = len(server.model.requests)
    assert unknown.value.status_code == 404
    assert unknown.value.code == "model_not_found"
    assert "'Othello' does not exist" in unknown.value.message
    statuses = {name: answer.status_code for name, answer in answers.items()}
    assert statuses == {**{name: 400 for name in answers}, "a form": 415, "too long": 413}
    messages = {name: str(error_of(answer)["message"]) for name, answer in answers.items()}
    assert messages["no messages"].startswith("messages: Field required")
    assert messages["empty messages"].startswith("messages: List should have at least 1 item")
    assert "the last message is the assistant's" in messages["ends with the character"]
    assert "'image_url' content part" in messages["an image"]
    assert "n=2" in messages["two answers"]
    assert "may have up to 1,000,000" in messages["too long"]
    assert error_of(answers["no messages"])["type"] == "invalid_request_error"
    assert error_of(answers["no messages"])["param"] == "messages"
    assert no_route.status_code == 404 and error_of(no_route)["code"] == "unknown_url"
    assert (
        wrong_method.status_code == 405 and error_of(wrong_method)["code"] == "method_not_allowed"
    )
    assert no_model.status_code == 404 and error_of(no_model)["code"] == "model_not_found"
    assert calls == 0  # nothing refused reached the model


def test_a_model_server_that_is_down_is_a_502_plain_and_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
    monkeypatch.setenv("PERSONAE_LLM_RETRY_SECONDS", "0")
    with chat_server(tmp_path, monkeypatch, base_url=dead) as server:
        url = f"{server.base_url}/chat/completions"
        plain = httpx.post(url, json={"model": CHARACTER, "messages": USER}, timeout=60)
        streamed = httpx.post(
            url, json={"model": CHARACTER, "messages": USER, "stream": True}, timeout=60
        )
    for answer in (plain, streamed):
        assert answer.status_code == 502, answer.text
        error = error_of(answer)
        assert error["type"] == "api_error" and error["code"] == "model_endpoint_failed"
        assert "Traceback" not in answer.text


def test_the_token_is_the_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with chat_server(tmp_path, monkeypatch, token="s3cret") as server:
        models = f"{server.base_url}/models"
        missing = httpx.get(models)
        wrong = httpx.get(models, headers={"Authorization": "Bearer wrong"})
        rebound = httpx.get(models, headers={"Host": "evil.example"})
        client = openai.OpenAI(base_url=server.base_url, api_key="s3cret", max_retries=0)
        listed = [model.id for model in client.models.list()]
        reply = client.chat.completions.create(model=CHARACTER, messages=USER)  # type: ignore[arg-type]
        with pytest.raises(openai.AuthenticationError) as refused:
            openai.OpenAI(base_url=server.base_url, api_key="nope", max_retries=0).models.list()
    for answer in (missing, wrong):
        assert answer.status_code == 401 and error_of(answer)["code"] == "invalid_api_key"
    assert rebound.status_code == 421 and "evil.example" in str(error_of(rebound)["message"])
    assert listed == [CHARACTER] and reply.choices[0].message.content == ANSWER
    assert refused.value.status_code == 401


def test_a_token_of_any_characters_is_compared_never_crashed_on(tmp_path: Path) -> None:
    options = OpenAIServerOptions(personas_dir=tmp_path / "personas", data_dir=tmp_path / "data")
    app = create_app(options, token=TOKEN)
    with TestClient(app, base_url="http://127.0.0.1:8090") as client:
        right = client.get("/v1/models", headers={b"Authorization": b"Bearer " + TOKEN.encode()})
        wrong = client.get("/v1/models", headers={b"Authorization": "Bearer ünïcode".encode()})
        ascii_wrong = client.get("/v1/models", headers={"Authorization": "Bearer s3cret-token"})
    assert right.status_code == 200 and right.json() == {"object": "list", "data": []}
    for answer in (wrong, ascii_wrong):
        assert answer.status_code == 401 and error_of(answer)["code"] == "invalid_api_key"


def test_the_command_refuses_another_host_without_a_token(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "openai", "--host", "0.0.0.0"]) == 2
    error = capsys.readouterr().err
    assert "--host 0.0.0.0 lets other machines reach" in error and "--token" in error
    assert main(["serve", "openai", "--port", "0"]) == 2
    assert "--port 0 is not a port number" in capsys.readouterr().err
