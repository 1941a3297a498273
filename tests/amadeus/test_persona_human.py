"""Table 2 arithmetic (μ, σ, Mdn, Cronbach's α) and the rating-sheet export."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from personae.cli import main
from personae.evals.amadeus.persona_human import cronbach_alpha, table_2


def test_alpha_and_table_2_on_a_hand_computed_matrix() -> None:
    ratings = [[1.0, 2.0], [2.0, 1.0], [3.0, 3.0]]
    # rater variances 1 and 1, totals 3, 3, 6 -> variance 3: alpha = 2 * (1 - 2/3)
    assert cronbach_alpha(ratings) == pytest.approx(2 / 3)
    figures = table_2(ratings)
    assert figures["mean"] == 2.0 and figures["median"] == 2.0
    assert figures["std"] == pytest.approx((2 / 3) ** 0.5)
    assert cronbach_alpha([[4.0, 4.0, 5.0], [2.0, 2.0, 3.0], [3.0, 3.0, 4.0]]) == pytest.approx(1.0)


def test_sheet_export_and_ratings_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [
        {
            "kind": "interview",
            "character": "Iago",
            "question": f"Q{i}?",
            "selected_text": ["c1", "c2"],
            "attributes": {"belief_and_value": f"B{i}", "psychological_traits": f"P{i}"},
        }
        for i in range(5)
    ] + [{"kind": "rating", "character": "Iago", "id": "E/I#0"}]
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(json.dumps(r) for r in records))
    sheet = tmp_path / "sheet.csv"
    argv = [
        "amadeus",
        "eval-human",
        "--export",
        str(sheet),
        "--results",
        str(results),
        "--samples",
        "3",
    ]
    assert main(argv) == 0
    rows = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8"))))
    assert len(rows) == 3 and rows[0]["chunks"] == "c1\n---\nc2" and rows[0]["rating"] == ""
    assert (
        main(argv) == 0
        and list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8")))) == rows
    )  # seeded
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("sample,r1,r2\n1,1,2\n2,2,1\n3,3,3\n")
    capsys.readouterr()
    assert main(["amadeus", "eval-human", "--ratings", str(ratings)]) == 0
    assert "| 2.000 | 0.816 | 2.000 | 0.667 |" in capsys.readouterr().out
