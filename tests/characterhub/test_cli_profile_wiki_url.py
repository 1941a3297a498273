"""`personae profile --wiki URL` tries the URL as given before the root derived from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_web import FakeTavily, FakeWeb
from profiler_world import hokuto_wiki, scripted_model, web_results

from personae.cli import main
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import paths_for
from personae.testing import override_models


def test_a_wiki_whose_script_path_holds_wiki_is_not_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    override_models(specs={"openai:cli-test": scripted_model(score=0.9)})
    tavily = FakeTavily(web_results, api_key="tvly-test")
    web = FakeWeb(tavily=tavily, wikis={"/wiki/hokuto": hokuto_wiki()})
    with LoopbackWebServer(web.route) as server:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:cli-test")
        wiki = f"{server.url}/wiki/hokuto"
        argv = ["profile", "Kenshiro", "--wiki", wiki, "--out", str(tmp_path), "--max-rounds", "1"]
        assert main(argv) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "not a MediaWiki" not in err and "is an article" not in err
    document = json.loads(paths_for(tmp_path, "Kenshiro").profile_json.read_text("utf-8"))
    assert document["wiki_page"] == f"{wiki}/wiki/Kenshiro"
    assert any(s["origin"] == "wiki" for s in document["sources"])
