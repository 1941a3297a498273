"""The new-character page without a browser: its checks, its estimate, its job records."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
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
from starlette.testclient import TestClient

from personae.graphs.characterhub.state import ProfilerContext
from personae.runners.characterhub import estimate_profile
from personae.testing import prompt_text
from personae.web.app import create_app
from personae.web.jobs import Job, JobStore, ProfileRequest

BASE = "http://127.0.0.1:8765"
CLAIM = re.compile(r"## Claim (\d+): ")
NUMBERED = re.compile(r"^(\d+)\. ", re.MULTILINE)


def client_for(folder: Path, model_url: str = "") -> TestClient:
    return TestClient(create_app(options(folder, model_url)), base_url=BASE)


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"name": "  ", "method": "planned"}, "the character name is empty; pass a name"),
        (
            {"name": "Mara", "wiki": "gull-rock.fandom.com", "method": "planned"},
            "the wiki URL &#39;gull-rock.fandom.com&#39; is not an http(s) URL; pass the address",
        ),
        (
            {"name": "Mara", "method": "cheap"},
            "unknown method &#39;cheap&#39;; pick one of planned",
        ),
        ({"name": "Mara", "method": "paper"}, "no LLM is configured; set OPENAI_API_KEY"),
    ],
)
def test_a_bad_form_shows_the_clis_one_line_message_and_writes_nothing(
    tmp_path: Path, form: dict[str, str], message: str
) -> None:
    client = client_for(tmp_path)  # no model configured: the last case
    for path in ("/profiles/new", "/jobs"):  # asking for the estimate, or starting directly
        page = client.post(path, data=form)
        assert page.status_code == 400
        assert f'<p class="error" role="alert" id="form-error">{message}' in page.text
        assert f'value="{form["name"]}"' in page.text  # the form keeps what was typed
    assert list(tmp_path.iterdir()) == []  # no profiles folder, no job record


def test_the_confirm_page_shows_the_runners_estimate_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    client = client_for(tmp_path, "http://127.0.0.1:9/v1")
    form = {"name": NAME, "franchise": FRANCHISE, "wiki": "", "method": "paper"}
    page = client.post("/profiles/new", data=form)
    assert page.status_code == 200
    expected = estimate_profile(ProfilerContext(method="paper", web_search=False))
    assert expected.calls == 5  # R1 and R2 (a search call and a document each), the rewrite
    assert f'<strong id="estimate-calls">{expected.calls:,}</strong>' in page.text
    assert f'<strong id="estimate-tokens">{expected.tokens:,}</strong>' in page.text
    assert '<input type="hidden" name="method" value="paper">' in page.text
    models = "model <code>openai:fake</code>, fast model <code>openai:fake</code>"
    assert f'<p class="muted" id="models">Paid to: {models}</p>' in page.text
    assert list(tmp_path.iterdir()) == []  # nothing starts before Start


def test_a_post_from_another_site_starts_nothing(tmp_path: Path) -> None:
    client = client_for(tmp_path)
    form = {"name": NAME, "method": "planned"}
    for path in ("/profiles/new", "/jobs"):
        refused = client.post(path, data=form, headers={"origin": "https://evil.example"})
        assert refused.status_code == 403
        assert "a form of another site may not post here" in refused.text
    assert list(tmp_path.iterdir()) == []


def test_a_finished_job_is_recorded_with_the_clis_lines_and_its_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = HeldSampleChat()
    with sample_servers(monkeypatch, chat) as (wiki, model):
        app = create_app(options(tmp_path, model))
        with TestClient(app, base_url=BASE, follow_redirects=False) as client:
            form = {"name": NAME, "franchise": FRANCHISE, "wiki": wiki, "method": "planned"}
            started = client.post("/jobs", data=form, headers={"origin": BASE})
            assert started.status_code == 303
            job_url = started.headers["location"]
            job_id = job_url.removeprefix("/jobs/")
            again = client.post("/jobs", data=form)  # the same character while it runs
            assert again.headers["location"] == job_url
            state = wait_for(
                lambda: (s := client.get(f"{job_url}/lines").json())["status"] != "running" and s
            )
            page = client.get(job_url).text
            listed = client.get("/jobs").text
    assert state["status"] == "done", state
    assert state["profile"] == f"/profiles/{KEY}"
    assert chat.schemas() == list(FROM_SCRATCH)
    assert (tmp_path / "profiles" / KEY / "profile.json").is_file()
    record = json.loads((tmp_path / "profiles" / ".web-jobs" / f"{job_id}.json").read_text())
    estimate = estimate_profile(ProfilerContext(web_search=False))
    assert record == {
        "id": job_id,
        "request": {"name": NAME, "franchise": FRANCHISE, "wiki": wiki, "method": "planned"},
        "status": "done",
        "created": record["created"],
        "updated": record["updated"],
        "estimate_calls": estimate.calls,
        "estimate_tokens": estimate.tokens,
        "error": "",
        "profile_key": KEY,
        "starts": 1,
    }
    assert estimate.calls >= len(FROM_SCRATCH)  # at most: this run stopped after one round
    lines = state["lines"]
    assert lines[0] == f"started: at most {estimate.calls:,} LLM calls, ~{estimate.tokens:,} tokens"
    assert lines[1].startswith(f"estimated: {estimate.calls:,} LLM calls")  # the batch runner's
    assert f"{NAME}: found {wiki}/wiki/Mara_Vell (5 passages of it read)" in lines
    assert f"{NAME}: round 1: 5 passages, 5 new sources, 7 notes" in lines
    assert f"{NAME}: citation check: 0 facts and 0 sentences dropped" in lines
    assert lines[-1] == f"done: {KEY}"
    assert f'<a id="profile-link" href="/profiles/{KEY}">' in page
    assert "job.js" not in page  # a finished job's page does not poll
    assert f'<a href="/jobs/{job_id}">{NAME}</a>' in listed
    assert '<td class="status-done">done</td>' in listed


def test_a_run_with_nothing_usable_shows_its_error_and_the_kept_draft(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(messages: list[BaseMessage]) -> dict[str, Any]:
        text = prompt_text(messages)  # a checker that finds every claim and sentence unsupported
        if "## Sentences of the profile\n" in text:
            sentences = text.split("## Sentences of the profile\n", 1)[1]
            return {n: {"verdict": "unsupported"} for n in NUMBERED.findall(sentences)}
        return dict.fromkeys(CLAIM.findall(text), "unsupported")

    chat = HeldSampleChat(ClaimChecks=unsupported, ProseCheck=unsupported)
    with sample_servers(monkeypatch, chat) as (wiki, model):
        app = create_app(options(tmp_path, model))
        with TestClient(app, base_url=BASE) as client:
            form = {"name": NAME, "franchise": FRANCHISE, "wiki": wiki, "method": "planned"}
            job_url = str(client.post("/jobs", data=form).url.path)
            state = wait_for(
                lambda: (s := client.get(f"{job_url}/lines").json())["status"] != "running" and s
            )
            page = client.get(job_url).text
    draft = tmp_path / "profiles" / KEY / "draft.json"
    assert state["status"] == "failed"
    assert state["error"].startswith("nothing usable left: ")
    assert f"(the unchecked draft is kept in {draft})" in state["error"]
    assert state["lines"][-1] == f"failed: {state['error']}"
    assert draft.is_file() and not (tmp_path / "profiles" / KEY / "profile.json").exists()
    assert f"kept in {draft}" in page and 'id="job-error"' in page


def test_a_job_id_from_the_path_is_checked_and_a_broken_record_is_skipped(tmp_path: Path) -> None:
    client = client_for(tmp_path)
    jobs = tmp_path / "profiles" / ".web-jobs"
    jobs.mkdir(parents=True)
    (jobs / "0123456789ab.json").write_text("{not json")
    (tmp_path / "profiles" / "secret.json").write_text("{}")
    for job_id in ("0123456789ab", "..%2Fsecret", "nope"):
        assert client.get(f"/jobs/{job_id}").status_code == 404
        assert client.get(f"/jobs/{job_id}/lines").status_code == 404
    assert "No job yet." in client.get("/jobs").text
    assert JobStore(jobs).read("../secret") is None


def test_a_record_is_replaced_whole(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = Job(
        id="0123456789ab",
        request=ProfileRequest(name=NAME),
        status="running",
        created="2026-11-28T03:00:00+00:00",
        updated="2026-11-28T03:00:00+00:00",
        estimate_calls=13,
        estimate_tokens=1000,
    )
    store.write(job)
    store.write(Job(**{**job.__dict__, "status": "done", "profile_key": KEY}))
    assert [path.name for path in tmp_path.iterdir()] == ["0123456789ab.json"]  # no temp left
    assert store.read(job.id) == Job(**{**job.__dict__, "status": "done", "profile_key": KEY})
    store.append_line(job.id, "two\nlines")
    assert store.lines(job.id) == ["two lines"]


def job(job_id: str, status: str, created: str, **changes: Any) -> Job:
    values: dict[str, Any] = {
        "id": job_id,
        "request": ProfileRequest(name=NAME, franchise=FRANCHISE),
        "status": status,
        "created": created,
        "updated": created,
        "estimate_calls": 13,
        "estimate_tokens": 159_500,
        **changes,
    }
    return Job(**values)


def test_the_form_lists_the_methods_and_the_recent_jobs(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "profiles" / ".web-jobs")
    store.write(job("aaaaaaaaaaaa", "done", "2026-11-28T01:00:00+00:00", profile_key=KEY))
    store.write(job("bbbbbbbbbbbb", "failed", "2026-11-28T02:00:00+00:00", error="x"))
    page = client_for(tmp_path).get("/profiles/new").text
    assert '<option value="planned" selected>planned</option>' in page
    assert '<option value="paper">paper</option>' in page
    assert page.index("/jobs/bbbbbbbbbbbb") < page.index("/jobs/aaaaaaaaaaaa")  # newest first
    assert f'<a href="/profiles/{KEY}">{KEY}</a>' in page
    assert '<td class="status-failed">failed</td>' in page


def test_on_start_only_unfinished_jobs_run_again(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "profiles" / ".web-jobs")
    finished = job("aaaaaaaaaaaa", "done", "2026-11-28T01:00:00+00:00", profile_key=KEY)
    store.write(finished)
    store.write(job("bbbbbbbbbbbb", "running", "2026-11-28T02:00:00+00:00"))
    app = create_app(options(tmp_path))  # no model configured any more: the rerun says so
    with TestClient(app, base_url=BASE) as client:
        state = wait_for(
            lambda: (
                (s := client.get("/jobs/bbbbbbbbbbbb/lines").json())["status"] != "running" and s
            )
        )
    assert store.read("aaaaaaaaaaaa") == finished
    rerun = store.read("bbbbbbbbbbbb")
    assert rerun is not None and rerun.starts == 2 and rerun.status == "failed"
    assert rerun.error.startswith("no LLM is configured; set OPENAI_API_KEY")
    assert state["lines"] == [
        "server restarted: resuming from the checkpoint",
        f"failed: {rerun.error}",
    ]
    assert store.lines("aaaaaaaaaaaa") == []  # never ran here: no log


def test_a_bug_in_a_job_fails_that_job_not_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> None:
        raise ValueError("boom")

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setattr("personae.runners.characterhub.profile_character", broken)
    with TestClient(
        create_app(options(tmp_path, "http://127.0.0.1:9/v1")), base_url=BASE
    ) as client:
        job_url = str(client.post("/jobs", data={"name": NAME, "method": "planned"}).url.path)
        state = wait_for(
            lambda: (
                (s := client.get(f"{job_url}/lines?after=1").json())["status"] != "running" and s
            )
        )
        assert client.get("/profiles/new").status_code == 200
    assert state["error"] == "unexpected error: ValueError: boom"
    estimated, failed = state["lines"]  # after the first: the batch runner's estimate, the error
    assert estimated.startswith("estimated: ") and failed == f"failed: {state['error']}"
