"""The cost estimates printed before long runs, beside the usage of the same run.

Run: uv run python benchmarks/bench_estimates.py [--only act profile arc bench personality
eval-arcane]

Each command prints an estimate of its LLM calls and tokens before its first call (goal: within
15 % of what the run then uses). Here each one runs with a scripted model, and the usage it
reports (tokens counted approximately, as everything offline) is printed beside the estimate:

- ``bookmarks act``: steps of Haruhi on the scripted bookmarks world's 1,000-action storyline (a fresh
  bank at 120, then 903 and 960 on it), the paper's prompts and ours;

- ``characterhub eval``: the Toki page (../shared, else the test fixture) cut into 700-token chunks,
  two profiles with their DRInfo, judge batches of 10 (the scripted world of
  ``bench_profile_eval.py``);
- ``arcane build-arcs``: Pride and Prejudice, Elizabeth Bennet (``bench_arcane.py``'s scripted world);
- ``bookmarks bench``: each method on two artifacts of ../shared (the test suite's bench world),
  3 instances per character (the runs the estimate's per-instance figures come from), then
  BOOKMARKS with 8 per character (held out);
- ``amadeus eval-personality``: the BFI questionnaire for the test characters (the scripted world of
  the tests);
- ``arcane eval``: the test suite's eval world (the synthetic novel, eight three-phase probes)
  in the paper's six modes for two role-play models, answers of typical length; first
  ``--limit 3``, then the rest (the rerun's estimate counts only the units left).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from measure import load  # noqa: E402


def line(name: str, estimated: tuple[int, int], used: tuple[int, int], detail: str) -> None:
    calls, tokens = estimated
    real_calls, real_tokens = used
    print(
        f"{name}: estimated {calls:,} calls, ~{tokens:,} tokens; the scripted run used "
        f"{real_calls:,} calls, {real_tokens:,} tokens: {tokens / max(1, real_tokens):.2f}x "
        f"tokens, {calls / max(1, real_calls):.2f}x calls (goal 0.85-1.15x); {detail}; {load()}"
    )


def profile() -> None:
    from bench_profile_eval import OWN_PAGE, SHARED_PAGE, extract, judge

    from personae.degraded import FailureBudget
    from personae.evals.characterhub.costs import estimate_profile_eval
    from personae.evals.characterhub.profile_eval import (
        CharacterCase,
        ProfileDocument,
        ProfileEvalContext,
        evaluate_characters,
    )
    from personae.evals.characterhub.profile_reference import read_reference_file
    from personae.testing import ScriptedChatModel

    page = SHARED_PAGE if SHARED_PAGE.is_file() else OWN_PAGE
    reference = read_reference_file(page)

    def sparse(messages: list[BaseMessage]) -> dict[str, Any]:
        """bench_profile_eval's extractor keeps every sentence (34 points per 1k tokens); a
        model keeps the facts (the paper's Fandom pages: about half DRInfo's 11.68 per 1k,
        Figure 3): every fourth sentence here, about 8.5 per 1k."""
        answer = extract(messages)
        answer["knowledge_points"] = answer["knowledge_points"][::4]
        return answer

    model = ScriptedChatModel(responders={"ExtractedKnowledge": sparse, "AlignmentList": judge})
    context = ProfileEvalContext(
        judge_model=model,
        judge_model_name="scripted",
        extractor_model=model,
        extractor_model_name="scripted",
        chunk_tokens=700,
        judge_batch=10,
        # the sparse extractor's ids leave some judge batches unlabelled (degraded): they are
        # still calls made, and the run must finish to be counted
        max_failures=FailureBudget("100%"),
    )
    documents = [
        (
            Path(f"profile{i}.json"),
            ProfileDocument(
                character="Toki",
                profile=f"I am Toki (version {i}). I heal the sick of the wasteland. " * 20,
                drinfo=f"# Toki\nToki (version {i}) is the second of the four Hokuto brothers. "
                * 30,
            ),
        )
        for i in range(2)
    ]
    cases = [CharacterCase("Toki", reference, str(page), "given", documents)]
    estimate = estimate_profile_eval(cases, context)
    report = asyncio.run(evaluate_characters(cases, context))
    usage = report["usage"]
    used = (usage["llm_calls"], usage["input_tokens"] + usage["output_tokens"])
    line(
        "characterhub eval",
        (estimate.calls, estimate.tokens),
        used,
        f"{page.name}, {estimate.detail}",
    )


def arc() -> None:
    import tempfile

    from bench_arcane import build_arcs, load_book

    from personae.agents.arcane.costs import estimate_arc_build

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        novel, character = load_book(data)
        estimate = estimate_arc_build(novel, [character])
        usage = asyncio.run(build_arcs(novel, character, data))["usage"]
    used = (usage["llm_calls"], usage["input_tokens"] + usage["output_tokens"])
    detail = f"{novel.title}, {character}, {novel.count} chapters"
    line("arcane build-arcs", (estimate.calls, estimate.tokens), used, detail)


def bench(limit: int, methods: tuple[str, ...] = ("vanilla", "ricl", "eta", "bookmarks")) -> None:
    import json
    import re
    import tempfile

    import bookmarks_world as world
    from bench_bookmarks_sync import SHARED

    from personae.evals.bookmarks.bench import BenchConfig, run_bench_config
    from personae.graphs.bookmarks.resources import forget_resources
    from personae.testing import override_models

    if not SHARED.is_dir():
        print(f"bookmarks bench: {SHARED} is absent; skipped")
        return
    paths = [SHARED / f"title2action_series.{name}.json" for name in ("haruhi", "Poppin'Party")]
    for method in methods:
        model = world.scripted_model(KeyMoveVerdict=lambda m: {"reasoning": "k", "score": "C"})
        forget_resources()
        notes: list[str] = []  # the progress lines: the estimate is one
        with override_models(model), tempfile.TemporaryDirectory() as out:
            config = BenchConfig(
                storylines=tuple(str(p) for p in paths),
                methods=(method,),
                out_dir=Path(out),
                model="openai:scripted",
                fast_model="openai:scripted",
                judge_model="openai:scripted",
                limit=limit,
            )
            asyncio.run(run_bench_config(config, progress=notes.append))
            rows = [json.loads(x) for x in (Path(out) / "results.jsonl").read_text().splitlines()]
        calls = sum(r["stats"].get("llm_calls", 0) + r["judge_usage"]["llm_calls"] for r in rows)
        tokens = sum(
            r["stats"].get("input_tokens", 0)
            + r["stats"].get("output_tokens", 0)
            + r["judge_usage"]["input_tokens"]
            + r["judge_usage"]["output_tokens"]
            for r in rows
        )
        found = re.search(r"estimated: ([\d,]+) LLM calls, ~([\d,]+) tokens", notes[0])
        assert found, notes
        estimated = (int(found.group(1).replace(",", "")), int(found.group(2).replace(",", "")))
        detail = f"{method}, haruhi + Poppin'Party, {limit} instances per character"
        line("bookmarks bench", estimated, (calls, tokens), detail)


def act(size: int, targets: tuple[int, ...]) -> None:
    """``personae bookmarks act`` steps of one character on the scripted bookmarks world, one memory:
    a fresh bank first, then banks synced to the previous target (the paper's prompts and ours)."""
    import contextlib
    import io
    import json
    import re
    import tempfile

    import bookmarks_world as world

    from personae.cli import main as cli

    for method in ("bookmarks", "bookmarks-personae"):
        with tempfile.TemporaryDirectory() as folder:
            story = world.write_storyline(Path(folder) / "club.jsonl", size=size)
            for at in targets:
                out, err = io.StringIO(), io.StringIO()
                with (
                    world.scripted_model_as("t"),
                    contextlib.redirect_stdout(out),
                    contextlib.redirect_stderr(err),
                ):
                    argv = [
                        "bookmarks",
                        "act",
                        str(story),
                        "--character",
                        "Haruhi",
                        "--at",
                        str(at),
                    ]
                    argv += ["--method", method, "--json", "--memory", f"{folder}/mem"]
                    code = cli([*argv, "--model", "openai:t", "--fast-model", "openai:t"])
                assert code == 0, err.getvalue()
                stats = json.loads(out.getvalue())["stats"]
                found = re.search(
                    r"estimated: ([\d,]+) LLM calls, ~([\d,]+) tokens", err.getvalue()
                )
                assert found, err.getvalue()
                estimated = (
                    int(found.group(1).replace(",", "")),
                    int(found.group(2).replace(",", "")),
                )
                used = (stats["llm_calls"], stats["input_tokens"] + stats["output_tokens"])
                line("act", estimated, used, f"{method}, step at {at} of {size} actions")


def personality(questionnaire: str, limit: int) -> None:
    import contextlib
    import io
    import json
    import random
    import re
    import tempfile

    from bench_amadeus import synthetic_persona

    from personae.cli import main as cli
    from personae.testing import ScriptedChatModel, override_models

    rng = random.Random(3)

    def pole(messages: list[BaseMessage]) -> dict[str, Any]:
        return {"analysis": "ok", "first_percent": 60.0, "second_percent": 40.0}

    def incharacter_pole(messages: list[BaseMessage]) -> dict[str, Any]:
        found = re.search(r"on the (\w)/(\w) dimension", str(messages[0].content))
        first, second = found.groups() if found else ("E", "I")
        return {"analysis": "ok", "result": {first: "60%", second: "40%"}}

    model = ScriptedChatModel(
        responders={
            "RelevanceVerdict": lambda m: {"reason": "r", "relevant": rng.random() < 0.25},
            "CharacterAttributes": lambda m: {"belief_and_value": "b", "psychological_traits": "p"},
            "text": lambda m: "As Big, I would say that depends on the day, but mostly yes.",
            "PoleRating": pole,
            "ScaleRating": lambda m: {"analysis": "ok", "score": 4.0},
            "InCharacterPoleRating": incharacter_pole,
            "InCharacterScaleRating": lambda m: {"analysis": "ok", "result": 4.0},
        }
    )
    with tempfile.TemporaryDirectory() as folder:
        persona = Path(folder) / "big.md"
        persona.write_text(synthetic_persona("Big", 65_000), encoding="utf-8")
        argv = [
            "amadeus", "eval-personality", "--questionnaire", questionnaire, "--limit", str(limit),
            "--memory", f"{folder}/mem", "--out", f"{folder}/out", "--model", "openai:scripted",
            "--persona", f"Big={persona}", "--character", "Big",
        ]  # fmt: skip
        errors = io.StringIO()
        with override_models(model), contextlib.redirect_stderr(errors):
            code = cli(argv)
        assert code == 0, errors.getvalue()
        rows = [
            json.loads(x)
            for x in (Path(folder) / "out/results.jsonl").read_text().splitlines()
            if x.strip()
        ]
    kinds = ("llm_calls", "gs_calls", "ae_calls", "rp_calls")  # ratings, then interviews' roles
    calls = sum(int(r.get("usage", {}).get(k, 0)) for r in rows for k in kinds)
    interviews = [r for r in rows if r["kind"] == "interview"]
    per = {k: sum(r["usage"][k] for r in interviews) / len(interviews) for k in kinds[1:]}
    per["tokens"] = sum(
        r["usage"]["input_tokens"] + r["usage"]["output_tokens"] for r in interviews
    ) / len(interviews)
    print(f"  per interview: {per}")
    tokens = sum(
        int(r.get("usage", {}).get("input_tokens", 0))
        + int(r.get("usage", {}).get("output_tokens", 0))
        for r in rows
    )
    found = re.search(r"estimated: ([\d,]+) LLM calls, ~([\d,]+) tokens", errors.getvalue())
    assert found, errors.getvalue()
    estimated = (int(found.group(1).replace(",", "")), int(found.group(2).replace(",", "")))
    detail = f"{questionnaire}, --limit {limit}, one 65,000-character persona, ER rating"
    line("amadeus eval-personality", estimated, (calls, tokens), detail)


def eval_arcane(probes: int) -> None:
    import contextlib
    import io
    import json
    import os
    import re
    import tempfile

    from arcane_world import eval_responders, eval_world

    from personae.cli import main as cli
    from personae.testing import ScriptedChatModel, override_models

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        eval_world(data, probes)
        before = os.environ.get("PERSONAE_CACHE_DIR")
        os.environ["PERSONAE_CACHE_DIR"] = str(data / "cache")  # a scripted run's answers only
        model = ScriptedChatModel(responders=eval_responders())
        done = 0
        for limit in ("3", str(probes)):
            argv = ["arcane", "eval", "the_river", "--data", folder, "--out", f"{folder}/run"]
            argv += ["--model", "openai:a", "--also-model", "openai:b", "--limit", limit]
            errors = io.StringIO()
            with (
                override_models(model),
                contextlib.redirect_stderr(errors),
                contextlib.redirect_stdout(io.StringIO()),
            ):
                code = cli([*argv, "--judge-model", "openai:judge"])
            assert code == 0, errors.getvalue()
            found = re.search(r"estimated: ([\d,]+) LLM calls, ~([\d,]+) tokens", errors.getvalue())
            assert found, errors.getvalue()
            estimated = (int(found.group(1).replace(",", "")), int(found.group(2).replace(",", "")))
            lines = (data / "run/results.jsonl").read_text().splitlines()
            usage = [json.loads(x)["usage"] for x in lines[done:]]
            done = len(lines)
            used = (
                sum(u["llm_calls"] for u in usage),
                sum(u["input_tokens"] + u["output_tokens"] for u in usage),
            )
            detail = (
                f"the_river (synthetic), {len(usage)} units: six modes x 2 models x "
                f"--limit {limit} of {probes} probes{', a rerun' if limit != '3' else ''}"
            )
            line("arcane eval", estimated, used, detail)
        if before is None:
            del os.environ["PERSONAE_CACHE_DIR"]
        else:
            os.environ["PERSONAE_CACHE_DIR"] = before


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument(
        "--only",
        nargs="+",
        default=["act", "profile", "arc", "bench", "personality", "eval-arcane"],
    )
    args = parser.parse_args()
    print("$ " + " ".join(["python", *sys.argv]))
    if "act" in args.only:
        act(1000, (120, 903, 960))  # the README's position 903, from a fresh bank, then on
    if "profile" in args.only:
        profile()
    if "arc" in args.only:
        arc()
    if "bench" in args.only:
        bench(3)  # the per-instance figures of evals/bookmarks/costs.py come from runs like it
        bench(8, ("bookmarks",))  # held out: more steps after each character's catch-up
    if "personality" in args.only:
        personality("mbti", 3)
        personality("bfi", 2)
    if "eval-arcane" in args.only:
        eval_arcane(8)


if __name__ == "__main__":
    main()
