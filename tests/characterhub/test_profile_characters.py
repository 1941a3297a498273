"""``profile_characters``: the batch runner, on the real graph, a loopback wiki and a scripted LLM.

What ``personae profile --batch`` does, as a library call: the paper's de-duplication and
quality filter (§3.1), the estimate before the first call, the concurrency bound, resuming an
interrupted batch, one-line errors for a bad list, and the typed report the CLI prints.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from profiler_world import profiler_context, scripted_model, serve_fake_web

from personae import CharacterRow, ProfileBatch, profile_characters, read_character_list
from personae.errors import InputError
from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import paths_for
from personae.runners.characterhub_batch import estimate_characters
from personae.testing import ScriptedChatModel, override_models

HOKUTO = "Fist of the North Star"
MODEL = "batch-test"


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
    """One round, wiki only: a character costs a handful of scripted calls."""
    return profiler_context(server, MODEL, max_rounds=1, web_search=False)


def row(name: str, franchise: str | None, wiki: str, source: str | None = None) -> CharacterRow:
    return CharacterRow(name, franchise, wiki, source)


def test_the_papers_rule_and_filter_then_the_estimate_then_the_run(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path
) -> None:
    rows = [
        row("Kenshiro", HOKUTO, server.url, "anilist"),
        row("Kenshirou", "Hokuto no Ken", server.url, "mal"),  # 0.94 similar, an alias: one
        row("Kenshiro", HOKUTO, server.url, "anilist"),  # the same folder: one, whatever rule
        row("Nameless", None, server.url, "mal"),  # the filter: no franchise
        row("Mario", "Super Mario", server.url, "mal"),  # the filter: not in the alias table
        row("Raoh", HOKUTO, server.url, "mal"),
    ]
    lines: list[str] = []
    context = context_for(server)
    report = asyncio.run(
        profile_characters(
            rows,
            out=tmp_path,
            context=context,
            dedup="paper",
            aliases={"Hokuto no Ken": HOKUTO},
            progress=lines.append,
        )
    )
    assert [(o.row.name, o.outcome, o.detail) for o in report.outcomes] == [
        ("Kenshiro", "profiled", ""),
        ("Kenshirou", "duplicate", "Kenshiro"),
        ("Kenshiro", "duplicate", "Kenshiro"),
        ("Nameless", "filtered", "no franchise"),
        ("Mario", "filtered", "franchise 'Super Mario' not in the alias table"),
        ("Raoh", "profiled", ""),
    ]
    assert report.outcomes[2].row is rows[2]  # an equal row is its own outcome, in its place
    assert report.counts == {"profiled": 2, "done": 0, "duplicate": 2, "filtered": 2, "failed": 0}
    assert report.summary() == "2 profiled, 0 already done, 2 duplicates, 2 filtered, 0 failed"
    # Dropped rows are said first, then the estimate of the two left, then the run.
    assert lines[:4] == [
        "skipped 'Kenshirou': duplicate of 'Kenshiro'",
        "skipped 'Kenshiro': duplicate of 'Kenshiro'",
        "skipped 'Nameless': no franchise (the paper's quality filter)",
        "skipped 'Mario': franchise 'Super Mario' not in the alias table (the paper's quality "
        "filter)",
    ]
    expected = estimate_characters(context, 2)
    assert report.estimate == expected and expected.detail.startswith("2 characters: ")
    assert lines[4].startswith(f"estimated: {expected.calls:,} LLM calls")
    assert ": found " in lines[5]  # the run's first line (either character), after the estimate
    # The report's calls and tokens are the runs' own, as each profile.json counts them.
    assert report.llm_calls == len(model.calls) <= expected.calls
    documents = [
        json.loads((o.folder / "profile.json").read_text(encoding="utf-8"))
        for o in report.of("profiled")
        if o.folder is not None
    ]
    assert [d["character"] for d in documents] == ["Kenshiro", "Raoh"]
    usage = [d["usage"] for d in documents]
    assert report.tokens == sum(u["input_tokens"] + u["output_tokens"] for u in usage) > 0
    assert report.notices == []


def test_a_rerun_skips_finished_characters_and_ours_keeps_relatives_apart(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path
) -> None:
    rows = [row("Kenshiro", HOKUTO, server.url), row("Raoh", HOKUTO, server.url)]
    first = asyncio.run(profile_characters(rows, out=tmp_path, context=context_for(server)))
    assert first.summary() == "2 profiled, 0 already done, 0 duplicates, 0 filtered, 0 failed"
    calls = len(model.calls)
    again = asyncio.run(profile_characters(rows, out=tmp_path, context=context_for(server)))
    assert again.summary() == "0 profiled, 2 already done, 0 duplicates, 0 filtered, 0 failed"
    assert len(model.calls) == calls and again.llm_calls == 0  # nothing paid twice
    # The web page's jobs run a profiled character through its checkpoint: read back, no call.
    through = asyncio.run(
        profile_characters(rows, out=tmp_path, context=context_for(server), skip_done=False)
    )
    assert [(o.outcome, o.resumed) for o in through.outcomes] == [("profiled", True)] * 2
    assert len(model.calls) == calls
    assert [o.folder for o in again.outcomes] == [
        paths_for(tmp_path, r.name, r.franchise).directory for r in rows
    ]


def test_a_failed_character_is_reported_and_the_others_go_on(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path
) -> None:
    rows = [row("Zoro", None, server.url), row("Raoh", HOKUTO, server.url)]  # Zoro: ambiguous
    report = asyncio.run(profile_characters(rows, out=tmp_path, context=context_for(server)))
    zoro, raoh = report.outcomes
    assert zoro.outcome == "failed" and "ambiguous" in zoro.detail and "Roronoa Zoro" in zoro.detail
    assert raoh.outcome == "profiled" and raoh.folder is not None
    assert report.as_json()["counts"]["failed"] == 1


@pytest.mark.parametrize("concurrency", [1, 2])
def test_no_more_characters_run_at_once_than_the_concurrency(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path, concurrency: int
) -> None:
    """Each character is in flight from its first progress line to its last; with a model that
    answers after a pause, the slots fill up: exactly ``concurrency`` overlap, never more."""
    model.latency = 0.02
    names = ("Kenshiro", "Raoh", "Zoro (Hokuto)")
    rows = [row(name, HOKUTO, server.url) for name in names]
    lines: list[str] = []
    report = asyncio.run(
        profile_characters(
            rows,
            out=tmp_path,
            context=context_for(server),
            concurrency=concurrency,
            progress=lines.append,
        )
    )
    assert report.counts["profiled"] == 3
    spans = {}
    for name in names:
        mine = [i for i, line in enumerate(lines) if line.startswith(f"{name}: ")]
        spans[name] = (mine[0], mine[-1])
    in_flight = max(
        sum(first <= i <= last for first, last in spans.values()) for i in range(len(lines))
    )
    assert in_flight == concurrency


def test_an_interrupted_batch_resumes_from_the_checkpoint(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path
) -> None:
    """Cancelled (what Ctrl-C does to the run) once Raoh's round is checkpointed; the rerun
    skips Kenshiro and finishes Raoh without asking for his plan again."""
    rows = [row("Kenshiro", HOKUTO, server.url), row("Raoh", HOKUTO, server.url)]

    async def interrupted() -> None:
        task = asyncio.current_task()
        assert task is not None

        def progress(line: str) -> None:
            if line.startswith("Raoh: round 1"):
                task.cancel()

        await profile_characters(
            rows, out=tmp_path, context=context_for(server), concurrency=1, progress=progress
        )

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(interrupted())
    assert paths_for(tmp_path, "Kenshiro", HOKUTO).profile_json.exists()
    assert not paths_for(tmp_path, "Raoh", HOKUTO).profile_json.exists()
    plans = len(model.calls_for("QueryPlan"))
    lines: list[str] = []
    report = asyncio.run(
        profile_characters(rows, out=tmp_path, context=context_for(server), progress=lines.append)
    )
    assert [(o.outcome, o.resumed) for o in report.outcomes] == [
        ("done", False),
        ("profiled", True),
    ]
    assert "Raoh: resuming the interrupted run" in lines
    assert len(model.calls_for("QueryPlan")) == plans  # Raoh's plan came back from the checkpoint
    assert paths_for(tmp_path, "Raoh", HOKUTO).profile_json.exists()


def test_a_bad_list_is_one_line_before_any_call(tmp_path: Path) -> None:
    def fails(rows: list[CharacterRow], **options: int) -> str:
        with pytest.raises(InputError) as caught:
            asyncio.run(profile_characters(rows, out=tmp_path, **options))  # type: ignore[arg-type]
        return str(caught.value)

    assert fails([]) == "the character list is empty; pass at least one CharacterRow"
    assert fails([CharacterRow("Raoh"), CharacterRow("  ")]).startswith("row 2: the name is empty")
    assert "row 1: the wiki URL" in fails([CharacterRow("Raoh", wiki="hokuto.fandom.com")])
    assert fails([CharacterRow("Raoh")], concurrency=0) == (
        "concurrency is 0; it must be at least 1; pass 1 or more"
    )
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("who\nKenshiro\n", "has no 'name' column"),
        ("name,franchise\nKenshiro,Hokuto\n,Hokuto\n", "chars.csv:3: the name is empty"),
        ("name,franchise,wiki\nKenshiro,Hokuto,ftp://x\n", "chars.csv:2: the wiki URL"),
        ("name,franchise\n", "lists no characters"),
    ],
)
def test_a_bad_csv_is_one_line_naming_the_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "chars.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_character_list(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(InputError, match="does not exist"):
        read_character_list(tmp_path / "none.csv")


def test_the_report_is_plain_json_for_a_page(
    server: LoopbackWebServer, model: ScriptedChatModel, tmp_path: Path
) -> None:
    rows = [row("Raoh", HOKUTO, server.url), row("Raoh", HOKUTO, server.url)]
    report = asyncio.run(profile_characters(rows, out=tmp_path, context=context_for(server)))
    assert isinstance(report, ProfileBatch)
    shown = json.loads(json.dumps(report.as_json()))
    assert shown["summary"] == report.summary()
    assert shown["estimate"]["calls"] == report.estimate.calls
    assert [o["outcome"] for o in shown["outcomes"]] == ["profiled", "duplicate"]
    assert shown["outcomes"][0]["folder"] == str(tmp_path / "raoh--fist-of-the-north-star")
    assert shown["outcomes"][0]["llm_calls"] == len(model.calls) == shown["llm_calls"]


def test_the_documented_batch_example_runs(
    server: LoopbackWebServer,
    model: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/papers/characterhub.md's example, as written, in a folder holding its CSV."""
    page = Path(__file__).resolve().parents[2] / "docs" / "papers" / "characterhub.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    marker = lines.index(
        "<!-- run: tests/characterhub/test_profile_characters.py::"
        "test_the_documented_batch_example_runs -->"
    )
    end = lines.index("```", marker + 2)
    code = "\n".join(lines[marker + 2 : end])
    monkeypatch.setenv("PERSONAE_MODEL", f"openai:{MODEL}")
    monkeypatch.chdir(tmp_path)
    Path("chars.csv").write_text(
        "name,franchise,wiki,source\n"
        f"Kenshiro,{HOKUTO},{server.url},anilist\n"
        f"Kenshirou,{HOKUTO},{server.url},mal\n"
        f"Nameless,,{server.url},mal\n"
        f"Raoh,{HOKUTO},{server.url},mal\n",
        encoding="utf-8",
    )
    exec(compile(code, str(page), "exec"), {})  # noqa: S102
    out = capsys.readouterr().out.splitlines()
    assert "2 profiled, 0 already done, 1 duplicates, 1 filtered, 0 failed" in out
    assert out[0] == "skipped 'Kenshirou': duplicate of 'Kenshiro'"
    assert any(line.startswith("estimated: ") for line in out)
    assert paths_for(Path("runs/paper"), "Raoh", HOKUTO).profile_json.is_file()
