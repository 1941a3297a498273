from __future__ import annotations

from typing import Any

import pytest

from personae.evals.bookmarks.metrics import (
    hit_rate_curve,
    overall_hit_rate,
    score_table,
    summarize,
)


def _record(
    artifact: str, method: str, character: str, position: int, score: int, **stats: int
) -> dict[str, Any]:
    return {
        "artifact": artifact,
        "method": method,
        "character": character,
        "position": position,
        "judge": "exact",
        "score": score,
        "stats": stats,
        "judge_usage": {},
    }


RECORDS = [
    {
        **_record(
            "a",
            "bookmarks",
            "X",
            10,
            100,
            reuse=2,
            derive=1,
            new=2,
            actions_read=5,
            actions_from_scratch=10,
            llm_calls=3,
            input_tokens=100,
            output_tokens=10,
        ),
        "judge_usage": {"llm_calls": 1, "input_tokens": 20, "output_tokens": 5},
    },
    _record(
        "a",
        "bookmarks",
        "Y",
        12,
        0,
        reuse=0,
        derive=0,
        new=5,
        actions_read=12,
        actions_from_scratch=12,
        llm_calls=4,
        input_tokens=200,
        output_tokens=20,
    ),
    _record(
        "b",
        "bookmarks",
        "X",
        5,
        100,
        reuse=4,
        derive=1,
        new=0,
        actions_read=1,
        actions_from_scratch=5,
        llm_calls=2,
        input_tokens=50,
        output_tokens=5,
    ),
    _record("a", "vanilla", "X", 10, 100, llm_calls=1, input_tokens=30, output_tokens=3),
    _record("a", "vanilla", "Y", 12, 100, llm_calls=1, input_tokens=30, output_tokens=3),
    _record("b", "vanilla", "X", 5, 0),
]


def test_artifact_method_figures_by_hand() -> None:
    a = summarize(RECORDS)["artifacts"]["a"]["bookmarks"]
    assert a["n"] == 2 and a["score"] == 50
    assert (a["questions"], a["reuse"], a["derive"], a["new"]) == (10, 2, 1, 7)
    assert a["hit_rate"] == pytest.approx(0.3)
    assert a["reuse_rate"] == pytest.approx(0.2) and a["derive_rate"] == pytest.approx(0.1)
    assert (a["actions_read"], a["actions_from_scratch"]) == (17, 22)
    assert a["read_share"] == pytest.approx(17 / 22) and a["saved"] == pytest.approx(5 / 22)
    assert (a["llm_calls"], a["input_tokens"], a["output_tokens"], a["tokens"]) == (7, 300, 30, 330)
    assert (a["judge_llm_calls"], a["judge_tokens"]) == (1, 25)


def test_per_character_figures() -> None:
    characters = summarize(RECORDS)["artifacts"]["a"]["bookmarks"]["characters"]
    assert set(characters) == {"X", "Y"}
    x, y = characters["X"], characters["Y"]
    assert (x["n"], x["score"], x["hit_rate"], x["saved"]) == (1, 100, 0.6, 0.5)
    assert (y["score"], y["hit_rate"], y["saved"]) == (0, 0.0, 0.0)


def test_baselines_have_no_hit_rate_or_reading_share() -> None:
    vanilla = summarize(RECORDS)["artifacts"]["a"]["vanilla"]
    assert vanilla["score"] == 100 and vanilla["llm_calls"] == 2 and vanilla["tokens"] == 66
    for key in ("hit_rate", "reuse_rate", "questions", "read_share", "saved", "actions_read"):
        assert vanilla[key] is None, key


def test_method_average_is_the_mean_of_artifact_scores() -> None:
    methods = summarize(RECORDS)["methods"]
    assert methods["bookmarks"]["average_score"] == 75  # (50 + 100) / 2, per artifact
    assert (
        methods["bookmarks"]["fandom_average"] == 75
        and methods["bookmarks"]["bandori_average"] is None
    )
    assert methods["bookmarks"]["pooled_score"] == pytest.approx(200 / 3)  # per instance
    assert methods["bookmarks"]["hit_rate"] == pytest.approx(8 / 15)
    assert methods["bookmarks"]["saved"] == pytest.approx(1 - 18 / 27)
    assert methods["vanilla"]["average_score"] == 50


def test_score_table_layout() -> None:
    artifacts, rows = score_table(summarize(RECORDS), ("vanilla", "ricl", "bookmarks"))
    assert artifacts == ["a", "b"]
    assert rows == [("vanilla", [100, 0], 50), ("bookmarks", [50, 100], 75)]


def test_score_table_leaves_out_what_not_every_method_finished() -> None:
    only_a = [r for r in RECORDS if not (r["method"] == "vanilla" and r["artifact"] == "b")]
    summary = summarize(only_a)
    artifacts, rows = score_table(summary, ("vanilla", "bookmarks"))
    assert artifacts == ["a"] and rows == [("vanilla", [100], 100), ("bookmarks", [50], 50)]
    assert summary["methods"]["bookmarks"]["own"]["average_score"] == 75  # a 50, b 100, beside


def _haruhi(method: str, position: int, score: int, degraded: int = 0) -> dict[str, Any]:
    return _record("haruhi", method, "Haruhi", position, score, degraded=degraded)


