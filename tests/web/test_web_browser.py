"""The web page in a real browser (Debian's chromium through Playwright)."""

from __future__ import annotations

from pathlib import Path

import pytest
from web_world import browser_page, screenshot, serving

from personae.web.app import create_app
from personae.web.options import WebOptions

pytestmark = pytest.mark.slow


def test_the_front_page_lists_the_folders_and_links_every_view(tmp_path: Path) -> None:
    (tmp_path / "profiles").mkdir()
    app = create_app(WebOptions(profiles_dir=tmp_path / "profiles", runs_dir=tmp_path / "runs"))
    with serving(app) as base, browser_page() as page:
        page.goto(base + "/")
        assert page.title() == "Home · Personae"
        cells = page.locator("td").all_inner_texts()
        assert str((tmp_path / "profiles").resolve()) in cells
        assert "not created yet" in cells  # runs/ does not exist
        links = page.locator("nav a").all_inner_texts()
        assert links == ["Profiles", "New character", "Chat", "Arcs", "Storylines", "Reports"]
        screenshot(page, "home")
