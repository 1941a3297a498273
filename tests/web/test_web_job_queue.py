"""The page's jobs: one job per character whatever the spelling, and at most --max-jobs at once."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from profile_job_world import (
    FRANCHISE,
    FROM_SCRATCH,
    KEY,
    NAME,
    HeldSampleChat,
    sample_servers,
    wait_for,
)
from profile_job_world import options as page_options
from starlette.testclient import TestClient

from personae.run_queue import DEFAULT_MAX_JOBS, ordinal
from personae.web.app import create_app
from personae.web.jobs import Job, JobStore, ProfileRequest

BASE = "http://127.0.0.1:8765"


def state(client: TestClient, job_url: str) -> dict[str, Any]:
    found: dict[str, Any] = client.get(f"{job_url}/lines").json()
    return found


def states_once(
    client: TestClient, urls: list[str], statuses: list[str]
) -> list[dict[str, Any]] | None:
    """Every job's state, once their statuses are ``statuses`` (else None)."""
    states = [state(client, url) for url in urls]
    return states if [s["status"] for s in states] == statuses else None


def test_three_spellings_of_one_character_are_one_job_and_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = HeldSampleChat("QueryPlan")  # the first run waits in its plan while the others come
    with sample_servers(monkeypatch, chat) as (wiki, model):
        app = create_app(page_options(tmp_path, model))
        with TestClient(app, base_url=BASE, follow_redirects=False) as client:
            spellings = [
                (NAME, f"{wiki}/"),
                (NAME.lower(), wiki),
                (f"{NAME} ", f"{wiki}/"),
            ]
            urls = []
            for name, wiki_url in spellings:
                form = {"name": name, "franchise": FRANCHISE, "wiki": wiki_url, "method": "planned"}
                urls.append(client.post("/jobs", data=form).headers["location"])
                assert chat.waiting["QueryPlan"].wait(30)
            chat.release()
            done = wait_for(lambda: (s := state(client, urls[0]))["status"] == "done" and s)
    assert len(set(urls)) == 1  # the second and third joined the first job
    assert done["profile"] == f"/profiles/{KEY}"
    assert chat.schemas() == list(FROM_SCRATCH)  # one run's calls, not three
    assert len(JobStore(tmp_path / "profiles" / ".web-jobs").all()) == 1


def test_jobs_past_max_jobs_wait_in_order_and_show_their_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = HeldSampleChat("QueryPlan")
    with sample_servers(monkeypatch, chat) as (wiki, model):
        app = create_app(replace(page_options(tmp_path, model), max_jobs=2))
        with TestClient(app, base_url=BASE, follow_redirects=False) as client:
            urls = []
            for franchise in ("A", "B", "C", "D"):  # four characters (four folder keys)
                form = {"name": NAME, "franchise": franchise, "wiki": wiki, "method": "planned"}
                urls.append(client.post("/jobs", data=form).headers["location"])
            held = wait_for(
                lambda: states_once(client, urls, ["running", "running", "queued", "queued"])
            )
            page = client.get(urls[3]).text
            wait_for(lambda: len(chat.schemas()) == 2)
            running_calls = chat.schemas()
            chat.release()
            finished = wait_for(lambda: states_once(client, urls, ["done"] * 4), 60)
    assert [s["place"] for s in held] == [None, None, 1, 2]
    assert [s["waiting"] for s in held] == ["", "", "1st in line", "2nd in line"]
    assert '<strong id="status" class="status-queued">queued: 2nd in line</strong>' in page
    assert running_calls == ["QueryPlan", "QueryPlan"]  # the two queued ones asked nothing
    for position, job in enumerate(finished[2:], start=1):
        assert f"queued: {ordinal(position)} in line (2 jobs run at once)" in job["lines"]
        assert "running: its turn came" in job["lines"]
    assert all("queued" not in " ".join(job["lines"]) for job in finished[:2])


def test_a_queued_job_keeps_its_record_and_runs_after_a_restart(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "profiles" / ".web-jobs")
    app = create_app(page_options(tmp_path))  # no model: the resumed job fails at once, saying so
    stamp = "2026-11-28T02:00:00+00:00"
    request = ProfileRequest(name=NAME, franchise=FRANCHISE)
    store.write(Job(id="cccccccccccc", request=request, status="queued", created=stamp,
                    updated=stamp, estimate_calls=13, estimate_tokens=159_500))  # fmt: skip
    with TestClient(app, base_url=BASE) as client:
        ended = wait_for(
            lambda: (s := state(client, "/jobs/cccccccccccc"))["status"] == "failed" and s
        )
    assert ended["lines"][0] == "server restarted: resuming from the checkpoint"
    assert "running: its turn came" in ended["lines"]
    assert ended["error"].startswith("no LLM is configured")


@pytest.mark.parametrize(
    ("place", "text"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (22, "22nd")]
)
def test_places_read_as_ordinals(place: int, text: str) -> None:
    assert ordinal(place) == text


def test_the_docs_state_the_max_jobs_default() -> None:
    """The pages say the default the code has (one constant, read here)."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    for page in ("web.md", "deploy.md", "reference/cli.md"):
        text = " ".join((docs / page).read_text(encoding="utf-8").split())
        stated = re.findall(r"`--max-jobs`[^.;]*?default (\d+)", text)
        assert stated and set(stated) == {str(DEFAULT_MAX_JOBS)}, (page, stated)
