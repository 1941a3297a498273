from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bookmarks_bench_world as world
import pytest
from bookmarks_bench_world import scripted_model, write_storyline

from personae.errors import ConfigurationError, InputError, RemoteError
from personae.evals.bookmarks.bench import (
    METHODS,
    BenchConfig,
    BenchContext,
    MethodSpec,
    read_results,
    result_key,
    run_bench,
    run_bench_config,
)
from personae.progress import CountedLine
from personae.testing import ScriptedChatModel, override_models, prompt_text


@pytest.fixture(autouse=True)
def _stub_method(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(METHODS, "stub", MethodSpec("bookmarks_bench_world", "StubContext"))
    world.CALLS.clear()
    world.READS.clear()
    world.ACTIVE.update(now=0, max=0, goal=0)
    yield


def _config(tmp_path: Path, scripted: ScriptedChatModel, **changes: Any) -> BenchConfig:
    override_models(specs={"openai:bench-test": scripted})
    options: dict[str, Any] = {
        "storylines": (str(write_storyline(tmp_path / "tiny.jsonl")),),
        "methods": ("stub",),
        "out_dir": tmp_path / "out",
        "model": "openai:bench-test",
        "fast_model": "openai:bench-test",
        "judge_model": "openai:bench-test",
        "judge_cache_name": "judge-v1",
        "concurrency": 2,
    }
    options.update(changes)
    return BenchConfig(**options)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_each_character_runs_in_story_order_and_is_judged(tmp_path: Path) -> None:
    """Through the public shape: storylines positional, the rest keywords, settings in context."""
    config = _config(tmp_path, scripted_model())
    settings = BenchContext(
        model="openai:bench-test",
        fast_model="openai:bench-test",
        judge_model="openai:bench-test",
        judge_cache_name="judge-v1",
        concurrency=2,
    )
    outcome = await run_bench(
        config.storylines, methods=("stub",), out=tmp_path / "out", context=settings
    )
    assert (outcome.ran, outcome.skipped) == (14, 0)
    for name in ("Alice", "Bob"):
        mine = [p for c, p in world.CALLS if c == name]
        assert mine == sorted(mine) and len(mine) == 7
    assert all(stop <= target for _, stop, target in world.READS)
    records = _lines(tmp_path / "out/results.jsonl")
    first = next(r for r in records if r["character"] == "Alice")
    assert first["position"] == 21 and first["truth"] == world.true_action(21)
    assert first["prediction"] == f"Alice {world.WRONG}" and first["score"] == 0
    assert first["label"] == "no_match" and first["judge_model"] == "judge-v1"
    assert first["stats"]["actions_read"] == 21 and first["judge_usage"]["llm_calls"] == 1
    hit = next(r for r in records if r["position"] == 24)
    assert hit["prediction"] == world.true_action(24) and hit["score"] == 100


async def test_summary_fields(tmp_path: Path) -> None:
    await run_bench_config(_config(tmp_path, scripted_model()))
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["judge"] == "exact" and summary["complete"] is True
    assert summary["instances"] == 14
    stub = summary["artifacts"]["tiny"]["stub"]
    assert stub["n"] == 14 and stub["score"] == pytest.approx(600 / 14)
    alice = stub["characters"]["Alice"]
    assert alice["n"] == 7 and alice["score"] == pytest.approx(300 / 7)
    # Alice: reads 21 then 3 per step; from scratch 21 + 24 + ... + 39
    assert alice["actions_read"] == 21 + 6 * 3
    assert alice["actions_from_scratch"] == sum(range(21, 40, 3))
    assert alice["saved"] == pytest.approx(1 - 39 / 210)
    # questions per step: new 1, reuse 1 after the first, derive 1 on even targets after it
    assert (alice["reuse"], alice["derive"], alice["new"]) == (6, 3, 7)
    assert alice["hit_rate"] == pytest.approx(9 / 16)
    for key in ("llm_calls", "input_tokens", "output_tokens", "tokens", "judge_llm_calls"):
        assert alice[key] > 0
    assert summary["methods"]["stub"]["average_score"] == pytest.approx(600 / 14)


async def test_resume_after_a_crash_runs_only_the_rest(tmp_path: Path) -> None:
    with pytest.raises(RemoteError, match="the LLM server went away"):
        await run_bench_config(_config(tmp_path, scripted_model(fail_after=5), concurrency=1))
    results = tmp_path / "out/results.jsonl"
    assert len(_lines(results)) == 5
    partial = json.loads((tmp_path / "out/summary.json").read_text())
    assert partial["complete"] is False and partial["instances"] == 5
    first_calls = list(world.CALLS)

    outcome = await run_bench_config(_config(tmp_path, scripted_model(), concurrency=1))
    assert (outcome.ran, outcome.skipped) == (9, 5)
    rerun = world.CALLS[len(first_calls) :]
    done = {(r["character"], r["position"]) for r in _lines(results)[:5]}
    assert not done & set(rerun) and len(rerun) == 9
    keys = [result_key(r) for r in _lines(results)]
    assert len(keys) == len(set(keys)) == 14
    assert json.loads((tmp_path / "out/summary.json").read_text())["complete"] is True

    again = await run_bench_config(_config(tmp_path, scripted_model()))
    assert (again.ran, again.skipped) == (0, 14) and len(_lines(results)) == 14


async def test_a_truncated_last_line_is_trimmed_and_its_instance_reruns(tmp_path: Path) -> None:
    await run_bench_config(_config(tmp_path, scripted_model(), limit=2))
    results = tmp_path / "out/results.jsonl"
    text = results.read_text()
    last = text.splitlines()[-1]
    results.write_text(text[: len(text) - len(last) // 2 - 1])  # a crash mid-write

    records, notes = read_results(results)
    assert len(records) == 3
    assert notes and "trimmed a truncated last line" in notes[0]
    assert results.read_text().endswith("}\n")

    outcome = await run_bench_config(_config(tmp_path, scripted_model(), limit=2))
    assert outcome.ran == 1
    assert [result_key(r) for r in _lines(results)][-1] == result_key(json.loads(last))


async def test_a_garbled_middle_line_is_skipped_and_reported(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    good = {"artifact": "a", "method": "m", "character": "c", "position": 1, "judge": "exact"}
    results.write_text(json.dumps(good) + "\nnot json\n" + json.dumps(good) + "\n")
    records, notes = read_results(results)
    assert records == [good] and notes == [f"{results}:2 is not a valid result line; ignored it"]


async def test_another_judge_rejudges_without_rerunning_the_method(tmp_path: Path) -> None:
    await run_bench_config(_config(tmp_path, scripted_model(), limit=3))
    calls = len(world.CALLS)
    model = scripted_model()
    outcome = await run_bench_config(_config(tmp_path, model, limit=3, judge="nli"))
    assert outcome.ran == outcome.rejudged == 6 and len(world.CALLS) == calls
    assert model.calls_for("NextAction") == [] and len(model.calls_for("NLIVerdict")) == 6
    nli = [r for r in _lines(tmp_path / "out/results.jsonl") if r["judge"] == "nli"]
    assert all(r["reused_prediction"] for r in nli)
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    # Alice 21, 24, 27: wrong (neutral 50), right (100), wrong (50)
    assert summary["judge"] == "nli"
    assert summary["artifacts"]["tiny"]["stub"]["characters"]["Alice"]["score"] == 200 / 3


async def test_real_vanilla_graph(tmp_path: Path) -> None:
    outcome = await run_bench_config(
        _config(tmp_path, scripted_model(), methods=("vanilla",), limit=2)
    )
    assert outcome.ran == 4
    vanilla = outcome.summary["artifacts"]["tiny"]["vanilla"]
    assert vanilla["llm_calls"] == 4 and vanilla["hit_rate"] is None and vanilla["saved"] is None
    assert vanilla["score"] == 50  # Alice 21 wrong, 24 right; Bob 19 wrong, 22 right


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"methods": ("magic",)}, InputError, "unknown method 'magic'; use one of: vanilla"),
        ({"characters": ("Zed",)}, InputError, "unknown character 'Zed' in tiny"),
        ({"storylines": ("missing.jsonl",)}, InputError, "missing.jsonl does not exist"),
        ({"judge": "bleu"}, InputError, "unknown judge 'bleu'"),
        ({"concurrency": 0}, InputError, "--concurrency must be at least 1"),
    ],
)
async def test_bad_input_writes_nothing(
    tmp_path: Path, changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        await run_bench_config(_config(tmp_path, scripted_model(), **changes))
    assert not (tmp_path / "out").exists() and world.CALLS == []


async def test_malformed_storyline_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"ch1": [{"action": "x", "character": "A"}')
    with pytest.raises(InputError, match=r"bad.json is not valid JSON"):
        await run_bench_config(_config(tmp_path, scripted_model(), storylines=(str(bad),)))
    assert not (tmp_path / "out").exists()


async def test_a_method_that_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(METHODS, "future", MethodSpec("personae.graphs.not_landed", "X"))
    with pytest.raises(ConfigurationError, match="method 'future' is not available"):
        await run_bench_config(_config(tmp_path, scripted_model(), methods=("future",)))
    assert not (tmp_path / "out").exists()


@pytest.mark.endtoend
@pytest.mark.parametrize("concurrency", [1, 2, 3])
async def test_artifacts_run_in_parallel_each_in_one_global_story_order(
    tmp_path: Path, concurrency: int
) -> None:
    stories = []
    for n in range(4):  # four artifacts, two characters each: only artifacts run in parallel
        rows = [
            {"action": f"A{n}B{n} acts {i}", "character": f"{'AB'[i % 2]}{n}"} for i in range(16)
        ]
        stories.append(str(write_storyline(tmp_path / f"s{n}.jsonl", rows)))
    model = scripted_model()
    world.ACTIVE["goal"] = concurrency  # each run waits until that many run at once
    config = _config(tmp_path, model, storylines=tuple(stories), concurrency=concurrency)
    outcome = await run_bench_config(config)
    assert outcome.ran == 4 * 2 * 4
    assert world.ACTIVE["max"] == concurrency
    for n in range(4):  # one artifact: both characters' targets interleaved in story order
        mine = [p for c, p in world.CALLS if c.endswith(str(n))]
        assert mine == [8, 9, 10, 11, 12, 13, 14, 15]


async def test_a_multi_speaker_line_is_an_instance_for_each_major(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [{"action": f"A acts {i}", "character": "A"} for i in range(4)]
    rows += [{"action": "A and B sing", "characters": ["B", "A"]}]
    rows += [{"action": f"B acts {i}", "character": "B"} for i in range(4)]
    story = write_storyline(tmp_path / "duet.jsonl", rows, majors=["A", "B"])
    outcome = await run_bench_config(_config(tmp_path, scripted_model(), storylines=(str(story),)))
    order = [(c, p) for c, p in world.CALLS]
    # A's second half: 2, 3, 4 (the duet); B's: 6, 7, 8; the duet is in B's history half, but
    # B is a major in it, so it is B's instance too (the released runner; Roselia: 439, not
    # 438), in the line's own speaker order.
    assert order == [("A", 2), ("A", 3), ("B", 4), ("A", 4), ("B", 6), ("B", 7), ("B", 8)]
    assert outcome.ran == 7


async def test_a_storyline_without_a_character_list_is_an_error_naming_the_fix(
    tmp_path: Path,
) -> None:
    story = write_storyline(tmp_path / "unlisted.jsonl", majors=[])
    with pytest.raises(InputError, match=r"'unlisted' has no major-character list") as error:
        await run_bench_config(_config(tmp_path, scripted_model(), storylines=(str(story),)))
    assert "all_characters.json beside the storyline file, or pass --characters" in str(error.value)
    assert not (tmp_path / "out").exists()
    chosen = _config(tmp_path, scripted_model(), storylines=(str(story),), characters=("Bob",))
    assert (await run_bench_config(chosen)).ran == 7


class _Notes:
    """A progress keeping its lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)


async def test_progress_and_a_notice_when_the_model_changed(tmp_path: Path) -> None:
    first = _Notes()
    await run_bench_config(_config(tmp_path, scripted_model(), limit=1), progress=first)
    estimate, *events = first.lines
    assert estimate.startswith("estimated: 4 LLM calls, ~")  # 2 instances and their judge calls
    assert "model openai:bench-test" in estimate and estimate.endswith("judge judge-v1")
    assert events[0] == "bench: 2 instances to run"
    assert isinstance(events[0], CountedLine) and (events[0].done, events[0].total) == (0, 2)
    finished = [line for line in events if isinstance(line, CountedLine) and line.done]
    assert sorted(line.label for line in finished) == ["stub tiny Alice", "stub tiny Bob"]
    assert [(line.done, line.total) for line in finished] == [(1, 2), (2, 2)]
    assert finished[0].startswith(f"bench 1/2: {finished[0].label} done (0.")
    second = _Notes()
    override_models(specs={"openai:other": scripted_model()})
    other = _config(tmp_path, scripted_model(), limit=1, model="openai:other")
    outcome = await run_bench_config(other, progress=second)
    assert outcome.ran == 0
    assert "already has results from model openai:bench-test" in second.lines[0]
    assert "use another --out to compare models" in second.lines[0]


async def test_two_files_with_one_storyline_name(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    twin = write_storyline(tmp_path / "b/tiny.jsonl")
    config = _config(tmp_path, scripted_model())
    with pytest.raises(InputError, match="two storyline files are both named 'tiny'"):
        await run_bench_config(
            _config(tmp_path, scripted_model(), storylines=(*config.storylines, str(twin)))
        )
    assert not (tmp_path / "out").exists()


async def test_a_bandori_artifact_acts_and_is_judged_as_utterances(tmp_path: Path) -> None:
    rows = [{"action": f"{'AB'[i % 2]}: line {i}", "character": "AB"[i % 2]} for i in range(8)]
    story = write_storyline(tmp_path / "band.jsonl", rows)
    (tmp_path / "band2members.json").write_text(json.dumps({"band": ["A", "B"]}))

    def actor(messages: list[Any]) -> dict[str, str]:
        return {"action": "line 4"}  # no "Name:" prefix: the code adds it

    def judge(messages: list[Any]) -> dict[str, str]:
        truth, prediction = world.judged_texts(messages)
        return {"reasoning": "r", "score": "A" if truth == prediction else "C"}

    model = ScriptedChatModel(responders={"NextAction": actor, "KeyMoveVerdict": judge})
    config = _config(tmp_path, model, storylines=(str(story),), methods=("vanilla",))
    outcome = await run_bench_config(config)
    records = _lines(tmp_path / "out/results.jsonl")
    assert outcome.ran == 4 and {r["format"] for r in records} == {"utterance"}
    hit = next(r for r in records if r["position"] == 4)
    assert hit["prediction"] == "A: line 4" and hit["truth"] == "A: line 4" and hit["score"] == 100
    actor_prompt = prompt_text(model.calls_for("NextAction")[0])
    assert "(A concise sentence, A: ...)" in actor_prompt
    judge_prompt = prompt_text(model.calls_for("KeyMoveVerdict")[0])
    assert judge_prompt.startswith("# Scene\nA: line 0\nB: line 1")
    assert "conversation" not in judge_prompt  # the runner's text: no note about utterances
    assert outcome.summary["benchmarks"] == {"band": "Bandori"}
    assert outcome.summary["methods"]["vanilla"]["bandori_average"] == 25  # A 50, B 0
    assert "| Bandori | band | Avg. |" in (tmp_path / "out/report.md").read_text()


async def test_fandom_records_say_action(tmp_path: Path) -> None:
    await run_bench_config(_config(tmp_path, scripted_model(), limit=1, hide_title=True))
    assert {r["format"] for r in _lines(tmp_path / "out/results.jsonl")} == {"action"}
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["hide_title"] is True and summary["ablations"] == {"stub": []}
