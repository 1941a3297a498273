"""`--server URL`: profile (a name or --batch), bench bookmarks, eval arcane on `langgraph dev`.

Each command runs twice on the same small input, in this process and through a real
`langgraph dev` (one server for the module), with its own cache folder each time: the files
must hold the same records. A rerun with `--server` after deleting the local results reads the
finished threads back: no model call, the same records again. The LLM is the studio world's
scripted model behind the real OpenAI client on loopback; the server gets the client's run
context (models, server URL, paths) and reads only its keys from its own environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_openai import FakeOpenAIChat
from mcp_world import over_http
from profiler_world import fake_web
from server_world import LANGGRAPH, QUIET, server_config, start_server, stop_server
from studio_world import DATA_DIR, STORY, prepare, run_input
from studio_world import scripted_model as studio_model

from personae.cli import main
from personae.loopback import LoopbackWebServer

pytestmark = pytest.mark.slow


@dataclass
class Served:
    url: str
    root: Path
    llm: FakeOpenAIChat
    llm_url: str
    web_url: str


def responders() -> dict[str, Any]:
    """A fresh scripted model (the profiler's counts its follow-up queries: each run starts at
    one, as a model answering the same prompts the same way would)."""
    return {**over_http(studio_model()), "KeyMoveVerdict": _verdict}


def _verdict(messages: list[dict[str, Any]]) -> dict[str, str]:
    """The benchmark judge: a grade that depends on what it was shown."""
    shown = json.dumps(messages)
    return {"reasoning": "compared", "score": "A" if "smiles" in shown else "C"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli is not installed (uv sync installs it with the dev group)")
    root = tmp_path_factory.mktemp("server-runs")
    server_root = root / "server"  # the server's working directory: not where the files are
    server_root.mkdir()
    prepare(root)
    llm = FakeOpenAIChat(responders())
    web, _, _ = fake_web()
    with LoopbackWebServer(llm) as llm_server, LoopbackWebServer(web.route) as web_server:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("OPENAI", "PERSONAE", "TAVILY", "CHROMA"))
        }
        env.update(QUIET, OPENAI_API_KEY="test-key", TAVILY_API_KEY="tvly-test")
        process, url = start_server(server_config(server_root), env, server_root / "server.log")
        try:
            yield Served(url, root, llm, llm_server.url, web_server.url)
        finally:
            stop_server(process)


@pytest.fixture
def client_env(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's settings: the models on the loopback LLM (sent to the server in contexts)."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{served.llm_url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("PERSONAE_MODEL", "openai:fake-strong")
    monkeypatch.setenv("PERSONAE_JUDGE_MODEL", "openai:fake-strong")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    monkeypatch.setenv("TAVILY_BASE_URL", served.web_url)
    monkeypatch.setenv("PERSONAE_DATA_DIR", str(served.root / DATA_DIR))
    monkeypatch.chdir(served.root)


def twice(
    served: Served, monkeypatch: pytest.MonkeyPatch, argv: list[str], out_name: str
) -> tuple[Path, Path, int]:
    """Run ``argv`` locally into ``local-OUT`` and on the server into ``server-OUT``, each with
    a fresh cache; the two output folders and the LLM requests the server run made."""
    outs = []
    requests = 0
    for where in ("local", "server"):
        out = served.root / f"{where}-{out_name}"
        monkeypatch.setenv("PERSONAE_CACHE_DIR", str(served.root / f"cache-{where}-{out_name}"))
        extra = ["--server", served.url] if where == "server" else []
        before = len(served.llm.requests)
        served.llm.responders = responders()
        assert main([*argv, "--out", str(out), *extra]) == 0
        requests = len(served.llm.requests) - before
        outs.append(out)
    return outs[0], outs[1], requests


def jsonl(path: Path, *, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    kept = [{k: v for k, v in row.items() if k not in drop} for row in rows]
    return sorted(kept, key=lambda row: json.dumps(row, sort_keys=True))


JUDGE_COST = ("judge_tokens", "judge_llm_calls", "judge_cache_hits")


def scores(summary: Any) -> Any:
    """``summary`` without the judge's cost figures (cache hits depend on timing, see below)."""
    if isinstance(summary, dict):
        return {k: scores(v) for k, v in summary.items() if k not in JUDGE_COST}
    return summary


