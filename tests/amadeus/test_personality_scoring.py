"""Personality scoring: InCharacter data, reverse keying (and the data trap), the paper's metrics."""

from __future__ import annotations

import json

import pytest

from personae.evals.amadeus.personality_data import (
    MBTI_ORDER,
    SLOAN_ORDER,
    code_of,
    data_dir,
    load_characters,
    load_labels,
    load_questionnaire,
)
from personae.evals.amadeus.personality_scoring import (
    code_letters,
    dimension_scores,
    letters_of,
    macro_f1,
    option_score,
    split_batches,
    type_metrics,
)

# Tables 4 and 5 of the AMADEUS paper: GT, then CRAG, LightRAG, AMADEUS predictions.
TABLE_4 = """Anya Forger ENFP INTJ INFJ ENFP
Chika Fujiwara ENFP ENFP INTP ENFP
Edward Elric ENTP ISTJ INTP INFP
Frieren INTP INFP INTP INTP
Hitori Gotoh INFP ISTJ ENFP INFP
Light Yagami ENTJ INTJ INTJ INTJ
Mao Mao INTP INTJ INTJ ISTP
Megumin INFP INFP INFP ISFP
Mikoto Misaka ENTJ ISFP ENTJ INFJ
Nina Iseri ISFP ISFP ENFJ INFP
Saitama ISTP ISTP INTP ISTP
Son Goku ESFP ENFJ INTP ESFP
Tanjiro Kamado ENFJ ENFJ INTP ENFJ
Tobio Kageyama ISTJ ENTJ INFJ ISTJ
Yui Hirasawa ENFP ENFP INTP ESFP"""
TABLE_5 = """Anya Forger SCUAI SLOAI RCUEN SLUEI
Chika Fujiwara SCUAI SCUAI RLUEN SCOAI
Edward Elric SLUEI SLOEI RCUAN SLOEI
Frieren RCUEI RCUAI SLUEN RCUAI
Hitori Gotoh RLUAI RLUAI RCUEN RLUAI
Light Yagami RCOEI SCOEI RCUAN SCOEI
Mao Mao RCOEI RCOAN SLUAN RCOEI
Megumin SLUEI SCUAI RLUEN SLOEI
Mikoto Misaka RCOEI SLOAI RCUEN SLOAI
Nina Iseri RLUEI RLUAI RCUEN SLUEI
Saitama RCUAN RCOAN SCOAI RCUAN
Son Goku SCUAN SCUAI RLUEI SCOAI
Tanjiro Kamado SCOAI SCOAI RCUAN SCOAI
Tobio Kageyama RLOEN SLOAN RCUAI RCOEN
Yui Hirasawa SCUAI SLUAI RCOEN SCUAI"""


