"""What a profile will cost, said before it starts: the runner's estimate against real runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from profiler_world import profiler_context, scripted_model, serve_fake_web

from personae.cli import main
from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.runners.characterhub import estimate_profile, profile_character
from personae.runners.characterhub_batch import report_estimate
from personae.testing import ScriptedChatModel, override_models

HOKUTO = "Fist of the North Star"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    with serve_fake_web(monkeypatch) as running:
        yield running


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    override_models(specs={"openai:estimate-test": scripted})
    yield scripted


@pytest.mark.parametrize(
    ("method", "check_citations"), [("planned", True), ("planned", False), ("paper", None)]
)
async def test_a_one_round_run_makes_exactly_the_calls_estimated(
    server: LoopbackWebServer,
    model: ScriptedChatModel,
    tmp_path: Path,
    method: str,
    check_citations: bool | None,
) -> None:
    context = profiler_context(
        server, "estimate-test", method=method, max_rounds=1, check_citations=check_citations
    )
    estimate = estimate_profile(context)
    profile = await profile_character(
        "Kenshiro", franchise=HOKUTO, wiki=server.url, out=tmp_path, context=context
    )
    assert profile.usage["llm_calls"] == len(model.calls) == estimate.calls
    used = profile.usage["input_tokens"] + profile.usage["output_tokens"]
    assert 0 < used <= estimate.tokens  # the scripted pages are short; an estimate is at most


def test_the_estimate_follows_the_graph_and_the_budgets_cap_it() -> None:
    planned = estimate_profile(ProfilerContext(web_search=False))
    assert (planned.calls, planned.tokens) == (13, 159_500)  # plan, 3 rounds of 3, rewrite, 2
    assert planned.detail == "a plan, up to 3 rounds of 3 calls, the rewrite and its 2 checks"
    unchecked = estimate_profile(ProfilerContext(web_search=False, check_citations=False))
    assert unchecked.calls == 8 and unchecked.tokens < planned.tokens
    assert estimate_profile(ProfilerContext(method="paper")).calls == 5  # R1, R2, rewrite
    assert (
        estimate_profile(ProfilerContext(method="paper", max_rounds=1)).detail == "R1, the rewrite"
    )
    long = estimate_profile(ProfilerContext(max_rounds=20, max_llm_calls=25, max_tokens=300_000))
    assert (long.calls, long.tokens) == (25, 300_000)  # the run's budgets stop it there too
    assert long.detail.endswith("; capped by the run's budget")
    wide = estimate_profile(ProfilerContext(evidence_chars=120_000))
    assert wide.tokens > planned.tokens  # the passages each call reads dominate


def test_personae_profile_prints_the_estimate_before_its_first_call(
    server: LoopbackWebServer,
    model: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PERSONAE_MODEL", "openai:estimate-test")
    monkeypatch.setenv("PERSONAE_FAST_MODEL", "openai:estimate-test")
    argv = ["profile", "Kenshiro", "--franchise", HOKUTO, "--wiki", server.url, "--max-rounds", "1"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    expected = estimate_profile(ProfilerContext(max_rounds=1))
    announced = (
        f"estimated: {expected.calls:,} LLM calls, ~{expected.tokens:,} tokens "
        f"({expected.detail}); model openai:estimate-test, fast model openai:estimate-test"
    )
    assert err[0] == announced
    assert err[1].startswith("Kenshiro: found ")  # before the run's first line


def test_a_batch_announces_its_characters_times_one_profile() -> None:
    context = ProfilerContext(model="openai:a", fast_model="openai:b", method="paper")
    lines: list[str] = []
    estimate = report_estimate(context, 3, lines.append)
    one = estimate_profile(context)
    assert (estimate.calls, estimate.tokens) == (3 * one.calls, 3 * one.tokens)
    assert lines == [
        f"estimated: {3 * one.calls:,} LLM calls, ~{3 * one.tokens:,} tokens "
        f"(3 characters: {one.detail}); model openai:a, fast model openai:b"
    ]
