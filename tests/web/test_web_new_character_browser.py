"""A new character from the page, in a real browser and across a server restart."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from profile_job_world import (
    FRANCHISE,
    FROM_SCRATCH,
    KEY,
    NAME,
    HeldSampleChat,
    options,
    sample_servers,
    wait_for,
)
from web_world import browser_page, screenshot, serving

from personae.web.app import create_app

pytestmark = pytest.mark.slow


def test_the_form_shows_the_estimate_then_streams_the_run_to_its_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = HeldSampleChat("EvidenceNotes", "ProfileDraft")  # the run waits twice
    with sample_servers(monkeypatch, chat) as (wiki, model):
        app = create_app(options(tmp_path, model))
        with serving(app) as base, browser_page() as page:
            page.goto(base + "/profiles/new")
            page.fill("input[name=name]", NAME)
            page.fill("input[name=franchise]", FRANCHISE)
            page.fill("input[name=wiki]", wiki)
            page.select_option("select[name=method]", "planned")
            page.click("button[type=submit]")
            assert page.title() == f"Confirm: {NAME} · Personae"
            assert page.inner_text("#estimate-calls") == "13"  # plan, 3 rounds of 3, rewrite, 2
            assert chat.requests == []  # nothing paid before Start
            page.click("#start")
            page.wait_for_url(f"{base}/jobs/*")
            page.locator("#lines li", has_text="planned 7 queries").wait_for()
            assert chat.waiting["EvidenceNotes"].wait(timeout=30)
            page.evaluate("window.loadedOnce = true")  # gone if the page reloads
            round_line = f"{NAME}: round 1: 5 passages, 5 new sources, 7 notes"
            assert round_line not in page.inner_text("#lines")
            chat.release("EvidenceNotes")
            page.locator("#lines li", has_text=round_line).wait_for()  # appended by job.js
            assert page.evaluate("window.loadedOnce") is True
            assert page.inner_text("#status") == "running"
            assert chat.waiting["ProfileDraft"].wait(timeout=30)
            assert "citation check" not in page.inner_text("#lines")
            screenshot(page, "new-character")
            chat.release()
            page.locator("#profile-link").wait_for()
            lines = page.locator("#lines li").all_inner_texts()
            href = page.get_attribute("#profile-link", "href")
            status = page.inner_text("#status")
    assert status == "done"
    assert href == f"/profiles/{KEY}"
    assert f"{NAME}: citation check: 0 facts and 0 sentences dropped" in lines
    assert lines.index(round_line) < len(lines) - 1 and lines[-1] == f"done: {KEY}"
    assert (tmp_path / "profiles" / KEY / "profile.json").is_file()
    assert chat.schemas() == list(FROM_SCRATCH)


def test_a_profile_started_from_the_page_survives_a_server_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = HeldSampleChat("ProfileDraft")
    with sample_servers(monkeypatch, chat) as (wiki, model):
        with serving(create_app(options(tmp_path, model))) as base:
            form = {"name": NAME, "franchise": FRANCHISE, "wiki": wiki, "method": "planned"}
            started = httpx.post(f"{base}/jobs", data=form)
            job_id = started.headers["location"].removeprefix("/jobs/")
            assert chat.waiting["ProfileDraft"].wait(
                timeout=30
            )  # round 1 paid for, the rewrite in flight
        # The server is stopped: the job is left running on disk, its rewrite never answered.
        record = tmp_path / "profiles" / ".web-jobs" / f"{job_id}.json"
        assert json.loads(record.read_text())["status"] == "running"
        paid = chat.schemas()
        assert paid == [*FROM_SCRATCH[:5]]
        chat.release()
        with serving(create_app(options(tmp_path, model))) as base:
            state = wait_for(
                lambda: (
                    (s := httpx.get(f"{base}/jobs/{job_id}/lines").json())["status"] != "running"
                    and s
                )
            )
            page = httpx.get(f"{base}/jobs/{job_id}").text
    resumed = chat.schemas()[len(paid) :]
    assert state["status"] == "done", state
    assert resumed == ["ProfileDraft", "ClaimChecks", "ProseCheck"]  # not the 7 from scratch
    lines = state["lines"]
    restart = lines.index("server restarted: resuming from the checkpoint")
    assert f"{NAME}: resuming the interrupted run" in lines[restart:]
    assert f"{NAME}: round 1: 5 passages, 5 new sources, 7 notes" in lines[:restart]
    assert lines[-1] == f"done: {KEY}"
    assert json.loads(record.read_text())["starts"] == 2
    assert "resumed after 1 restart(s)" in page
    assert f'href="/profiles/{KEY}"' in page
    assert (tmp_path / "profiles" / KEY / "profile.json").is_file()
