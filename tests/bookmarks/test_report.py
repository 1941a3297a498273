from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from personae.evals.bookmarks.metrics import summarize
from personae.evals.bookmarks.report import hit_rate_svg, write_report


def _record(artifact: str, method: str, position: int, score: int, **stats: int) -> dict[str, Any]:
    return {
        "artifact": artifact,
        "method": method,
        "character": "Kyon",
        "position": position,
        "judge": "exact",
        "score": score,
        "stats": stats,
    }


RECORDS = [
    _record(
        "haruhi",
        "bookmarks",
        500,
        100,
        reuse=0,
        derive=0,
        new=5,
        actions_read=500,
        actions_from_scratch=500,
    ),
    _record(
        "haruhi",
        "bookmarks",
        510,
        0,
        reuse=3,
        derive=1,
        new=1,
        actions_read=10,
        actions_from_scratch=510,
    ),
    _record(
        "kon",
        "bookmarks",
        40,
        100,
        reuse=1,
        derive=1,
        new=3,
        actions_read=40,
        actions_from_scratch=40,
    ),
    _record("haruhi", "vanilla", 500, 0, llm_calls=1),
    _record("haruhi", "vanilla", 510, 100, llm_calls=1),
    _record("kon", "vanilla", 40, 0, llm_calls=1),
    {**_record("Roselia", "bookmarks", 7, 100), "format": "utterance"},
    {**_record("Roselia", "vanilla", 7, 50), "format": "utterance"},
]


def _summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "judge": "exact",
        "judge_model": "openai:gpt-4.1",
        "complete": True,
        "instances": len(records),
        "ablations": {"bookmarks": [], "bookmarks+no-derive": ["no-derive"]},
        **summarize(records),
    }


def test_table2_layout_and_plot(tmp_path: Path) -> None:
    md_path, html_path = write_report(tmp_path, _summary(RECORDS), RECORDS)
    markdown = md_path.read_text()
    assert "| Fandom | haruhi | kon | Avg. |" in markdown  # two decimals, as the paper
    assert "| vanilla | 50.00 | 0.00 | 25.00 |" in markdown  # methods in the paper's order
    assert "| bookmarks | 50.00 | 100.00 | 75.00 |" in markdown
    assert markdown.index("| vanilla |") < markdown.index("| bookmarks |")
    assert (
        "| Bandori | Roselia | Avg. |" in markdown and "| bookmarks | 100.00 | 100.00 |" in markdown
    )
    # the averages apart, then the pooled instance mean, labelled as such
    assert (
        "| Method | Fandom avg. | Bandori avg. | All artifacts avg. | Pooled (instances) | n |"
        in markdown
    )
    assert "| bookmarks | 75.00 | 100.00 | 83.33 | 75.00 | 4 |" in markdown
    assert "- bookmarks+no-derive: no-derive" in markdown
    # cost table: haruhi bookmarks hit rate (3 + 1) / 10, reading 510 of 1010
    assert "| haruhi | bookmarks | 2 | 40.0 % | 30.0 % | 10.0 % | 510 / 1010 | 49.5 % |" in markdown
    assert "key-move exact match (100/0)" in markdown and "<svg" in markdown
    page = html_path.read_text()
    assert "<th>Avg.</th>" in page and "<td>75.00</td>" in page and "<svg" in page
    assert "<li>bookmarks+no-derive: no-derive</li>" in page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.md"]


def test_the_svg_is_well_formed_with_one_line_per_storyline() -> None:
    svg = hit_rate_svg({"haruhi": [(500, 0.0), (510, 0.4)], "kon": [(40, 0.4)]})
    root = ET.fromstring(svg)
    lines = root.findall("{http://www.w3.org/2000/svg}polyline")
    assert len(lines) == 2
    first = [tuple(map(float, p.split(","))) for p in lines[0].attrib["points"].split()]
    assert first[0][1] > first[1][1]  # 0 % is drawn below 40 %
    assert "haruhi (500–510): 40%" in svg
    single = ET.fromstring(hit_rate_svg({"kon": [(40, 0.5), (90, 0.75)]}))
    labels = [t.text for t in single.findall("{http://www.w3.org/2000/svg}text")]
    assert "40" in labels and "90" in labels


def test_a_note_when_no_bookmarks_run(tmp_path: Path) -> None:
    vanilla = [r for r in RECORDS if r["method"] == "vanilla"]
    summary = {**_summary(vanilla), "complete": False}
    md_path, html_path = write_report(tmp_path, summary, vanilla)
    markdown = md_path.read_text()
    assert "No bookmarks run is present" in markdown and "<svg" not in markdown
    assert "Partial run" in markdown and "| bookmarks |" not in markdown
    assert "No bookmarks run is present" in html_path.read_text()


def test_the_report_compares_shared_instances_and_counts_degraded_per_method(
    tmp_path: Path,
) -> None:
    """Failed instances leave the table for every method; each method's own figures beside."""
    records = [
        _record("haruhi", "vanilla", 500, 100),
        _record("haruhi", "bookmarks", 500, 0, degraded=2),
        _record("haruhi", "bookmarks", 510, 100),
    ]
    summary = _summary(records)
    summary["failed"] = {
        "instances": 1,
        "failures": [
            {
                "method": "vanilla",
                "artifact": "haruhi",
                "character": "Kyon",
                "position": 510,
                "reason": "no valid action",
            }
        ],
    }
    markdown = write_report(tmp_path, summary, records)[0].read_text()
    assert "### Fandom (artifact = mean of its characters' scores; the 1 of 2 instances" in markdown
    assert "| vanilla | 100.00 | 100.00 |" in markdown and "| bookmarks | 0.00 | 0.00 |" in markdown
    assert "### Per method, over every instance it finished" in markdown
    assert "| vanilla | 100.00 | – | 100.00 | 100.00 | 1 | 1 | 0 |" in markdown
    assert "| bookmarks | 50.00 | – | 50.00 | 50.00 | 2 | 0 | 2 |" in markdown
    assert "vanilla haruhi Kyon at 510: no valid action" in markdown
    assert "kept as they were, unknown or not evidence): bookmarks 2" in markdown


def test_a_summary_written_before_the_shared_instance_default_says_what_it_averages() -> None:
    from personae.evals.bookmarks.report import score_tables

    summary = _summary(RECORDS)
    del summary["shared_instances"], summary["instances_finished"]
    titles = [title for title, _ in score_tables(summary)]
    assert titles[0] == (
        "Fandom (artifact = mean of its characters' scores; each method over the instances "
        "it finished)"
    )


def test_a_method_whose_every_instance_failed_still_has_its_own_row() -> None:
    from personae.evals.bookmarks.report import own_rows

    summary = _summary(RECORDS)
    failure = {"method": "ricl", "artifact": "kon", "character": "Kyon", "position": 40}
    summary["failed"] = {"instances": 1, "failures": [{**failure, "reason": "no valid action"}]}
    assert own_rows(summary)[-1] == ["ricl", "–", "–", "–", "–", "0", "1", "0"]
