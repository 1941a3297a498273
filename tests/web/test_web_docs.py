"""docs/web.md's start-up block, run as a reader types it on a fresh copy of the sample data.

The block's ``uv run personae ...`` lines run in process (``personae.cli.main``) in a folder
holding only ``examples/data``, the sample world's scripted model answering; the sample wiki
line starts the wiki on a free port. The last line, ``personae web``, runs the real command up
to the server: ``uvicorn.run`` is replaced by a catch that keeps the app it was given, which a
test client then reads as the browser would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn
from profile_page_world import mara_model
from sample_world import copy_samples, run_personae, sample_wiki
from starlette.testclient import TestClient

from personae.testing import override_models

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "web.md"
MARKER = "<!-- run: tests/web/test_web_docs.py::test_the_web_page_starts_on_the_sample_data -->"


def block_lines() -> list[str]:
    """The lines of the block the marker names."""
    after = PAGE.read_text(encoding="utf-8").split(MARKER + "\n", 1)[1]
    body = after.split("```bash\n", 1)[1].split("\n```", 1)[0]
    return [line.strip() for line in body.splitlines() if line.strip()]


def test_the_web_page_starts_on_the_sample_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wiki, *commands, web = block_lines()
    assert web.startswith("uv run personae web ")
    copy_samples(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **where: served.update(app=app, **where))
    with sample_wiki(wiki) as (meant, url), override_models(mara_model()):
        for line in commands:
            assert run_personae(line.replace(meant, url)) == 0, capsys.readouterr().err
        assert run_personae(web) == 0
    assert (served["host"], served["port"]) == ("127.0.0.1", 8080)
    assert "the web page is at http://127.0.0.1:8080/" in capsys.readouterr().err
    client = TestClient(served["app"], base_url="http://127.0.0.1:8080", follow_redirects=False)
    listing = client.get("/profiles").text
    assert '<a href="/profiles/mara-vell--the-keeper-of-gull-rock">Mara Vell</a>' in listing
    profile = client.get("/profiles/mara-vell--the-keeper-of-gull-rock").text
    assert "I am Mara Vell, assistant keeper of the Gull Rock light." in profile
    indexed = client.post("/chat/index", data={"profile": "mara-vell--the-keeper-of-gull-rock"})
    assert indexed.headers["location"] == "/chat/Mara%20Vell"
    assert (tmp_path / "personas").is_dir()  # the page's folders are the current folder's
    options = served["app"].state.options
    assert options.storylines == ((tmp_path / "examples/data/gull_rock.jsonl").resolve(),)
    assert (options.data_dir / "novels" / "the_keeper_of_gull_rock" / "arcs").is_dir()
