"""The main jobs against a real inference engine (llama.cpp serving SmolLM2-135M-Instruct).

``PERSONAE_REALMODEL_URL`` (set by ``lane.py``) names the server; without it, or without the
``realmodel`` extra installed, every test here skips with the reason. A URL that is set but
does not answer fails: whoever set it expected a server.

A small model on two CPU cores answers badly, slowly and differently on every run, and
``lane.py`` runs every test twice, on two server seeds (the second one sampling, so its answers
differ). So each test asserts what holds for any answer of any model, never that a weak model
happened to answer well: the job ends with exit 0 and its output, and the output keeps the
invariants the code enforces (ids it assigned, counts, bounds, the files it writes). Where a job
may legitimately end with nothing usable, the documented degraded outcome (exit 3, one line
naming what failed) is the other accepted ending. Inputs are tiny so the lane stays within its time budget (README
"Real-model lane"). Every command runs as a user runs it: the CLI, configured by the
environment (``real_env``), the web faked on loopback (the project's fixture wiki).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from arcane_world import prepared_novel
from bookmarks_world import write_storyline
from profile_eval_world import FIXTURE, write_profiles
from profiler_world import fake_web

from personae import llm_endpoint
from personae.cli import main
from personae.evals.amadeus.personality_data import data_dir
from personae.graphs.bookmarks.resources import forget_resources
from personae.llm_endpoint import chosen_methods
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import paths_for

pytestmark = pytest.mark.realmodel


@dataclass(frozen=True)
class RealModel:
    """The real server: its base URL, the model spec to use, its context window."""

    url: str
    spec: str
    window: int


SKIP_HINT = (
    "uv sync --extra realmodel, then uv run --extra realmodel python tests/realmodel/lane.py "
    "(README 'Real-model lane'; .ci/run runs it)"
)


@pytest.fixture(scope="session")
def real_model() -> RealModel:
    url = os.environ.get("PERSONAE_REALMODEL_URL", "").strip()
    if importlib.util.find_spec("llama_cpp") is None and not url:
        pytest.skip(f"the realmodel extra (llama-cpp-python) is not installed: {SKIP_HINT}")
    if not url:
        pytest.skip(f"no real-model server (PERSONAE_REALMODEL_URL is unset): {SKIP_HINT}")
    try:
        httpx.get(f"{url}/models", timeout=10).raise_for_status()
    except httpx.HTTPError as error:
        pytest.fail(f"PERSONAE_REALMODEL_URL={url} does not answer /models: {error}")
    spec = os.environ.get("PERSONAE_REALMODEL_MODEL", "openai:smollm2-135m-instruct")
    window = int(os.environ.get("PERSONAE_REALMODEL_CONTEXT", "2048"))
    return RealModel(url=url, spec=spec, window=window)


@pytest.fixture
def real_env(real_model: RealModel, monkeypatch: pytest.MonkeyPatch) -> RealModel:
    """Every role on the real server, as a user would configure it (environment only)."""
    monkeypatch.setenv("OPENAI_BASE_URL", real_model.url)
    monkeypatch.setenv("PERSONAE_MODEL", real_model.spec)
    monkeypatch.setenv("PERSONAE_FAST_MODEL", real_model.spec)
    monkeypatch.setenv("PERSONAE_JUDGE_MODEL", real_model.spec)
    # llama-cpp-python's server states no window: the user sets the one it was started with.
    monkeypatch.setenv("PERSONAE_CONTEXT_WINDOW", str(real_model.window))
    monkeypatch.setenv("PERSONAE_LLM_RETRY_SECONDS", "30")
    temperature = os.environ.get("PERSONAE_REALMODEL_TEMPERATURE", "").strip()
    if temperature:  # lane.py's seeded pass samples (at 0, every seed answers the same)
        monkeypatch.setenv("PERSONAE_TEMPERATURE", temperature)
    llm_endpoint.forget_endpoints()  # each test probes the method as a fresh process would
    return real_model


TWO_CHAPTERS = (
    "Ada walked with Bram along the river. She told him she wanted to leave the village for "
    "the city, where nobody would know her name. Bram argued that she should stay, and the day "
    "ended in a long silence that neither of them would break.",
    "Later Ada wrote in her diary that she had changed her mind about Bram and the village. "
    "She stayed. In the spring they rebuilt the old mill together, and Ada found that she "
    "liked being trusted more than she had liked being free.",
)
"""Two short chapters (each above novel import's 200-character minimum): few prompt tokens."""

PERSONA = """# Iago

## Profile

I am Othello's ensign. I hate the Moor and I hide it.

## Deeds

### Act I

I set Roderigo on Brabantio.
"""


@pytest.fixture
def wiki() -> Iterator[LoopbackWebServer]:
    """The project's fixture wiki (Hokuto) on a loopback server."""
    web, _, _ = fake_web(tavily=False)
    with LoopbackWebServer(web.route) as server:
        yield server


def ok(code: int, capsys: pytest.CaptureFixture[str]) -> str:
    """stdout of a command that must have ended with exit 0 (its stderr in the failure)."""
    captured = capsys.readouterr()
    assert code == 0, f"exit {code}: {captured.err.strip()}"
    return captured.out


def ok_or_nothing_usable(code: int, capsys: pytest.CaptureFixture[str]) -> str | None:
    """stdout of a run that succeeded; ``None`` for the documented degraded ending.

    Exit 3 is accepted only as the one-line "nothing usable left" error with no traceback:
    every answer degraded, which a weak model may cause and the code must report so.
    """
    captured = capsys.readouterr()
    if code == 0:
        return captured.out
    error = captured.err.strip().splitlines()[-1:] or [""]
    assert code == 3 and "nothing usable left" in error[0], f"exit {code}: {captured.err}"
    assert "Traceback" not in captured.err
    return None


def test_profile_on_the_fixture_wiki(
    real_env: RealModel,
    wiki: LoopbackWebServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The found page is evidence: whatever the model's queries find, the page's sections are
    the run's sources; the run ends checked (exit 0) or with its unchecked draft kept."""
    argv = ["profile", "Kenshiro", "--franchise", "Fist of the North Star", "--no-web"]
    code = main([*argv, "--wiki", wiki.url, "--out", str(tmp_path), "--max-rounds", "1"])
    paths = paths_for(tmp_path, "Kenshiro", "Fist of the North Star")
    out = ok_or_nothing_usable(code, capsys)
    if out is None:  # nothing checked survived: the draft is kept, marked unchecked
        assert not paths.profile_json.exists()
        document = json.loads(paths.draft_json.read_text(encoding="utf-8"))
        assert document["checked"] is False
    else:
        assert str(paths.profile_json) in out
        document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
        assert document["profile"].strip()
    assert document["character"] == "Kenshiro" and document["usage"]["llm_calls"] >= 1
    page = f"{wiki.url}/wiki/Kenshiro"
    urls = [source["url"] for source in document["sources"]]
    assert page in urls, urls  # read though no query may have found it
    assert [s["id"] for s in document["sources"]] == [f"S{n}" for n in range(1, len(urls) + 1)]
    assert chosen_methods() == {f"{real_env.spec.split(':')[1]}@{real_env.url}": "function_calling"}


def test_one_act_step(
    real_env: RealModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl", size=10)
    argv = ["bookmarks", "act", str(story), "--character", "Haruhi", "--at", "8", "--json"]
    code = main([*argv, "--memory", str(tmp_path / "mem")])
    forget_resources()
    result = json.loads(ok(code, capsys))
    assert isinstance(result["action"], str) and result["action"].strip()
    assert result["character"] == "Haruhi" and result["position"] == 8
    stats = result["stats"]
    # Never past the target: each bookmark synced this step reads at most the 8 actions before
    # it (``actions_read`` sums the syncs), whatever the model asked.
    synced = stats["new"] + stats["derive"] + stats["reuse"]
    assert stats["llm_calls"] >= 1 and stats["actions_read"] <= 8 * synced
    for bookmark in result["bookmarks"]:  # grounding is what the bank holds, synced <= target
        assert bookmark["position"] <= 8 and bookmark["id"]


def test_persona_index_and_one_chat_question(
    real_env: RealModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    persona = tmp_path / "iago.md"
    persona.write_text(PERSONA, encoding="utf-8")
    memory = ["--memory", str(tmp_path / "mem")]
    code = main(["amadeus", "index", str(persona), "--character", "Iago", "--json", *memory])
    stats = json.loads(ok(code, capsys))
    assert stats["chunks"] >= 1
    code = main(["chat", "--character", "Iago", "--ask", "Who are you?", "--json", *memory])
    turn = json.loads(ok(code, capsys))
    assert turn["character"] == "Iago" and isinstance(turn["response"], str)
    assert turn["response"].strip()


def test_arc_build_on_a_two_chapter_novel(
    real_env: RealModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    novel = tmp_path / "the_river.txt"
    chapters = [f"Chapter {n}.\n\n{text}\n" for n, text in enumerate(TWO_CHAPTERS, 1)]
    novel.write_text("THE RIVER\n\n" + "\n".join(chapters), encoding="utf-8")
    data = ["--data", str(tmp_path / "data")]
    ok(main(["arcane", "import", str(novel), "--title", "The River", *data]), capsys)
    code = main(["arcane", "build-arcs", "the_river", "--character", "Ada", "--yes", *data])
    out = ok_or_nothing_usable(code, capsys)
    if out is None:  # the reconciliation never answered validly: nothing written
        assert not (tmp_path / "data/novels/the_river/arcs.jsonl").exists()
        return
    assert "Ada:" in out
    detail = json.loads((tmp_path / "data/novels/the_river/arcs/ada.json").read_text())
    kept = detail["arcs"]
    assert len(set(kept)) == len(kept)
    # the code's ids and types: whatever the model wrote, an axis is typed by its list
    for axis in [*detail["reconciled"]["intrapersonal_axes"]]:
        assert axis["axis_id"].startswith("final_intra_") and axis["axis_type"] == "intrapersonal"
    for axis in [*detail["reconciled"]["relational_axes"]]:
        assert axis["axis_id"].startswith("final_rel_") and axis["axis_type"] == "relational"
    for axis in [
        *detail["reconciled"]["intrapersonal_axes"],
        *detail["reconciled"]["relational_axes"],
    ]:
        for phase in axis["trajectory"]:  # ranges inside the novel's two chapters, in order
            start, end = phase["chapter_range"]
            assert 1 <= start <= end <= 2
    arcs = [
        json.loads(line)
        for line in (tmp_path / "data/novels/the_river/arcs.jsonl").read_text().splitlines()
    ]
    assert sorted(a["axis_id"] for a in arcs) == sorted(kept)


def test_eval_arcane_on_one_unit(
    real_env: RealModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_novel(tmp_path)  # one arc, one probe (three phases), summaries, chunk index
    out = tmp_path / "run"
    argv = ["arcane", "eval", "the_river", "--data", str(tmp_path), "--out", str(out)]
    ok(main([*argv, "--modes", "vanilla", "--limit", "1", "--concurrency", "1"]), capsys)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["mode"] == "vanilla"
    assert isinstance(json.loads((out / "summary.json").read_text()), dict)


def test_eval_personality_on_two_items(
    real_env: RealModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    persona = tmp_path / "hermione.md"
    persona.write_text("# Hermione\n\n## Profile\n\nI am Hermione Granger. I study hard.\n")
    argv = ["amadeus", "eval-personality", "--questionnaire", str(two_item_mbti(tmp_path))]
    argv += ["--character", "Hermione", "--persona", f"Hermione={persona}"]
    argv += ["--out", str(tmp_path / "out"), "--memory", str(tmp_path / "mem")]
    ok(main(argv), capsys)
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert [row["character"] for row in summary["characters"]] == ["Hermione-en"]
    rows = [json.loads(line) for line in (tmp_path / "out/results.jsonl").read_text().splitlines()]
    ratings = [r for r in rows if r["kind"] != "interview"]
    assert ratings  # each item rated on the questionnaire's own scale, whatever was answered


def two_item_mbti(tmp_path: Path) -> Path:
    """The shipped MBTI questionnaire cut to one item in each of two dimensions."""
    questionnaire = json.loads((data_dir() / "16Personalities.json").read_text(encoding="utf-8"))
    kept = questionnaire["categories"][:2]
    for category in kept:
        category["cat_questions"] = category["cat_questions"][:1]
    ids = {str(q) for category in kept for q in category["cat_questions"]}
    questionnaire["categories"] = kept
    questionnaire["questions"] = {k: v for k, v in questionnaire["questions"].items() if k in ids}
    path = tmp_path / "16Personalities.json"
    path.write_text(json.dumps(questionnaire), encoding="utf-8")
    return path


def test_eval_profile_on_the_fixture_reference(
    real_env: RealModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Table 9 extraction from a small saved page, Table 10 judgments of one profile."""
    _, excluded = write_profiles(tmp_path)
    report = tmp_path / "report.json"
    argv = [
        "characterhub",
        "eval",
        str(excluded),
        "--reference",
        str(FIXTURE),
        "--out",
        str(report),
    ]
    argv += ["--no-density", "--judge-batch", "8", "--concurrency", "1", "--max-failures", "100%"]
    if ok_or_nothing_usable(main(argv), capsys) is None:  # every point failed its evidence quote
        return
    document = json.loads(report.read_text(encoding="utf-8"))
    [character] = document["characters"]
    assert character["character"] == "Toki"
    for text in character["texts"]:
        for key, value in text.items():
            if isinstance(value, float) and key.endswith(("accuracy", "coverage", "rate")):
                assert 0.0 <= value <= 1.0, (key, value)
    assert document["usage"]["llm_calls"] >= 2  # an extraction and a judgment at least


def test_bench_bookmarks_on_one_instance(
    real_env: RealModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl", size=10)
    out = tmp_path / "bench"
    argv = ["bookmarks", "bench", str(story), "--characters", "Haruhi", "--limit", "1"]
    code = main([*argv, "--out", str(out), "--max-failures", "100%"])
    forget_resources()
    printed = ok(code, capsys)
    assert str(out / "results.jsonl") in printed
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    failures = out / "failures.jsonl"
    failed = failures.read_text().splitlines() if failures.exists() else []
    assert len(rows) + len(failed) == 1  # the one instance: scored, or recorded as failed
    for row in rows:
        assert row["method"] == "bookmarks" and row["character"] == "Haruhi"
        assert row["judge_usage"]["llm_calls"] >= 1
