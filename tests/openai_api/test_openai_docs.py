"""The Deploy page's chat-server lines run: its commands parse, its Python talks to a persona."""

from __future__ import annotations

import asyncio
import re
import shlex
from pathlib import Path

import pytest
from openai_world import ANSWER, PROFILE, chat_server

from personae import AmadeusContext, index_persona, persona_index_settings
from personae.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy.md"
PORT = 8090


def marked_block(test: str) -> str:
    """The body of the Deploy page's fenced block marked as run by ``test`` in this file."""
    marker = f"<!-- run: tests/openai_api/test_openai_docs.py::{test} -->"
    lines = DEPLOY.read_text(encoding="utf-8").splitlines()
    start = lines.index(marker) + 1
    assert lines[start].startswith("```"), lines[start]
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[start + 1 : end])


def test_the_serve_openai_lines_are_valid() -> None:
    lines = marked_block("test_the_serve_openai_lines_are_valid").splitlines()
    parsed = []
    for line in lines:
        words = shlex.split(line, comments=True)
        assert words[:3] == ["uv", "run", "personae"], line
        parsed.append(build_parser().parse_args(words[3:]))  # argparse exits 2 on a bad flag
    assert [(args.command, args.serve_command) for args in parsed] == [("serve", "openai")] * 2
    assert parsed[0].host == "127.0.0.1" and parsed[0].port == PORT  # the URL its comment says
    assert parsed[1].host == "0.0.0.0" and parsed[1].token == "$TOKEN"


def test_the_python_snippet_talks_to_a_persona(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    snippet = marked_block("test_the_python_snippet_talks_to_a_persona")
    mara = {**PROFILE, "character": "Mara Vell", "profile": "I keep the Gull Rock light."}
    context = AmadeusContext(memory_dir=str(tmp_path / "personas"), model="openai:fake")
    where = persona_index_settings(context.memory_dir, context=context)
    asyncio.run(index_persona(mara, index=where, context=context))
    with chat_server(tmp_path, monkeypatch) as server:
        assert f"http://127.0.0.1:{PORT}/v1" in snippet
        exec(snippet.replace(f"http://127.0.0.1:{PORT}/v1", server.base_url), {})  # noqa: S102
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["['Iago', 'Mara Vell']", ANSWER, ANSWER]
    assert re.search(r"I keep the Gull Rock light", str(server.model.requests))
