"""The storylines view in a real browser: Mara's actions, the slider, what is true at P."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage
from sample_world import sample_model
from web_story_world import CHARACTER, Story, prepare_story
from web_world import browser_page, screenshot, serving

from personae.testing import ScriptedChatModel, override_models, prompt_text
from personae.web.app import create_app
from personae.web.options import WebOptions

pytestmark = pytest.mark.slow

POSITION = 40
QUESTION = "Where is Mara now?"


def last_seen(messages: list[BaseMessage]) -> str:
    """A state answer naming the last action of Mara's the sync prompt showed."""
    text = prompt_text(messages[-1:])
    seen = [line.strip() for line in text.splitlines() if "Mara " in line and "?" not in line]
    return f"Last seen: {seen[-1]}" if seen else "unknown"


def storyline_model() -> ScriptedChatModel:
    """The sample model, its state syncs answering with the last action they read."""
    responders = dict(sample_model().responders)
    responders["StateUpdate"] = lambda m: {"operation": "update", "answer": last_seen(m)}
    responders["StateAnswer"] = lambda m: {"answer": last_seen(m)}
    return ScriptedChatModel(responders=responders)


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return prepare_story(tmp_path_factory.mktemp("story"))


def test_a_characters_actions_bookmarks_and_what_is_true_at_a_position(
    story: Story, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    lines = story.storyline.read_text(encoding="utf-8").splitlines()
    actions = [json.loads(line) for line in lines]
    own = [p for p, row in enumerate(actions) if row["character"] == CHARACTER]
    options = WebOptions(
        storylines=(story.storyline,),
        bookmarks_memory=tmp_path / "bank",
        models={"model": "openai:scripted"},
    )
    model = storyline_model()
    with override_models(model), serving(create_app(options)) as base, browser_page() as page:
        page.goto(base + "/storylines")
        page.get_by_role("link", name=CHARACTER).first.click()
        page.wait_for_url(f"**/storylines/0?character={CHARACTER}")
        rows = page.locator("table.actions tbody tr")
        assert rows.evaluate_all("rows => rows.map(row => Number(row.dataset.position))") == own
        assert actions[own[-1]]["action"] in rows.last.inner_text()
        assert page.locator("table.actions tr.future").count() == 0  # at the last position

        page.locator("#position").fill(str(POSITION))
        greyed = page.locator("table.actions tr.future").evaluate_all(
            "rows => rows.map(row => Number(row.dataset.position))"
        )
        assert greyed == [p for p in own if p >= POSITION] != []
        assert page.locator("#position-number").input_value() == str(POSITION)
        assert page.locator("input.position-field").input_value() == str(POSITION)
        assert "No bookmark bank yet" in page.locator("main").inner_text()

        page.locator("input[name=question]").fill(QUESTION)
        page.get_by_role("button", name="Ask").click()
        page.locator(".answer .response").wait_for()
        answer = page.locator(".answer .response").inner_text()
        assert f"valid at position {POSITION}" in answer and "(bookmark bm-" in answer
        last = actions[max(p for p in own if p < POSITION)]["action"]
        assert answer.startswith(f"Last seen: {last} (bookmark")  # her last action before P
        bank = page.locator("table.bank tbody tr").all_inner_texts()
        assert len(bank) == 1 and QUESTION in bank[0] and bank[0].endswith(str(POSITION))
        assert answer.startswith(bank[0].split("\t")[3])  # the row shows the answer given
        screenshot(page, "storyline")

        # At an earlier position the bookmark has no answer yet: a reader there sees none.
        page.goto(f"{base}/storylines/0?character={CHARACTER}&position=10")
        assert page.locator("table.bank").count() == 0
        assert (
            "1 more bookmark only answered after position 10" in page.locator("main").inner_text()
        )

    prompts = [prompt_text(messages) for _, messages in model.calls]
    assert any(actions[POSITION - 1]["action"] in prompt for prompt in prompts)  # it read up to P
    future = [row["action"] for row in actions[POSITION:]]
    assert not [text for text in future if any(text in prompt for prompt in prompts)]