def _table(
    text: str, dimensions: tuple[str, ...], column: int
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    truth, predicted = {}, {}
    for line in text.splitlines():
        *name, gt, crag, light, amadeus = line.split()
        key = " ".join(name)
        truth[key] = code_letters(gt, dimensions)
        predicted[key] = code_letters([crag, light, amadeus][column], dimensions)
    return truth, predicted


@pytest.mark.parametrize(
    ("column", "accuracy", "f1"), [(0, 0.7600, 0.7313), (1, 0.3467, 0.2774), (2, 0.8133, 0.7986)]
)
def test_table_5_accuracy_and_f1_are_reproduced(column: int, accuracy: float, f1: float) -> None:
    truth, predicted = _table(TABLE_5, SLOAN_ORDER, column)
    metrics = type_metrics(SLOAN_ORDER, predicted, truth)
    assert round(metrics.accuracy, 4) == accuracy and round(metrics.avg_f1, 4) == f1
    assert metrics.characters == 15


# The parenthesised mismatch counts Table 4 prints beside each prediction (CRAG, LightRAG,
# AMADEUS), in TABLE_4's character order, and its printed Accuracy and Avg F1-Score.
TABLE_4_PRINTED_MISMATCHES = (
    (3, 0, 3, 1, 2, 1, 1, 0, 4, 0, 0, 2, 0, 2, 0),
    (2, 2, 1, 0, 1, 1, 1, 0, 0, 3, 1, 3, 3, 1, 2),
    (0, 0, 2, 0, 0, 1, 1, 1, 2, 1, 0, 0, 0, 0, 1),
)
TABLE_4_PRINTED = ((0.6833, 0.6448), (0.6500, 0.5344), (0.8500, 0.8244))
TABLE_4_TYPOS = {0: {"Hitori Gotoh": 1}, 1: {"Tobio Kageyama": 1}, 2: {}}
"""Cells whose printed count is one below what the printed types give (CRAG's ISTJ for INFP
differs in three letters, printed -2; LightRAG's INFJ for ISTJ in two, printed -1)."""


@pytest.mark.parametrize("column", [0, 1, 2])
def test_table_4_mismatches_and_accuracy_against_the_printed_table(column: int) -> None:
    """Our metric code on the printed types gives the printed counts, but for two typos.

    The printed accuracies follow the printed counts (1 - 19/60, 1 - 21/60, 1 - 9/60), so
    ours, from the types, is below them by exactly the typo; F1 matches for CRAG and LightRAG,
    not for AMADEUS (its printed types give 0.8394, printed 0.8244).
    """
    truth, predicted = _table(TABLE_4, MBTI_ORDER, column)
    metrics = type_metrics(MBTI_ORDER, predicted, truth)
    printed = dict(zip(truth, TABLE_4_PRINTED_MISMATCHES[column], strict=True))
    typos = TABLE_4_TYPOS[column]
    assert {c: m - printed[c] for c, m in metrics.mismatches.items() if m != printed[c]} == typos
    accuracy, f1 = TABLE_4_PRINTED[column]
    assert round(metrics.accuracy + sum(typos.values()) / 60, 4) == accuracy
    assert round(metrics.avg_f1, 4) == (f1 if column < 2 else 0.8394)


def test_macro_f1_uses_the_classes_present() -> None:
    assert macro_f1(["E", "E", "I"], ["E", "I", "I"]) == pytest.approx((2 / 3 + 2 / 3) / 2)
    assert macro_f1(["E", "E"], ["E", "E"]) == 1.0


def test_shipped_data_loads_with_the_right_counts() -> None:
    mbti, bfi = load_questionnaire("mbti"), load_questionnaire("bfi")
    assert len(mbti.items) == 60 and len(bfi.items) == 44
    assert [len(mbti.by_dimension(d)) for d in MBTI_ORDER] == [13, 12, 20, 15]
    assert [len(bfi.by_dimension(d)) for d in SLOAN_ORDER] == [8, 8, 9, 9, 10]
    assert sum(item.reverse for item in bfi.items) == 16
    assert len(load_characters()) == 32
    assert code_of(load_labels("pdb", mbti)["Hermione-en"], mbti) == "ESTJ"
    assert code_of(load_labels("pdb", bfi)["Hermione-en"], bfi) == "SCOEN"


def test_item_25_is_keyed_by_its_category_not_the_reverse_list() -> None:
    """The data trap: 16Personalities lists item 25 (category T) as reverse-keyed."""
    mbti = load_questionnaire("mbti")
    item = next(i for i in mbti.items if i.id == "25")
    assert item.category == "T" and not item.reverse
    assert option_score(item, 7, mbti) == 100.0  # agreeing strongly points to T
    flipped = next(i for i in mbti.by_dimension("T/F") if i.category == "F")
    assert flipped.reverse and option_score(flipped, 7, mbti) == 0.0
    listed = {
        str(i) for i in (json.loads((data_dir() / "16Personalities.json").read_text())["reverse"])
    }
    keyed = {i.id for i in mbti.items if i.reverse}
    assert "25" in listed and listed - keyed == {"25"}  # the list's only error is item 25


def test_option_conversion_hand_computed() -> None:
    mbti, bfi = load_questionnaire("mbti"), load_questionnaire("bfi")
    choices = {item.id: 6.0 for item in mbti.by_dimension("E/I")}  # agree with every E/I item
    scores = {
        i: option_score(next(x for x in mbti.items if x.id == i), c, mbti)
        for i, c in choices.items()
    }
    e_items = [i for i in mbti.by_dimension("E/I") if not i.reverse]
    expected = (len(e_items) * 250 / 3 + (13 - len(e_items)) * 50 / 3) / 13
    assert dimension_scores(mbti, scores)["E/I"] == pytest.approx(expected)
    assert option_score(mbti.items[0], None, mbti) == 50.0  # refusal 'x' -> midpoint
    negative = next(i for i in bfi.items if i.reverse)
    assert option_score(negative, 5, bfi) == 1.0
    assert letters_of(bfi, {"Neuroticism": 3.0, "Openness": 3.01}) == {
        "Neuroticism": "C",
        "Openness": "I",
    }
    assert letters_of(mbti, {"E/I": 50.0}) == {"E/I": "I"}  # strictly above the midpoint


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (5, [5]),
        (6, [3, 3]),
        (8, [4, 4]),
        (9, [3, 3, 3]),
        (10, [3, 4, 3]),
        (12, [4, 4, 4]),
        (13, [3, 3, 4, 3]),
        (15, [4, 4, 4, 3]),
        (20, [4] * 5),
    ],
)
def test_batches_reproduce_incharacter_split_list(size: int, expected: list[int]) -> None:
    batches = split_batches(list(range(size)))
    assert [len(b) for b in batches] == expected
    assert sorted(x for b in batches for x in b) == list(range(size))


def test_neutral_labels_are_skipped() -> None:
    metrics = type_metrics(
        ("E/I", "S/N"), {"a": {"E/I": "E", "S/N": "S"}}, {"a": {"E/I": "X", "S/N": "N"}}
    )
    assert metrics.accuracy == 0.0 and metrics.per_dimension == {"S/N": 0.0}
