"""Profiles and chat in a real browser: read a profile's sources, index it, talk to it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from profile_page_world import ANSWER, KEPT_FACT, KEY, chat_responders, write_sample_profile
from recipe_world import loopback_llm
from web_world import browser_page, screenshot, serving

from personae.memory.amadeus.persona_store import indexed_personas, open_client
from personae.web.app import create_app
from personae.web.options import WebOptions

pytestmark = pytest.mark.slow


def test_a_user_reads_a_fact_s_source_then_indexes_the_profile_and_talks_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile_json = write_sample_profile(tmp_path / "profiles")
    document = json.loads(profile_json.read_text(encoding="utf-8"))
    fact = document["dimensions"]["ability"][0]
    source = next(s for s in document["sources"] if s["id"] == fact["source_ids"][0])
    options = WebOptions(
        profiles_dir=tmp_path / "profiles",
        personas_dir=tmp_path / "personas",
        models={"model": "openai:fake"},
    )
    with (
        loopback_llm(chat_responders(), monkeypatch),
        serving(create_app(options)) as base,
        browser_page() as page,
    ):
        page.goto(base + "/profiles")
        row = page.locator("table.profiles tbody tr").first
        assert row.locator("td").all_inner_texts()[:4] == [
            "Mara Vell",
            "The Keeper of Gull Rock",
            str(sum(len(f) for f in document["dimensions"].values())),
            "checked",
        ]
        screenshot(page, "profiles")
        row.get_by_role("link", name="Mara Vell").click()
        assert page.title() == "Mara Vell · Personae"
        item = page.locator("li.fact", has_text=fact["text"])
        passage = item.locator("details.source", has_text=source["id"]).first
        assert not passage.locator("blockquote").is_visible()
        passage.locator("summary").click()  # expand the source: its passage shows
        quoted = passage.locator("blockquote")
        assert quoted.is_visible()
        assert quoted.inner_text().strip() == source["content"].strip()
        link = passage.locator("a")
        assert link.get_attribute("href") == source["url"] and link.inner_text() == source["title"]
        assert item.locator(".verdict").inner_text() == "supported"
        card = page.get_by_role("link", name="Character Card V3 (card.json)")
        assert card.get_attribute("href") == f"/profiles/{KEY}/card.json"
        screenshot(page, "profile")
        page.get_by_role("button", name="Index and talk").click()
        page.wait_for_url(base + "/chat/Mara%20Vell")
        page.get_by_label("Your message").fill("What keeps you busy up in the tower?")
        page.get_by_role("button", name="Send").click()
        page.wait_for_url(base + "/chat/Mara%20Vell#last")
        turn = page.locator("li.turn#last")
        assert turn.locator(".response").inner_text() == ANSWER
        shown = turn.locator("code.chunk-id").all_inner_texts()
        assert KEPT_FACT in turn.locator("blockquote.chunk-text").inner_text()
        screenshot(page, "chat")
    stored = open_client(str(options.personas_dir.resolve()))
    [manifest] = indexed_personas(stored)
    chunks = stored.get_collection(manifest["collection"]).get(include=["documents"])
    kept = [
        i
        for i, text in zip(chunks["ids"], chunks["documents"] or [], strict=True)
        if KEPT_FACT in text
    ]
    assert shown == kept  # the ids of the index's chunks the judge kept, as stored
    assert re.fullmatch(r"[0-9a-f]{40}", shown[0])
