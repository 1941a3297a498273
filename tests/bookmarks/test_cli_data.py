"""`personae bookmarks fetch` end to end against a loopback Hub."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import pytest
from cli_errors import assert_one_line_error

from personae.cli import main
from personae.loopback import LoopbackWebServer, WebRequest, WebResponse, free_port
from personae.memory.bookmarks.storyline import load_storyline
from personae.tools.bookmarks.hf_datasets import BOOKMARKS_DATASETS

STORY = json.dumps({"Ep 1": [{"action": "Kasumi: Hello!", "characters": ["Kasumi"]}] * 3}).encode()
FILES = {
    BOOKMARKS_DATASETS[0]: {"data/all_characters.json": b"{}"},
    BOOKMARKS_DATASETS[1]: {"data/title2action_series.Poppin'Party.json": STORY},
}


def hub(request: WebRequest) -> WebResponse:
    path = unquote(request.path)
    for repo, files in FILES.items():
        if path == f"/api/datasets/{repo}/tree/main":
            listing = [{"type": "file", "path": p, "size": len(b)} for p, b in files.items()]
            return WebResponse(200, listing)
        for name, body in files.items():
            if path == f"/datasets/{repo}/resolve/main/{name}":
                return WebResponse(200, body)
    return WebResponse(404, {"error": "Repository not found"})


def test_fetch_downloads_then_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "bm"
    with LoopbackWebServer(hub) as server:
        argv = ["bookmarks", "fetch", "--dest", str(dest), "--endpoint", server.url]
        assert main(argv) == 0
        first = capsys.readouterr().out
        assert main(argv) == 0
        second = capsys.readouterr().out
    assert "2 downloaded, 0 already present" in first
    assert "0 downloaded, 2 already present" in second
    assert len(load_storyline(dest / "title2action_series.Poppin'Party.json")) == 3


def test_endpoint_and_token_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with LoopbackWebServer(hub) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", "hf_secret")
        monkeypatch.setenv("PERSONAE_CONTACT", "mailto:me@example.org")
        assert main(["bookmarks", "fetch", "--dest", str(tmp_path)]) == 0
        headers = [r.headers for r in server.requests]
    assert headers and all(h["Authorization"] == "Bearer hf_secret" for h in headers)
    assert all("mailto:me@example.org" in h["User-Agent"] for h in headers)
    assert "2 downloaded" in capsys.readouterr().out


def test_missing_dataset_exits_3_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def empty(request: WebRequest) -> WebResponse:
        return WebResponse(404, {"error": "Repository not found"})

    with LoopbackWebServer(empty) as server:
        code = main(["bookmarks", "fetch", "--dest", str(tmp_path / "d"), "--endpoint", server.url])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and "not found" in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()


def test_unreachable_endpoint_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens: the client backs off between attempts, then one line, exit 3. The
    backoff is recorded, not slept (it was 10 s of the suite's wall time)."""
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr("asyncio.sleep", record)  # the HTTP client's backoff; nothing else sleeps
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["bookmarks", "fetch", "--dest", str(tmp_path / "d"), "--endpoint", url]) == 3
    err = capsys.readouterr().err
    assert err.startswith("personae: error: cannot reach") and err.count("\n") == 1
    assert not (tmp_path / "d").exists()
    assert waits and waits == sorted(waits)  # it retried, waiting longer each time


def test_unknown_dataset_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bookmarks", "fetch", "coser"])
    assert exit_info.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_a_redirect_to_an_internal_address_exits_3_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def hostile(request: WebRequest) -> WebResponse:
        if "/resolve/" in request.path:
            return WebResponse(302, b"", {"Location": "http://169.254.169.254/latest/"})
        return hub(request)

    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    dest = tmp_path / "d"
    with LoopbackWebServer(hostile) as server:
        code = main(["bookmarks", "fetch", "--dest", str(dest), "--endpoint", server.url])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and "Traceback" not in err
    assert "redirected to http://169.254.169.254/latest/, which is refused" in err
    assert "hf_secret" not in err
    assert not [p for p in dest.rglob("*") if p.is_file()]


def test_a_bad_endpoint_is_a_one_line_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for endpoint in ("ftp://mirror", "http://[::1", "http://hub:99999", "not a url"):
        argv = ["bookmarks", "fetch", "--dest", str(tmp_path), "--endpoint", endpoint]
        assert main(argv) == 2, endpoint
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is not an http(s) URL" in err, err


@pytest.mark.parametrize(
    ("next_page", "problem"),
    [
        (lambda n: "/api/datasets/{repo}/tree/main?recursive=true", "loops"),
        (lambda n: f"/api/datasets/{{repo}}/tree/main?recursive=true&cursor={n}", "past 100 pages"),
    ],
    ids=["same-url", "new-page-number"],
)
def test_a_hub_that_keeps_paginating_is_stopped_with_exit_3(
    next_page: Callable[[int], str],
    problem: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 27: a Hub paginating on its own origin was asked (with the token) forever."""
    asked: list[int] = []

    def hostile(request: WebRequest) -> WebResponse:
        repo = BOOKMARKS_DATASETS[0]
        asked.append(1)
        if len(asked) > 500:  # the old client never stopped: end the test rather than hang
            return WebResponse(200, [])
        link = "<" + next_page(len(asked)).format(repo=repo) + '>; rel="next"'
        return WebResponse(200, [{"type": "directory", "path": "d"}], {"Link": link})

    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    dest = tmp_path / "d"
    with LoopbackWebServer(hostile) as server:
        code = main(["bookmarks", "fetch", "--dest", str(dest), "--endpoint", server.url])
    err = capsys.readouterr().err
    assert code == 3, err
    assert_one_line_error(err, f"the file listing of {BOOKMARKS_DATASETS[0]} at .* {problem}")
    assert "hf_secret" not in err
    assert len(asked) <= 100
    assert not dest.exists() or not any(dest.iterdir())
