"""The reports view in a real browser: an ARCANE report as ``personae arcane eval-report``
writes it, listed, its Markdown rendered and its HTML framed with no script running."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from arcane_world import result_record
from web_world import browser_page, screenshot, serving

from personae.cli import main
from personae.web.app import create_app
from personae.web.options import WebOptions

pytestmark = pytest.mark.slow
GULL_ROCK = "the_keeper_of_gull_rock"


def result(character: str, mode: str, score: float) -> dict[str, Any]:
    """One line of an ARCANE eval's results.jsonl (a judged probe of one mode)."""
    return result_record(character, mode, score, f"{character.lower()}1", GULL_ROCK)


def write_arcane_report(out: Path) -> None:
    """results.jsonl of two characters, then the real report command over it."""
    out.mkdir(parents=True)
    rows = [result("Mara", "arc", 70), result("Mara", "vanilla", 60)]
    rows += [result("Elias", "arc", 50), result("Elias", "vanilla", 35)]
    (out / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["arcane", "eval-report", str(out)]) == 0


def test_a_written_report_is_listed_rendered_and_framed_without_scripts(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_arcane_report(runs / "arcane-gull-rock")
    hostile = runs / "hostile"
    hostile.mkdir()
    (hostile / "report.html").write_text(
        "<h1>Quoted page</h1><script>document.body.insertAdjacentHTML('beforeend',"
        "'<p id=ran>script ran</p>')</script>",
        encoding="utf-8",
    )
    markdown = (runs / "arcane-gull-rock" / "report.md").read_text(encoding="utf-8")
    with serving(create_app(WebOptions(runs_dir=runs))) as base, browser_page() as page:
        page.goto(base + "/reports")
        listed = page.locator("table.reports tbody tr").all_inner_texts()
        names = sorted(row.split("\t")[1] for row in listed if "arcane-gull-rock" in row)
        assert names == ["report.html", "report.md", "summary.json"]

        page.locator("tr", has_text="arcane-gull-rock").get_by_role(
            "link", name="report.md"
        ).click()
        page.wait_for_url("**/reports/view/arcane-gull-rock/report.md")
        headers = page.locator("article.report table th").all_inner_texts()
        assert headers and all(header in markdown for header in headers)
        assert "arc" in page.locator("article.report table").first.inner_text()
        shown = page.locator("article.report").inner_text()
        assert "<svg" in markdown and "<svg" not in shown  # the plot is not shown as markup
        assert "(an HTML figure: see the HTML report)" in shown
        screenshot(page, "reports")

        page.get_by_role("link", name="as HTML, with its figures").click()
        page.wait_for_url("**/reports/view/arcane-gull-rock/report.html")
        framed = page.frame_locator("iframe.report-frame")
        assert framed.locator("table").first.inner_text().strip()

        page.goto(base + "/reports/view/hostile/report.html")
        framed = page.frame_locator("iframe.report-frame")
        assert framed.locator("h1").inner_text() == "Quoted page"
        assert framed.locator("#ran").count() == 0  # the sandbox and the CSP: no script ran
        page.goto(base + "/reports/file/hostile/report.html")  # opened directly: same policy
        assert page.locator("h1").inner_text() == "Quoted page"
        assert page.locator("#ran").count() == 0
