"""Support score, irrelevant and contradiction rates, per dimension, and knowledge density."""

from __future__ import annotations

import pytest

from personae.evals.characterhub.profile_metrics import (
    VERDICTS,
    count_tokens,
    knowledge_density,
    score_by_dimension,
    score_verdicts,
)
from personae.memory.characterhub.dimensions import DIMENSIONS

SEVEN = ["supported"] * 3 + ["partially_supported"] * 2 + ["irrelevant", "contradicted"]


def test_hand_computed_rates_over_seven_points() -> None:
    scores = score_verdicts(SEVEN)
    assert (scores.n, scores.supported, scores.partially_supported) == (7, 3, 2)
    assert (scores.irrelevant, scores.contradicted) == (1, 1)
    assert scores.support_score == pytest.approx((3 + 0.5 * 2) / 7)  # 4/7
    assert scores.irrelevant_rate == pytest.approx(1 / 7)
    assert scores.contradiction_rate == pytest.approx(1 / 7)
    assert scores.credited_points == 4.0


def test_rates_do_not_depend_on_order_and_bound_between_zero_and_one() -> None:
    assert score_verdicts(reversed(SEVEN)) == score_verdicts(SEVEN)
    assert score_verdicts(["supported"] * 4).support_score == 1.0
    assert score_verdicts(["contradicted"] * 4).support_score == 0.0
    assert score_verdicts(["contradicted"] * 4).contradiction_rate == 1.0


def test_no_point_gives_none_rates_not_zero_or_a_crash() -> None:
    empty = score_verdicts([])
    assert empty.n == 0
    assert empty.support_score is None
    assert empty.irrelevant_rate is None
    assert empty.contradiction_rate is None
    assert empty.as_dict() == {
        "n": 0,
        "supported": 0,
        "partially_supported": 0,
        "irrelevant": 0,
        "contradicted": 0,
        "support_score": None,
        "irrelevant_rate": None,
        "contradiction_rate": None,
    }


def test_per_dimension_split_and_every_dimension_reported() -> None:
    judged = [
        ("identity", "supported"),
        ("identity", "partially_supported"),
        ("ability", "contradicted"),
        ("ability", "irrelevant"),
        ("ability", "supported"),
        ("other", "irrelevant"),
    ]
    overall, per_dimension = score_by_dimension(judged)
    assert overall.n == 6
    assert overall.support_score == pytest.approx(2.5 / 6)
    assert list(per_dimension) == list(DIMENSIONS)
    assert per_dimension["identity"].support_score == pytest.approx(0.75)
    assert per_dimension["ability"].support_score == pytest.approx(1 / 3)
    assert per_dimension["ability"].contradiction_rate == pytest.approx(1 / 3)
    assert per_dimension["other"].irrelevant_rate == 1.0
    assert per_dimension["appearance"].n == 0
    assert per_dimension["appearance"].support_score is None
    assert sum(s.n for s in per_dimension.values()) == overall.n


def test_unknown_verdicts_and_dimensions_are_refused() -> None:
    assert VERDICTS == ("supported", "partially_supported", "irrelevant", "contradicted")
    with pytest.raises(ValueError, match="unknown verdict 'maybe'"):
        score_verdicts(["supported", "maybe"])
    with pytest.raises(ValueError, match="unknown dimension"):
        score_by_dimension([("hobbies", "supported")])


def test_knowledge_density_is_points_per_thousand_tokens() -> None:
    assert knowledge_density(5, 2000) == 2.5
    assert knowledge_density(1.5, 500) == 3.0
    assert knowledge_density(3, 0) is None


def test_token_count_is_about_four_characters_per_token() -> None:
    assert count_tokens("") == 0
    assert count_tokens("   \n") == 0
    assert 95 <= count_tokens("word " * 80) <= 105
    assert count_tokens("a" * 4000) > count_tokens("a" * 400) * 9
