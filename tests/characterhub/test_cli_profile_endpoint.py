"""`personae profile` through an OpenAI-compatible server: the method it took is recorded.

The server takes only JSON schemas (``auto`` tries them first); a second server only tool
calls. profile.json says, per model@server, how the structured answers were asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAIChat
from langchain_core.messages import convert_to_messages
from profiler_world import fake_web, scripted_model

from personae.cli import main
from personae.loopback import LoopbackWebServer

FOLDER = "kenshiro--fist-of-the-north-star"


def llm_server(methods: tuple[str, ...]) -> FakeOpenAIChat:
    scripted = scripted_model(score=0.9)

    def adapt(name: str) -> Callable[[list[dict[str, Any]]], Any]:
        return lambda messages: scripted.responders[name](convert_to_messages(messages))

    return FakeOpenAIChat({name: adapt(name) for name in scripted.responders}, methods=methods)


@pytest.mark.parametrize("methods", [("json_schema",), ("function_calling",)])
def test_profile_json_records_the_method_each_endpoint_took(
    methods: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    web, _, _ = fake_web(tavily=False)
    chat = llm_server(methods)
    with LoopbackWebServer(web.route) as wiki, LoopbackWebServer(chat) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{llm.url}/v1")
        monkeypatch.setenv("PERSONAE_MODEL", "openai:local")
        argv = ["profile", "Kenshiro", "--franchise", "Fist of the North Star", "--no-web"]
        code = main([*argv, "--wiki", wiki.url, "--out", str(tmp_path)])
    assert code == 0, capsys.readouterr().err
    document = json.loads((tmp_path / FOLDER / "profile.json").read_text(encoding="utf-8"))
    assert document["structured_output"] == {f"local@{llm.url}/v1": methods[0]}
    assert document["usage"]["llm_calls"] == len(chat.requests)  # refusals are not calls
