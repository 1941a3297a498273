"""`personae profile` end to end: real graph, real clients on a loopback web, scripted LLM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_web import FakeTavily, FakeWeb
from profiler_world import fake_web, scripted_model

from personae.cli import main
from personae.loopback import LoopbackWebServer, free_port
from personae.memory.characterhub.character_card import card_problems
from personae.testing import ScriptedChatModel, override_models


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LoopbackWebServer, FakeTavily]]:
    web, _, tavily = fake_web()
    with LoopbackWebServer(web.route) as server:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:cli-test")
        yield server, tavily


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = scripted_model(score=0.9)
    override_models(specs={"openai:cli-test": scripted})
    yield scripted


FOLDER = "kenshiro--fist-of-the-north-star"
"""Output folder of Kenshiro of Fist of the North Star: the name's slug, then the franchise's."""


def profile(server: LoopbackWebServer, out: Path, *extra: str) -> int:
    return main(
        [
            "profile",
            "Kenshiro",
            "--franchise",
            "Fist of the North Star",
            "--wiki",
            server.url,
            "--out",
            str(out),
            *extra,
        ]
    )


def written(out: Path) -> list[str]:
    """Output files under ``out`` (the HTTP cache, the checkpoint database and the run locks
    in ``.locks/`` excluded)."""
    return sorted(
        p.name
        for p in out.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(out).parts)
        and p.relative_to(out).parts[0] != "cache"
    )


def test_writes_profile_markdown_and_valid_card(
    world: tuple[LoopbackWebServer, FakeTavily],
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, _ = world
    assert profile(server, tmp_path) == 0
    folder = tmp_path / FOLDER
    document = json.loads((folder / "profile.json").read_text(encoding="utf-8"))
    assert document["character"] == "Kenshiro"
    assert document["franchise"] == "Fist of the North Star"
    assert document["profile"].startswith("I am")
    ids = {s["id"] for s in document["sources"]}
    assert all(set(s) == {"id", "url", "title", "origin", "content"} for s in document["sources"])
    for facts in document["dimensions"].values():
        assert all(f["source_ids"] and set(f["source_ids"]) <= ids for f in facts)
    assert document["rounds"][0]["queries"] and document["rounds"][0]["notes"]
    assert document["rounds"][0]["coverage"]["identity"] == 0.9
    assert document["usage"]["llm_calls"] == 7 and document["usage"]["searches"] == 14
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    assert card_problems(card) == []
    assert card["data"]["name"] == card["name"] == "Kenshiro"
    assert card["data"]["character_book"]["entries"]
    markdown = (folder / "profile.md").read_text(encoding="utf-8")
    assert "[S1" in markdown
    assert document["usage"]["dropped_facts"] == 0 and "## Dropped model output" not in markdown
    captured = capsys.readouterr()
    assert str(folder / "profile.json") in captured.out
    assert "dropped model output" not in captured.err and "degraded" not in captured.err


def test_a_prose_check_still_invalid_keeps_the_sentences_unchecked_and_says_so(
    world: tuple[LoopbackWebServer, FakeTavily],
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model.responders["ProseCheck"] = lambda messages: "Every sentence looks fine to me."
    server, _ = world
    assert profile(server, tmp_path) == 0
    document = json.loads((tmp_path / FOLDER / "profile.json").read_text(encoding="utf-8"))
    assert document["profile"].startswith("I am Kenshiro")  # kept, unchecked
    assert document["prose_check"]["unchecked"] == [document["profile"]]
    assert document["usage"]["sentences_unchecked"] == 1 == document["usage"]["degraded"]
    assert len(model.calls_for("ProseCheck")) == 3
    err = capsys.readouterr().err
    assert "Kenshiro: degraded: 1 (sentences_unchecked 1)\n" in err


def test_both_methods_run_end_to_end_and_record_method_and_drinfo(
    world: tuple[LoopbackWebServer, FakeTavily],
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, tavily = world
    assert profile(server, tmp_path / "paper", "--method", "paper") == 0
    said = said_paper = (
        capsys.readouterr().err
    )  # the progress says what happens: no check runs (issue 26 §9)
    assert (
        "Kenshiro: profile drafted (Table 8 over DRInfo), kept as written: nothing checks it\n"
        in said
    )
    assert "checking" not in said
    assert profile(server, tmp_path / "planned", "--method", "planned", "--no-check-citations") == 0
    said = capsys.readouterr().err
    assert "Kenshiro: profile drafted, kept as written (--no-check-citations)\n" in said
    assert "checking" not in said
    paper = json.loads(
        (tmp_path / "paper" / "kenshiro--fist-of-the-north-star" / "profile.json").read_text()
    )
    planned = json.loads(
        (tmp_path / "planned" / "kenshiro--fist-of-the-north-star" / "profile.json").read_text()
    )
    assert (paper["method"], planned["method"]) == ("paper", "planned")
    assert paper["drinfo"].startswith("# Kenshiro (R2)") and paper["stop_reason"] == "paper_rounds"
    assert planned["drinfo"].startswith("# Kenshiro\n\n## Identity")
    # The paper's method: Table 8's output unedited, no check; planned with its check off.
    assert paper["prose_check"] is None and planned["prose_check"] is None
    assert paper["usage"]["facts_checked"] == planned["usage"]["facts_checked"] == 0
    assert paper["canon"] == "" and planned["canon"] == "Fist of the North Star"
    assert planned["canon_rule"].startswith("Canon: Fist of the North Star. Describe")
    # Readers see what was decided, never the prompt's instruction.
    folder = tmp_path / "planned" / "kenshiro--fist-of-the-north-star"
    markdown = (folder / "profile.md").read_text()
    assert "*Canon:* Fist of the North Star\n" in markdown and "Describe the" not in markdown
    card = json.loads((folder / "card.json").read_text())
    assert card["data"]["extensions"]["personae"]["canon"] == "Fist of the North Star"
    assert set(paper["models"]) == {"search", "rewrite"}  # no fast model: nothing checked
    assert paper["models"]["rewrite"]["top_k"] == 50
    assert {q["search_depth"] for q in tavily.queries} == {"advanced"}
    assert "R1: " in said_paper and "R2: " in said_paper
    assert "citation check:" not in said_paper + said  # no run checks: no line says it did
    assert (
        "CharacterHub profiling (--method paper): the paper's settings | this run's" in said_paper
    )


def test_without_tavily_key_profiles_from_wiki_and_says_so(
    world: tuple[LoopbackWebServer, FakeTavily],
    model: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, tavily = world
    monkeypatch.delenv("TAVILY_API_KEY")
    assert profile(server, tmp_path) == 0
    document = json.loads((tmp_path / FOLDER / "profile.json").read_text(encoding="utf-8"))
    assert "web search disabled: TAVILY_API_KEY is not set" in document["notices"][0]
    assert {s["origin"] for s in document["sources"]} == {"wiki"}
    assert tavily.queries == []


def test_interrupted_run_resumes_without_repeating_earlier_nodes(
    world: tuple[LoopbackWebServer, FakeTavily],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, tavily = world
    scripted = scripted_model(score=0.9)
    working = scripted.responders["ProfileDraft"]

    def down(messages: object) -> object:
        raise ConnectionError("LLM server went away")

    scripted.responders["ProfileDraft"] = down
    override_models(specs={"openai:cli-test": scripted})
    assert profile(server, tmp_path) == 3
    assert "personae: error:" in capsys.readouterr().err
    assert not (tmp_path / FOLDER).exists()
    searches = len(tavily.queries)
    scripted.responders["ProfileDraft"] = working
    assert profile(server, tmp_path) == 0
    assert len(scripted.calls_for("QueryPlan")) == 1
    assert len(scripted.calls_for("EvidenceNotes")) == 1
    assert len(tavily.queries) == searches  # no search was run again
    assert (tmp_path / FOLDER / "profile.json").exists()


def test_no_llm_configured_names_the_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["profile", "Kenshiro", "--wiki", "http://127.0.0.1:9", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "OPENAI_API_KEY" in err and "OPENAI_BASE_URL" in err
    assert "Traceback" not in err and written(tmp_path) == []


def test_empty_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "  ", "--out", str(tmp_path)]) == 2
    assert "the character name is empty" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_unknown_wiki_is_refused(
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PERSONAE_MODEL", "openai:cli-test")
    with LoopbackWebServer(FakeWeb(pages={"/": "<html>not a wiki</html>"}).route) as server:
        code = main(["profile", "Kenshiro", "--wiki", server.url, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "is not a MediaWiki site" in err and "--wiki" in err
    assert "Traceback" not in err and written(tmp_path) == []


def test_ambiguous_name_is_reported_with_candidates(
    world: tuple[LoopbackWebServer, FakeTavily],
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, _ = world
    code = main(["profile", "Zoro", "--wiki", server.url, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "ambiguous" in err and "Roronoa Zoro" in err
    assert written(tmp_path) == []


def test_unreachable_llm_is_one_line_exit_3(
    world: tuple[LoopbackWebServer, FakeTavily],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, _ = world
    port = free_port()
    monkeypatch.setenv("PERSONAE_MODEL", "openai:test-model")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    assert profile(server, tmp_path) == 3
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("personae: error:")]
    assert len(errors) == 1 and "cannot reach the LLM server" in errors[0]
    assert "Traceback" not in err and written(tmp_path) == []


def test_batch_dedupes_and_skips_done(
    world: tuple[LoopbackWebServer, FakeTavily],
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, _ = world
    batch = tmp_path / "chars.csv"
    batch.write_text(
        "name,franchise,wiki\n"
        f"Kenshiro,Fist of the North Star,{server.url}\n"
        f"Kenshirō,Fist of the North Star,{server.url}\n"
        f"Raoh,Fist of the North Star,{server.url}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert main(["profile", "--batch", str(batch), "--out", str(out), "--concurrency", "2"]) == 0
    assert (
        "2 profiled, 0 already done, 1 duplicates, 0 filtered, 0 failed" in capsys.readouterr().out
    )
    assert sorted(p.name for p in out.iterdir() if p.is_dir() and p.name[0] != ".") == [
        FOLDER,
        FOLDER.replace("kenshiro", "raoh"),
    ]
    assert main(["profile", "--batch", str(batch), "--out", str(out)]) == 0
    assert "0 profiled, 2 already done" in capsys.readouterr().out


def test_batch_keeps_one_name_of_two_franchises_apart_and_skips_by_the_folder_key(
    world: tuple[LoopbackWebServer, FakeTavily],
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, _ = world
    batch = tmp_path / "chars.csv"
    batch.write_text(
        "name,franchise,wiki\n"
        f"Kenshiro,Fist of the North Star,{server.url}\n"
        f"Kenshiro,Souten no Ken,{server.url}\n"
        # not 0.85 similar to "Kenshiro", but the same folder: a duplicate, never an overwrite
        f"KENSHIRO!!!!,Fist of the North Star,{server.url}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert main(["profile", "--batch", str(batch), "--out", str(out)]) == 0
    assert (
        "2 profiled, 0 already done, 1 duplicates, 0 filtered, 0 failed" in capsys.readouterr().out
    )
    folders = sorted(p.name for p in out.iterdir() if p.is_dir() and p.name[0] != ".")
    assert folders == [FOLDER, "kenshiro--souten-no-ken"]
    franchises = {
        json.loads((out / f / "profile.json").read_text(encoding="utf-8"))["franchise"]
        for f in folders
    }
    assert franchises == {"Fist of the North Star", "Souten no Ken"}
    single = ["profile", "Kenshiro", "--franchise", "Souten no Ken", "--wiki", server.url]
    assert main(["profile", "--batch", str(batch), "--out", str(out)]) == 0
    assert "0 profiled, 2 already done" in capsys.readouterr().out
    assert main([*single, "--out", str(out)]) == 0  # the single run writes the same folder
    assert str(out / "kenshiro--souten-no-ken" / "profile.json") in capsys.readouterr().out


def checkpoint_rows(out: Path) -> tuple[int, int]:
    import sqlite3

    with sqlite3.connect(out / ".checkpoints.sqlite") as db:
        checkpoints = db.execute("select count(*) from checkpoints").fetchone()[0]
        writes = db.execute("select count(*) from writes").fetchone()[0]
    return int(checkpoints), int(writes)


def test_a_finished_run_keeps_only_its_last_checkpoint_and_a_rerun_still_writes_from_it(
    world: tuple[LoopbackWebServer, FakeTavily],
    model: ScriptedChatModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 27: checkpoints were ~100x the profile and kept after success."""
    server, _ = world
    kept, pruned = tmp_path / "kept", tmp_path / "pruned"
    assert profile(server, kept, "--keep-checkpoints") == 0
    assert profile(server, pruned) == 0
    capsys.readouterr()
    calls = len(model.calls)
    assert checkpoint_rows(pruned) == (1, 0) and checkpoint_rows(kept)[0] > 5
    size = (pruned / ".checkpoints.sqlite").stat().st_size
    assert size < (kept / ".checkpoints.sqlite").stat().st_size / 2
    first = (pruned / FOLDER / "profile.json").read_text(encoding="utf-8")
    assert profile(server, pruned) == 0  # rerun: the files again, from the last checkpoint
    assert "already profiled; writing the files from the checkpoint" in capsys.readouterr().err
    assert len(model.calls) == calls
    assert json.loads((pruned / FOLDER / "profile.json").read_text(encoding="utf-8")) == (
        json.loads(first)
    )
