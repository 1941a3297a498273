"""The arcs view in a real browser: Mara's axes across the chapters, the slider, role-play."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import FakeOpenAIChat
from web_story_world import ANSWER, AXES, CHARACTER, NOVEL, PHASES, Story, prepare_story
from web_world import browser_page, screenshot, serving

from personae.loopback import LoopbackWebServer
from personae.web.app import create_app
from personae.web.options import WebOptions

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return prepare_story(tmp_path_factory.mktemp("story"))


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAIChat, str]]:
    """The loopback OpenAI-compatible server the role-play's real client calls."""
    fake = FakeOpenAIChat({"text": lambda messages: ANSWER})
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with LoopbackWebServer(fake) as server:
        yield fake, f"{server.url}/v1"


def prompt_of(request: dict[str, Any]) -> str:
    return "\n".join(str(message.get("content", "")) for message in request["messages"])


def test_the_timeline_greys_the_future_and_the_character_answers_as_of_the_chapter(
    story: Story, model: tuple[FakeOpenAIChat, str]
) -> None:
    fake, base_url = model
    options = WebOptions(
        data_dir=story.data_dir,
        models={"model": "openai:fake", "openai_base_url": base_url},
    )
    with serving(create_app(options)) as base, browser_page() as page:
        page.goto(base + "/arcs")
        page.get_by_role("link", name=CHARACTER).click()
        page.wait_for_url(f"**/arcs/{NOVEL}/{CHARACTER}")
        assert page.locator(".axis strong").all_inner_texts() == list(AXES)
        labels = page.locator(".phase .phase-label").all_inner_texts()
        assert labels == [*PHASES, *PHASES]  # both axes, three phases each
        assert page.locator(".future").count() == 0  # as of the last chapter: nothing hidden

        page.locator("#chapter").fill("3")
        greyed = page.locator(".chapter.future").evaluate_all(
            "cells => cells.map(cell => cell.dataset.chapter)"
        )
        assert greyed == ["4", "5"]
        future_phases = page.locator(".phase.future .phase-label").all_inner_texts()
        assert future_phases == ["Phase 2", "Phase 2"]  # chapter 5's phase, on both axes
        assert page.locator(".cell.future").count() == 2 * len(AXES)
        assert page.locator("#ask-chapter").input_value() == "3"
        assert page.locator("#chapter-shown").inner_text() == "3"

        page.locator("textarea[name=scenario]").fill("Elias asks whether you will go to Westmere.")
        page.locator("select[name=mode]").select_option("arc")
        page.get_by_role("button", name="Ask").click()
        page.locator(".answer .response").wait_for()
        assert page.locator(".answer .response").inner_text() == ANSWER
        grounded = "As of chapter 3, arc mode. Grounded in chapters 1, 3."  # the phases begun
        assert page.locator(".answer .muted").inner_text() == grounded
        # The page comes back at the chapter asked, its future still greyed.
        assert page.locator("#chapter").input_value() == "3"
        assert page.locator(".chapter.future").count() == 2
        screenshot(page, "arcs")

    [request] = fake.requests  # one role-play call, through the real OpenAI client
    prompt = prompt_of(request)
    assert "chapter 3" in prompt and "Elias asks whether you will go to Westmere." in prompt
    assert "Mara at MARK1" in prompt and "Mara at MARK3" in prompt  # phases begun by chapter 3
    assert "MARK5" not in prompt and "MARK6" not in prompt  # chapter 5's phase never shown
