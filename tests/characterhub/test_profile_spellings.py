"""One character, one paid run, however it is spelled and whichever version saved the run.

``Kenshiro``, ``kenshiro `` and `` KENSHIRO`` are one folder; run one after the other, the later
spellings resume the first one's finished checkpoint (no model call). A checkpoint saved under
the thread id earlier versions gave (the name as typed) still resumes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from profiler_world import profiler_context, scripted_model, serve_fake_web

import personae.runners.characterhub as runner
from personae import CharacterRow, profile_characters
from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.runners.characterhub import legacy_profile_thread, profile_character, profile_thread
from personae.testing import ScriptedChatModel, override_models

HOKUTO = "Fist of the North Star"
MODEL = "spelling-test"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    with serve_fake_web(monkeypatch) as running:
        yield running


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    override_models(specs={f"openai:{MODEL}": scripted})
    yield scripted


def context_for(server: LoopbackWebServer) -> ProfilerContext:
    return profiler_context(server, MODEL, max_rounds=1, web_search=False)


def test_the_thread_id_is_the_folder_key_not_the_spelling() -> None:
    context = ProfilerContext()
    spellings = [("Shin", "Hokuto"), ("shin ", " hokuto"), (" SHIN", "HOKUTO  ")]
    threads = {profile_thread(name, franchise, None, context) for name, franchise in spellings}
    assert len(threads) == 1 and next(iter(threads)).startswith("shin-")
    assert profile_thread("Shin", None, None, context) == profile_thread("shin", " ", None, context)
    # Another franchise, wiki, list or model is another run, as before.
    one = profile_thread("Shin", "Hokuto", None, context)
    assert one != profile_thread("Shin", "Fist", None, context)
    assert one != profile_thread("Shin", "Hokuto", "https://hokuto.fandom.com", context)
    assert one != profile_thread("Shin", "Hokuto", None, context, source="mal")
    assert one != profile_thread("Shin", "Hokuto", None, ProfilerContext(model="openai:other"))
    # The legacy id hashes the spelling: two spellings, two ids (what made a rerun pay twice).
    assert legacy_profile_thread("Shin", None, None, context) != legacy_profile_thread(
        "shin", None, None, context
    )


async def test_later_spellings_resume_the_finished_run_without_a_call(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path
) -> None:
    context = context_for(server)
    first = await profile_character(
        "Kenshiro", franchise=HOKUTO, wiki=server.url, out=tmp_path, context=context
    )
    paid = len(model.calls)
    assert paid > 0 and not first.resumed
    for name, franchise in (("kenshiro ", HOKUTO), (" KENSHIRO", "fist of the north star ")):
        first.paths.profile_json.unlink()  # the files gone: only the checkpoint can answer
        lines: list[str] = []
        again = await profile_character(
            name, franchise=franchise, wiki=f"{server.url}/", out=tmp_path, context=context,
            progress=lines.append,
        )  # fmt: skip
        assert len(model.calls) == paid, name
        assert again.resumed and again.paths == first.paths
        assert again.profile == first.profile and again.document["usage"] == first.usage
        assert f"{name}: already profiled; writing the files from the checkpoint" in lines


async def test_a_checkpoint_saved_under_the_legacy_thread_id_is_resumed(
    server: LoopbackWebServer,
    model: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The previous version's run, stopped once its round was checkpointed, finishes without
    asking for its plan or its round again; a forced run drops it and starts over."""
    context = context_for(server)

    def stop_after_round_1(line: str) -> None:
        if "round 1" in line:
            task.cancel()  # what Ctrl-C does to the run

    with monkeypatch.context() as old:  # the previous version: the thread id as typed
        old.setattr(runner, "profile_thread", legacy_profile_thread)
        task = asyncio.create_task(
            profile_character(
                "Kenshiro",
                franchise=HOKUTO,
                wiki=server.url,
                out=tmp_path,
                context=context,
                progress=stop_after_round_1,
            )  # fmt: skip
        )
        with pytest.raises(asyncio.CancelledError):
            await task
    legacy = legacy_profile_thread("Kenshiro", HOKUTO, server.url, context)
    assert legacy != profile_thread("Kenshiro", HOKUTO, server.url, context)
    plans, notes = len(model.calls_for("QueryPlan")), len(model.calls_for("EvidenceNotes"))
    assert (plans, notes) == (1, 1)
    lines: list[str] = []
    resumed = await profile_character(
        "Kenshiro", franchise=HOKUTO, wiki=server.url, out=tmp_path, context=context,
        progress=lines.append,
    )  # fmt: skip
    assert "Kenshiro: resuming the interrupted run" in lines and resumed.resumed
    assert len(model.calls_for("QueryPlan")) == plans  # not restarted: the plan came back
    assert len(model.calls_for("EvidenceNotes")) == notes  # and so did the round's notes
    assert resumed.usage["llm_calls"] == len(model.calls)  # one run's calls, counted once
    paid = len(model.calls)
    forced = await profile_character(
        "Kenshiro", franchise=HOKUTO, wiki=server.url, out=tmp_path, context=context, force=True
    )
    assert not forced.resumed and len(model.calls_for("QueryPlan")) == plans + 1
    assert len(model.calls) > paid


def test_the_batch_runner_pays_once_for_two_spellings_in_two_calls(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path
) -> None:
    """Two lists, one after the other (the web page's jobs run with ``skip_done=False``)."""
    context = context_for(server)
    first = asyncio.run(
        profile_characters(
            [CharacterRow("Kenshiro", HOKUTO, server.url)], out=tmp_path, context=context
        )
    )
    assert first.summary() == "1 profiled, 0 already done, 0 duplicates, 0 filtered, 0 failed"
    paid = len(model.calls)
    second = asyncio.run(
        profile_characters(
            [CharacterRow("kenshiro ", f" {HOKUTO.upper()}", f"{server.url}/")],
            out=tmp_path,
            context=context,
            skip_done=False,
        )
    )
    [outcome] = second.outcomes
    assert (outcome.outcome, outcome.resumed) == ("profiled", True)
    assert outcome.folder == first.outcomes[0].folder
    assert len(model.calls) == paid  # the outcome reports the run's calls; none were made now