def test_table_2_rows_compare_the_instances_every_method_finished() -> None:
    """The issue's run: vanilla finished 1 of 4 Haruhi instances, bookmarks 3 (issue 26 §10)."""
    records = [
        _haruhi("vanilla", 10, 100),
        _haruhi("bookmarks", 10, 0, degraded=2),
        _haruhi("bookmarks", 20, 100),
        _haruhi("bookmarks", 30, 100, degraded=1),
    ]
    summary = summarize(records)
    assert (summary["shared_instances"], summary["instances_finished"]) == (1, 3)
    vanilla, bookmarks = summary["methods"]["vanilla"], summary["methods"]["bookmarks"]
    # the table: both rows over position 10 alone
    assert (vanilla["average_score"], vanilla["n"]) == (100, 1)
    assert (bookmarks["average_score"], bookmarks["n"]) == (0, 1)
    assert summary["artifacts"]["haruhi"]["bookmarks"]["score"] == 0
    # beside it, each method over all it finished, with its own degraded answers
    assert bookmarks["own"] == {
        "n": 3,
        "average_score": pytest.approx(200 / 3),
        "fandom_average": pytest.approx(200 / 3),
        "bandori_average": None,
        "pooled_score": pytest.approx(200 / 3),
        "degraded_answers": 3,
    }
    assert vanilla["own"]["n"] == 1 and vanilla["own"]["degraded_answers"] == 0
    assert summary["artifacts"]["haruhi"]["bookmarks"]["own"] == {
        "n": 3,
        "score": pytest.approx(200 / 3),
    }


def test_methods_with_no_shared_instance_keep_their_own_figures() -> None:
    records = [_haruhi("vanilla", 10, 100), _haruhi("bookmarks", 20, 50)]
    summary = summarize(records)
    assert summary["shared_instances"] == 0 and summary["artifacts"] == {}
    assert summary["methods"]["vanilla"]["average_score"] is None
    assert summary["methods"]["vanilla"]["n"] == 0
    assert summary["methods"]["bookmarks"]["own"]["average_score"] == 50


def test_hit_rate_in_story_order() -> None:
    bookmarks_a = [r for r in RECORDS if r["method"] == "bookmarks" and r["artifact"] == "a"]
    assert hit_rate_curve(reversed(bookmarks_a)) == [(10, 0.6), (12, 0.3)]
    vanilla = [r for r in RECORDS if r["method"] == "vanilla"]
    assert hit_rate_curve(vanilla) == []


def test_hit_rate_is_a_moving_window_that_can_fall_as_figure_3_shows() -> None:
    """20 steps that all reuse, then 10 that all start new bookmarks: the curve drops to 50 %."""
    steps = [
        {
            "position": p,
            "character": "K",
            "stats": {"reuse": int(p < 20), "derive": 0, "new": int(p >= 20)},
        }
        for p in range(30)
    ]
    curve = hit_rate_curve(steps)
    assert curve[19] == (19, 1.0) and curve[-1] == (29, 0.5)  # a running total would be 0.667
    assert overall_hit_rate(steps) == pytest.approx(20 / 30)
    assert [rate for _, rate in hit_rate_curve(steps, window=5)][-1] == 0.0


def test_empty_input() -> None:
    assert summarize([]) == {
        "artifacts": {},
        "benchmarks": {},
        "methods": {},
        "shared_instances": 0,
        "instances_finished": 0,
    }


# The paper's Table 3, BOOKMARKS row on Poppin'Party (Band Story 1): per-character key-move EM.
# The instance counts are the benchmark's own (541 instances: Kasumi 167, Arisa 116, Rimi 81,
# Tae 89, Saaya 88; checked against the release in test_bookmarks_instances), and the hits give
# exactly the printed scores.
POPIPA = {
    "Kasumi": (167, 86),
    "Arisa": (116, 49),
    "Rimi": (81, 36),
    "Tae": (89, 43),
    "Saaya": (88, 42),
}
POPIPA_TABLE3 = {"Kasumi": 51.50, "Arisa": 42.24, "Rimi": 44.44, "Tae": 48.31, "Saaya": 47.73}


def _popipa_records() -> list[dict[str, Any]]:
    records = []
    for name, (n, hits) in POPIPA.items():
        for i in range(n):
            record = _record("Poppin'Party", "bookmarks", name, i, 100 if i < hits else 0)
            records.append({**record, "format": "utterance"})
    return records


def test_artifact_score_is_the_unweighted_mean_of_character_scores() -> None:
    summary = summarize(_popipa_records())
    figures = summary["artifacts"]["Poppin'Party"]["bookmarks"]
    for name, printed in POPIPA_TABLE3.items():
        assert round(figures["characters"][name]["score"], 2) == printed
    # Table 2's PoPiPa cell for BOOKMARKS is 46.84: the mean of the five character scores ...
    assert round(figures["score"], 2) == 46.84
    # ... not the pooled instance mean, which weighs Kasumi's 167 lines more.
    assert round(figures["pooled_score"], 2) == 47.32 and figures["n"] == 541
    assert summary["benchmarks"] == {"Poppin'Party": "Bandori"}
    method = summary["methods"]["bookmarks"]
    assert round(method["bandori_average"], 2) == 46.84 and method["fandom_average"] is None


def test_fandom_and_bandori_are_averaged_separately() -> None:
    records = [*_popipa_records(), *(r for r in RECORDS if r["method"] == "bookmarks")]
    method = summarize(records)["methods"]["bookmarks"]
    assert method["fandom_average"] == 75  # artifacts a (50) and b (100)
    assert round(method["bandori_average"], 2) == 46.84
    assert method["average_score"] == pytest.approx((50 + 100 + 234.22469 / 5) / 3, abs=1e-4)
