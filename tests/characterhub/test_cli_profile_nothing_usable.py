"""A profile that ends with nothing usable keeps what was paid for, and exit 0 means checked.

The run writes its unchecked draft (``draft.json``, ``draft.md``: the draft, its notes and
sources) and exits 3; the rerun the error suggests (``--no-check-citations``) reuses every
answer already paid for: no model call. Exit 0 needs at least one checked item: sentences
without a claim never keep a profile alive alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from profiler_world import fake_web, scripted_model

from personae.cli import main
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import paths_for
from personae.testing import ScriptedChatModel, override_models, prompt_text

HOKUTO = "Fist of the North Star"
_NUMBERED = re.compile(r"^(\d+)\. ", re.MULTILINE)
_CLAIM = re.compile(r"## Claim (\d+): ")


def nothing_supported(messages: list[BaseMessage]) -> dict[str, Any]:
    """A checker that finds every claim unsupported."""
    return dict.fromkeys(_CLAIM.findall(prompt_text(messages)), "unsupported")


def prose_verdicts(verdict: str) -> Any:
    def respond(messages: list[BaseMessage]) -> dict[str, Any]:
        sentences = prompt_text(messages).split("## Sentences of the profile\n", 1)[1]
        return {n: {"verdict": verdict} for n in _NUMBERED.findall(sentences)}

    return respond


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    scripted.responders["ClaimChecks"] = nothing_supported
    scripted.responders["ProseCheck"] = prose_verdicts("unsupported")
    override_models(specs={"openai:draft-test": scripted})
    web, _, _ = fake_web()
    with LoopbackWebServer(web.route) as server:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:draft-test")
        monkeypatch.setenv("PERSONAE_FAST_MODEL", "openai:draft-test")
        monkeypatch.setenv("WIKI_URL", server.url)
        yield scripted


def argv(tmp_path: Path, *extra: str) -> list[str]:
    import os

    wiki = ["--wiki", os.environ["WIKI_URL"], "--max-rounds", "1"]
    return ["profile", "Kenshiro", "--franchise", HOKUTO, *wiki, "--out", str(tmp_path), *extra]


def test_nothing_usable_keeps_the_draft_and_the_suggested_rerun_costs_no_call(
    model: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = paths_for(tmp_path, "Kenshiro", HOKUTO)
    assert main(argv(tmp_path)) == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(
        "personae: error: nothing usable left: no sentence of Kenshiro's profile"
    )
    assert f"the unchecked draft is kept in {paths.draft_json}" in last
    assert "--no-check-citations" in last
    assert not paths.profile_json.exists() and not paths.card_json.exists()
    draft = json.loads(paths.draft_json.read_text(encoding="utf-8"))
    assert draft["checked"] is False and draft["profile"].startswith("I am Kenshiro")
    assert draft["sources"] and draft["rounds"][0]["source_ids"]
    assert [f["text"] for f in draft["dimensions"]["identity"]] == ["I am the 64th successor."]
    assert draft["notices"][0].startswith("UNCHECKED DRAFT, not a profile: no sentence")
    assert "UNCHECKED DRAFT" in paths.draft_md.read_text(encoding="utf-8")
    paid = len(model.calls)
    assert paid > 0

    assert main(argv(tmp_path, "--no-check-citations")) == 0
    err = capsys.readouterr().err
    assert "reusing the checked run's answers" in err
    assert len(model.calls) == paid  # every answer was already paid for
    document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    assert document["profile"] == draft["profile"] and document["prose_check"] is None
    assert document["usage"]["llm_calls"] == draft["usage"]["llm_calls"]
    assert not paths.draft_json.exists() and not paths.draft_md.exists()


def test_sentences_without_a_claim_never_keep_a_profile_alone(
    model: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model.responders["ProseCheck"] = prose_verdicts("no_claim")
    assert main(argv(tmp_path)) == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "(0 of 2 facts confirmed, 0 of 1 sentences supported, 1 without a claim)" in last
    assert not paths_for(tmp_path, "Kenshiro", HOKUTO).profile_json.exists()


def test_a_batch_degrades_per_character_and_keeps_the_failed_ones_draft(
    model: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from profiler_world import claim_checks, draft

    def raoh_says_nothing_true(messages: list[BaseMessage]) -> dict[str, Any]:
        answer: dict[str, Any] = draft(messages)
        if "the fictional character Raoh " in prompt_text(messages):
            answer["profile"] = "I am Raoh, King of Fist."
        return answer

    def raoh_unsupported(messages: list[BaseMessage]) -> dict[str, Any]:
        verdict = "unsupported" if "I am Raoh" in prompt_text(messages) else "supported"
        return dict(prose_verdicts(verdict)(messages))

    model.responders.update(
        ProfileDraft=raoh_says_nothing_true, ClaimChecks=claim_checks, ProseCheck=raoh_unsupported
    )
    rows = [f"{name},{HOKUTO},{os.environ['WIKI_URL']}" for name in ("Kenshiro", "Raoh")]
    batch = tmp_path / "characters.csv"
    batch.write_text("name,franchise,wiki\n" + "\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    code = main(["profile", "--batch", str(batch), "--out", str(out), "--max-rounds", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err  # one character failed: the batch is degraded, not lost
    assert "1 profiled, 0 already done, 0 duplicates, 0 filtered, 1 failed" in captured.out
    assert "failed Raoh: nothing usable left: no sentence of Raoh's profile" in captured.err
    assert "degraded: 1 (characters_failed 1)" in captured.err
    assert paths_for(out, "Kenshiro", HOKUTO).profile_json.exists()
    raoh = paths_for(out, "Raoh", HOKUTO)
    assert not raoh.profile_json.exists() and raoh.draft_json.exists()
