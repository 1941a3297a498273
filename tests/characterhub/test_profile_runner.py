"""The CharacterHub runner as a library call: run, write the folder, resume from the checkpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from profiler_world import profiler_context, scripted_model, serve_fake_web

from personae.loopback import LoopbackWebServer
from personae.runners.characterhub import Profile, profile_character
from personae.testing import ScriptedChatModel, override_models

HOKUTO = "Fist of the North Star"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    with serve_fake_web(monkeypatch) as running:
        yield running


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    override_models(specs={"openai:runner-test": scripted})
    yield scripted


async def test_profile_character_writes_the_folder_and_resumes_without_a_call(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path
) -> None:
    context = profiler_context(server, "runner-test", cache_dir=None)
    lines: list[str] = []
    first = await profile_character(
        "Kenshiro", franchise=HOKUTO, wiki=server.url, out=tmp_path, context=context,
        progress=lines.append,
    )  # fmt: skip
    assert isinstance(first, Profile) and not first.resumed
    assert first.paths.directory == tmp_path / "kenshiro--fist-of-the-north-star"
    on_disk = json.loads(first.paths.profile_json.read_text(encoding="utf-8"))
    assert on_disk == first.document and first.profile.startswith("I am Kenshiro")
    assert first.paths.card_json.exists() and first.paths.profile_md.exists()
    assert (tmp_path / ".checkpoints.sqlite").exists()
    assert (
        first.usage["llm_calls"] == 7
        and f"Kenshiro: found {server.url}/wiki/Kenshiro" in (lines[0].split(" (")[0])
    )
    paid = len(model.calls)
    again = await profile_character(
        "Kenshiro", franchise=HOKUTO, wiki=server.url, out=tmp_path, context=context
    )
    assert again.resumed and again.profile == first.profile
    assert len(model.calls) == paid  # written from the checkpoint
