"""A profile is finished only when its graph has no next node: a stopped check is resumed.

A run that stopped inside ``verify_profile`` (the checker's server failed, Ctrl-C, kill -9)
already holds the unchecked draft in ``profile``; rerunning the same command must run the
checks, never write that draft as if it were checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from profiler_world import fake_web, scripted_model

from personae.cli import main
from personae.errors import RemoteError
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import paths_for
from personae.testing import ScriptedChatModel, override_models

HOKUTO = "Fist of the North Star"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    web, _, _ = fake_web()
    with LoopbackWebServer(web.route) as running:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", running.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:cli-test")
        yield running


def profile(server: LoopbackWebServer, out: Path, *extra: str) -> int:
    argv = ["profile", "Kenshiro", "--franchise", HOKUTO, "--wiki", server.url, "--out", str(out)]
    return main([*argv, "--max-rounds", "1", *extra])


def use(model: ScriptedChatModel) -> ScriptedChatModel:
    override_models(specs={"openai:cli-test": model})
    return model


def down(messages: list[BaseMessage]) -> Any:
    raise RemoteError("the prose checker's server is down", "try again later")


def test_a_run_stopped_in_the_checks_resumes_them_instead_of_writing_the_draft(
    server: LoopbackWebServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = use(scripted_model())
    failing.responders["ProseCheck"] = down
    assert profile(server, tmp_path) == 3
    err = capsys.readouterr().err
    assert "the prose checker's server is down" in err
    assert "profile drafted" in err and "profile written" not in err
    paths = paths_for(tmp_path, "Kenshiro", HOKUTO)
    assert not paths.profile_json.exists()

    healed = use(scripted_model())
    assert profile(server, tmp_path) == 0
    err = capsys.readouterr().err
    assert "resuming the interrupted run" in err and "already profiled" not in err
    assert {name for name, _ in healed.calls} == {"ClaimChecks", "ProseCheck"}  # only the checks
    document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    assert document["prose_check"] is not None and document["prose_check"]["sentences"] >= 1
    assert document["usage"]["facts_checked"] >= 1


def test_the_same_failing_command_twice_fails_twice(
    server: LoopbackWebServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):
        failing = use(scripted_model())
        failing.responders["ProseCheck"] = down
        assert profile(server, tmp_path) == 3
        assert "already profiled" not in capsys.readouterr().err
    assert not list(tmp_path.rglob("profile.json"))


def test_a_finished_run_is_written_again_from_its_checkpoint(
    server: LoopbackWebServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    use(scripted_model())
    assert profile(server, tmp_path) == 0
    paths = paths_for(tmp_path, "Kenshiro", HOKUTO)
    first = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    paths.profile_json.unlink()
    again = use(scripted_model())
    assert profile(server, tmp_path) == 0
    assert "already profiled" in capsys.readouterr().err and again.calls == []
    second = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    assert second["prose_check"] == first["prose_check"] is not None


def test_no_check_citations_prints_no_citation_check(
    server: LoopbackWebServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    use(scripted_model())
    assert profile(server, tmp_path, "--no-check-citations") == 0
    err = capsys.readouterr().err
    assert "citation check" not in err and "Kenshiro: profile drafted" in err


def test_force_on_a_new_out_folder_profiles(
    server: LoopbackWebServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    use(scripted_model())
    out = tmp_path / "new"
    assert profile(server, out, "--force") == 0, capsys.readouterr().err
    assert paths_for(out, "Kenshiro", HOKUTO).profile_json.exists()


def test_a_run_stopped_between_a_node_and_its_checkpoint_resumes_once(
    server: LoopbackWebServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The planner's writes are saved, the checkpoint after them is not (Ctrl-C between the
    two; checkpoints are saved in the background). ``next`` is then empty although the run is
    not done: starting over on that thread recorded round 1 twice (30 searches instead of 18)."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    put = AsyncSqliteSaver.aput

    async def dying_put(
        self: Any, config: Any, checkpoint: Any, metadata: Any, versions: Any
    ) -> Any:
        if metadata.get("step") == 2:  # the checkpoint after plan_queries: the process dies
            raise RemoteError("the process died here")
        return await put(self, config, checkpoint, metadata, versions)

    monkeypatch.setattr(AsyncSqliteSaver, "aput", dying_put)
    use(scripted_model())
    assert profile(server, tmp_path) == 3
    monkeypatch.setattr(AsyncSqliteSaver, "aput", put)
    capsys.readouterr()

    rerun = use(scripted_model())
    assert profile(server, tmp_path) == 0
    err = capsys.readouterr().err
    assert "resuming the interrupted run" in err and "already profiled" not in err
    assert rerun.calls_for("QueryPlan") == []  # the plan came back from the saved writes
    document = json.loads(
        paths_for(tmp_path, "Kenshiro", HOKUTO).profile_json.read_text(encoding="utf-8")
    )
    assert [r["round"] for r in document["rounds"]] == [1]
    assert document["usage"]["searches"] == 2 * len(document["rounds"][0]["queries"])
