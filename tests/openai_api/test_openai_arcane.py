"""An ARCANE character as of a chapter is a model: listed at every chapter, answering as of one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from openai_world import CHARACTER as PERSONA
from openai_world import chat_server, prompt_of
from sample_world import CHAPTERS
from web_story_world import ANSWER, CHARACTER, NOVEL, Story, prepare_story


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return prepare_story(tmp_path_factory.mktemp("story"))


def test_a_character_at_a_chapter_is_listed_and_answers_as_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, story: Story
) -> None:
    at_three = f"{NOVEL}/{CHARACTER}@3"
    with chat_server(tmp_path, monkeypatch, data_dir=story.data_dir) as server:
        server.model.responders["text"] = lambda messages: ANSWER
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        listed = [model.id for model in client.models.list()]
        reply = client.chat.completions.create(
            model=at_three,
            messages=[
                {"role": "system", "content": "A storm keeps everyone in the lighthouse."},
                {"role": "user", "content": "Will you leave the rock?"},
            ],
        )
        streamed = client.chat.completions.create(
            model=at_three,
            messages=[{"role": "user", "content": "Why stay?"}],
            stream=True,
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed)
        with pytest.raises(openai.NotFoundError) as too_far:
            client.chat.completions.create(
                model=f"{NOVEL}/{CHARACTER}@{CHAPTERS + 1}",
                messages=[{"role": "user", "content": "Hello"}],
            )
        requests: list[dict[str, Any]] = list(server.model.requests)
    assert listed == [PERSONA, *(f"{NOVEL}/{CHARACTER}@{n}" for n in range(1, CHAPTERS + 1))]
    assert reply.choices[0].message.content == ANSWER and text == ANSWER
    prompt = prompt_of(requests[0])
    assert "A storm keeps everyone in the lighthouse." in prompt  # the app's scene
    assert "Will you leave the rock?" in prompt
    assert f"chapters 1 to {CHAPTERS}" in too_far.value.message