def profile_folders(out: Path) -> list[str]:
    """The character folders in ``out`` (not the hidden bookkeeping: ``.locks/``)."""
    return sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))


def rerun_reads_threads_back(
    served: Served, monkeypatch: pytest.MonkeyPatch, argv: list[str], out: Path, name: str
) -> None:
    """Delete ``name`` in ``out`` and rerun on the server (same cache): the finished threads
    are read back, no model is called, the records are the same."""
    cached = ("judge_usage",)  # the client's judge now answers from its cache, as locally
    before_rows = jsonl(out / name, drop=cached)
    (out / name).unlink()
    before = len(served.llm.requests)
    assert main([*argv, "--out", str(out), "--server", served.url]) == 0
    assert len(served.llm.requests) == before
    assert jsonl(out / name, drop=cached) == before_rows


def test_bench_bookmarks_on_the_server_writes_the_local_records(
    served: Served, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["bookmarks", "bench", STORY, "--characters", "Haruhi", "--limit", "2",
            "--method", "vanilla,bookmarks", "--concurrency", "2"]  # fmt: skip
    local, remote, requests = twice(served, monkeypatch, argv, "bench")
    assert requests > 0  # the server run called the model (nothing came from a cache)
    # judge_usage counts verdict-cache hits: two methods predicting the same action share one
    # verdict, and which asks first depends on timing, locally as on the server.
    records = jsonl(remote / "results.jsonl", drop=("judge_usage",))
    assert len(records) == 4 and {r["method"] for r in records} == {"vanilla", "bookmarks"}
    assert records == jsonl(local / "results.jsonl", drop=("judge_usage",))
    summary = json.loads((remote / "summary.json").read_text())
    assert scores(summary) == scores(json.loads((local / "summary.json").read_text()))
    assert (remote / "memory" / "bookmarks").is_dir()  # the bank, written by the server
    rerun_reads_threads_back(served, monkeypatch, argv, remote, "results.jsonl")


def warm_novel_index(served: Served) -> None:
    """One role-play run, so the server process has the novel's Chroma index open: phases
    opening it at once in a fresh process trip a Chroma race (issue 17 §6, fixed apart)."""
    payload = {**run_input("arcane_roleplay", served.web_url), "mode": "vanilla"}
    context = {
        "data_dir": str(served.root / DATA_DIR),
        "cache_dir": "none",
        "openai_base_url": f"{served.llm_url}/v1",
        "model": "openai:fake-strong",
    }
    body = {"assistant_id": "arcane_roleplay", "input": payload, "context": context}
    answer = httpx.post(f"{served.url}/runs/wait", json=body, timeout=120)
    assert answer.status_code == 200 and "response" in answer.json(), answer.text


def test_eval_arcane_on_the_server_writes_the_local_records(
    served: Served, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm_novel_index(served)
    argv = ["arcane", "eval", "the_river", "--modes", "vanilla,arc", "--limit", "2"]
    local, remote, requests = twice(served, monkeypatch, argv, "arcane")
    assert requests > 0
    # usage counts answer-cache hits: both modes answer alike here, so their judge prompts are
    # the same and whichever unit asks second is answered by the cache, locally as on the server
    records = jsonl(remote / "results.jsonl", drop=("usage",))
    assert len(records) == 2 and records == jsonl(local / "results.jsonl", drop=("usage",))
    assert scores(json.loads((remote / "summary.json").read_text())) == scores(
        json.loads((local / "summary.json").read_text())
    )
    rerun_reads_threads_back(served, monkeypatch, argv, remote, "results.jsonl")


def test_profile_batch_on_the_server_writes_the_local_profiles(
    served: Served, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = served.root / "batch.csv"
    batch.write_text(f"name,franchise,wiki\nKenshiro,Fist of the North Star,{served.web_url}\n")
    argv = ["profile", "--batch", str(batch), "--max-rounds", "1", "--concurrency", "2"]
    local, remote, requests = twice(served, monkeypatch, argv, "profiles")
    assert requests > 0
    folders = profile_folders(remote)
    assert folders == profile_folders(local) and len(folders) == 1

    def document(path: Path) -> dict[str, Any]:
        value = json.loads(path.read_text())
        value.pop("structured_output", None)  # chosen where the calls are made
        return dict(value)

    for folder in folders:
        assert document(remote / folder / "profile.json") == document(
            local / folder / "profile.json"
        )
        assert (remote / folder / "profile.md").read_text() == (
            local / folder / "profile.md"
        ).read_text()


def test_profile_one_name_on_the_server_writes_the_local_profile(
    served: Served, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``personae profile NAME --server URL``: no ``--batch`` needed for one character."""
    argv = ["profile", "Kenshiro", "--franchise", "Fist of the North Star"]
    argv += ["--wiki", served.web_url, "--max-rounds", "1"]
    local, remote, requests = twice(served, monkeypatch, argv, "one-profile")
    assert requests > 0  # the server made the run's model calls
    [folder] = profile_folders(remote)
    shown = json.loads((remote / folder / "profile.json").read_text())
    kept = json.loads((local / folder / "profile.json").read_text())
    for document in (shown, kept):
        document.pop("structured_output", None)  # chosen where the calls are made
    assert shown == kept and shown["character"] == "Kenshiro"
    before = len(served.llm.requests)
    argv += ["--out", str(remote), "--server", served.url]
    assert main(argv) == 0  # the finished thread is read back: no model call
    assert len(served.llm.requests) == before


def test_the_runners_write_the_same_files_in_process_and_on_the_server(
    served: Served, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands' --server goes through the library runners: ``evaluate_arcane`` and
    ``profile_character`` called directly, with and without ``server=``, write the same files,
    and a rerun on the server reads the finished threads back (no model call)."""
    import asyncio

    from personae import ProfilerContext, profile_character
    from personae.evals import ArcaneEvalContext, evaluate_arcane

    warm_novel_index(served)

    async def both(out: Path, server: str | None) -> tuple[Any, Any]:
        run = await evaluate_arcane(
            ["the_river"],
            context=ArcaneEvalContext(),
            modes=["vanilla"],
            limit=1,
            out=out / "arcane",
            server=server,
        )
        profile = await profile_character(
            "Kenshiro",
            franchise="Fist of the North Star",
            wiki=served.web_url,
            out=out / "profiles",
            context=ProfilerContext(max_rounds=1),
            server=server,
        )
        return run, profile

    done = {}
    for where in ("local", "server"):
        monkeypatch.setenv("PERSONAE_CACHE_DIR", str(served.root / f"cache-runner-{where}"))
        served.llm.responders = responders()
        server = served.url if where == "server" else None
        done[where] = asyncio.run(both(served.root / f"runner-{where}", server))
    (local_run, local_profile), (run, profile) = done["local"], done["server"]
    assert [p.server for p in run.passes] == [served.url] and local_run.passes[0].server is None
    assert run.passes[0].evaluated == 1 == local_run.passes[0].evaluated
    records = jsonl(run.out / "results.jsonl", drop=("usage",))
    assert len(records) == 1 and records == jsonl(local_run.out / "results.jsonl", drop=("usage",))
    assert scores(run.report.summary) == scores(local_run.report.summary)
    assert run.report.report_md.read_text() == local_run.report.report_md.read_text()

    def document(path: Path) -> dict[str, Any]:
        value = json.loads(path.read_text())
        value.pop("structured_output", None)  # chosen where the calls are made
        return dict(value)

    assert profile.paths.directory.parent == served.root / "runner-server" / "profiles"
    assert document(profile.paths.profile_json) == document(local_profile.paths.profile_json)
    assert profile.paths.profile_md.read_text() == local_profile.paths.profile_md.read_text()
    assert profile.paths.card_json.is_file()  # its creation time differs, nothing else
    assert not profile.resumed
    # rerun on the server after deleting the files: the threads are read back, nothing is asked
    profile.paths.profile_json.unlink()
    (run.out / "results.jsonl").unlink()
    before = len(served.llm.requests)
    again, reread = asyncio.run(both(served.root / "runner-server", served.url))
    assert len(served.llm.requests) == before
    assert reread.resumed and document(reread.paths.profile_json) == document(
        local_profile.paths.profile_json
    )
    assert jsonl(again.out / "results.jsonl", drop=("usage",)) == records


def test_profile_characters_on_the_server_reads_finished_threads_back(
    served: Served, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch runner with ``server=``: one client, a thread per character; a rerun with the
    files gone reads the threads back (no model call) and reports the rows resumed."""
    import asyncio

    from personae import CharacterRow, ProfilerContext, profile_characters

    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(served.root / "cache-batch-runner"))
    served.llm.responders = responders()
    hokuto = "Fist of the North Star"
    rows = [
        CharacterRow("Kenshiro", hokuto, served.web_url),
        CharacterRow("Kenshirō", hokuto, served.web_url),  # ours: one character
    ]
    out = served.root / "batch-runner"

    def run() -> Any:
        return asyncio.run(
            profile_characters(
                rows, out=out, context=ProfilerContext(max_rounds=1), server=served.url
            )
        )

    first = run()
    assert first.summary() == "1 profiled, 0 already done, 1 duplicates, 0 filtered, 0 failed"
    profiled = first.outcomes[0]
    assert profiled.folder is not None and (profiled.folder / "profile.json").is_file()
    assert profiled.llm_calls > 0 and not profiled.resumed
    (profiled.folder / "profile.json").unlink()
    before = len(served.llm.requests)
    again = run()
    assert len(served.llm.requests) == before
    assert [(o.outcome, o.resumed) for o in again.outcomes] == [
        ("profiled", True),
        ("duplicate", False),
    ]


def test_profile_on_the_server_is_one_thread_per_character_and_finds_legacy_threads(
    served: Served, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--server`` threads are keyed by the folder key: ``kenshiro `` after ``Kenshiro`` reads
    the finished thread back (no model call); a thread an earlier version keyed by the name as
    typed is still found."""
    import asyncio

    from personae import ProfilerContext, profile_character
    from personae.server_runs import ServerRuns

    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(served.root / "cache-spellings"))
    hokuto = "Fist of the North Star"

    def profile(out: Path, name: str, franchise: str, wiki: str) -> Any:
        return asyncio.run(
            profile_character(
                name,
                franchise=franchise,
                wiki=wiki,
                out=out,
                context=ProfilerContext(max_rounds=1),
                server=served.url,
            )
        )

    served.llm.responders = responders()
    out = served.root / "spellings"
    before = len(served.llm.requests)
    first = profile(out, "Kenshiro", hokuto, served.web_url)
    assert len(served.llm.requests) > before and not first.resumed
    paid = len(served.llm.requests)
    first.paths.profile_json.unlink()
    again = profile(out, " kenshiro ", hokuto.upper(), f"{served.web_url}/")
    assert len(served.llm.requests) == paid and again.resumed
    assert again.paths == first.paths and again.profile == first.profile

    original = ServerRuns.run

    async def as_typed(self: ServerRuns, *args: Any, **options: Any) -> Any:
        options.pop("unit", None)  # the previous version: the thread keyed by the payload
        return await original(self, *args, **options)

    served.llm.responders = responders()
    legacy_out = served.root / "spellings-legacy"
    with monkeypatch.context() as old:
        old.setattr(ServerRuns, "run", as_typed)
        saved = profile(legacy_out, "Kenshiro", hokuto, served.web_url)
    assert not saved.resumed and len(served.llm.requests) > paid
    paid = len(served.llm.requests)
    saved.paths.profile_json.unlink()
    found = profile(legacy_out, "Kenshiro", hokuto, served.web_url)
    assert len(served.llm.requests) == paid and found.resumed
    assert found.profile == saved.profile
