"""The benchmark report: the paper's Table 2 layout and hit-rate plots, in Markdown and HTML.

The plot is hand-written SVG (no plotting dependency) inline in both files, so the report is a
single self-contained document that can be attached or viewed offline.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from personae.evals.bookmarks.metrics import (
    HIT_RATE_WINDOW,
    Record,
    hit_rate_curve,
    overall_hit_rate,
    score_table,
)
from personae.evals.paper_settings import settings_markdown
from personae.files import write_text_atomic

REPORT_MD = "report.md"
REPORT_HTML = "report.html"
METHOD_ORDER = ("vanilla", "ricl", "eta", "bookmarks")
JUDGE_TITLES = {"exact": "key-move exact match (100/0)", "nli": "NLI (100/50/0)"}
_NUMERIC = re.compile(r"[-–0-9.,/% ]+")
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def _number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def table2_rows(summary: Mapping[str, Any], benchmark: str | None = None) -> list[list[str]]:
    """Header and rows of Table 2: methods × artifacts (+ Avg.), two decimals as the paper.

    A cell is the artifact's score (the unweighted mean of its characters' scores); ``Avg.`` the
    mean of the row's artifact scores in ``benchmark`` (every artifact when ``None``).
    """
    artifacts, rows = score_table(summary, METHOD_ORDER, benchmark)
    table = [[benchmark or "Method", *artifacts, "Avg."]]
    for method, cells, average in rows:
        table.append([method, *(_number(c, 2) for c in cells), _number(average, 2)])
    return table


def pooled_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """Per method: the Fandom and Bandori averages, their mean over artifacts, and pooled.

    Over the instances every method finished, as Table 2 above. ``Pooled (instances)`` is the
    mean over every instance, not a paper figure: talkative characters weigh more there, so it
    is labelled apart from the paper's averages.
    """
    table = [["Method", *AVERAGE_COLUMNS, "n"]]
    for method in _ordered_methods(summary):
        f = summary["methods"][method]
        table.append([method, *_averages(f), str(f["n"])])
    return table


def own_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """Per method over every instance it finished, with what failed and what degraded.

    These rows compare different instance sets when instances failed: they stand beside the
    shared-instance table, never in its place.
    """
    failed: dict[str, int] = {}
    for failure in (summary.get("failed") or {}).get("failures", []):
        failed[str(failure["method"])] = failed.get(str(failure["method"]), 0) + 1
    table = [["Method", *AVERAGE_COLUMNS, "n finished", "n failed", "Degraded answers"]]
    every = [*_ordered_methods(summary), *(m for m in failed if m not in summary["methods"])]
    for method in every:  # a method whose every instance failed is listed too
        own = (summary["methods"].get(method) or {}).get("own") or {}
        table.append(
            [
                method,
                *_averages(own),
                str(own.get("n", 0)),
                str(failed.get(method, 0)),
                str(own.get("degraded_answers", 0)),
            ]
        )
    return table


AVERAGE_COLUMNS = ("Fandom avg.", "Bandori avg.", "All artifacts avg.", "Pooled (instances)")
"""The per-method averages both tables show, in the summary's keys of :data:`AVERAGE_KEYS`."""
AVERAGE_KEYS = ("fandom_average", "bandori_average", "average_score", "pooled_score")


def _averages(figures: Mapping[str, Any]) -> list[str]:
    """One method's averages (:data:`AVERAGE_COLUMNS`), two decimals, a dash where missing."""
    return [_number(figures.get(key), 2) for key in AVERAGE_KEYS]


def _ordered_methods(summary: Mapping[str, Any]) -> list[str]:
    present = list(summary["methods"])
    return [m for m in METHOD_ORDER if m in present] + [m for m in present if m not in METHOD_ORDER]


def score_tables(summary: Mapping[str, Any]) -> list[tuple[str, list[list[str]]]]:
    """(title, rows) of every score table: per benchmark and pooled, then each method's own.

    The first tables are over the instances every method finished (their count in the titles);
    the last gives each method's figures over all it finished, beside them.
    """
    shared = _shared_note(summary)
    present = sorted(set(summary.get("benchmarks", {}).values()), key=("Fandom", "Bandori").index)
    tables = [
        (
            f"{bench} (artifact = mean of its characters' scores; {shared})",
            table2_rows(summary, bench),
        )
        for bench in present
    ]
    tables.append((f"Averages and pooled figures ({shared})", pooled_rows(summary)))
    tables.append(
        (
            "Per method, over every instance it finished (sets differ when some failed)",
            own_rows(summary),
        )
    )
    return tables


def _shared_note(summary: Mapping[str, Any]) -> str:
    shared = summary.get("shared_instances")
    finished = summary.get("instances_finished")
    if shared is None:  # a summary written before the shared-instance default
        return "each method over the instances it finished"
    return f"the {shared} of {finished} instances every method finished"


def score_tables_markdown(summary: Mapping[str, Any]) -> str:
    """The score tables as Markdown, each under its title (CLI output and report)."""
    return "\n\n".join(
        f"### {title}\n\n{markdown_table(rows)}" for title, rows in score_tables(summary)
    )


def ablation_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per method label naming its ablations (``bookmarks+no-derive``: no-derive)."""
    lines = []
    for label, ablations in sorted(summary.get("ablations", {}).items()):
        lines.append(f"{label}: {', '.join(ablations) if ablations else 'full method'}")
    if summary.get("hide_title"):
        lines.append("story titles hidden from every prompt (--hide-title)")
    return lines


def efficiency_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """Header and rows of the cost table: hit rates, reading saved, LLM calls and tokens."""
    table = [
        [
            "Artifact",
            "Method",
            "n",
            "Hit rate",
            "Reuse",
            "Derive",
            "Actions read / from scratch",
            "Saved",
            "LLM calls",
            "Tokens",
        ]
    ]
    for artifact, methods in sorted(summary["artifacts"].items()):
        for method, f in sorted(methods.items()):
            reading = (
                "–"
                if f["actions_from_scratch"] is None
                else f"{f['actions_read']} / {f['actions_from_scratch']}"
            )
            table.append(
                [
                    artifact,
                    method,
                    str(f["n"]),
                    _percent(f["hit_rate"]),
                    _percent(f["reuse_rate"]),
                    _percent(f["derive_rate"]),
                    reading,
                    _percent(f["saved"]),
                    str(f["llm_calls"]),
                    str(f["tokens"]),
                ]
            )
    return table


def character_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """Header and rows of per-character scores."""
    table = [["Artifact", "Method", "Character", "n", "Score", "Hit rate", "Saved"]]
    for artifact, methods in sorted(summary["artifacts"].items()):
        for method, figures in sorted(methods.items()):
            for name, f in figures["characters"].items():
                table.append(
                    [
                        artifact,
                        method,
                        name,
                        str(f["n"]),
                        _number(f["score"]),
                        _percent(f["hit_rate"]),
                        _percent(f["saved"]),
                    ]
                )
    return table


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table; first row is the header, numeric columns right-aligned."""
    header, *body = rows
    align = [
        "---:" if all(_NUMERIC.fullmatch(r[i]) for r in body) else "---" for i in range(len(header))
    ]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), line(align), *(line(r) for r in body)])


def html_table(rows: Sequence[Sequence[str]]) -> str:
    """The same table in HTML."""
    header, *body = rows
    head = "".join(f"<th>{html.escape(c)}</th>" for c in header)
    lines = ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body]
    return (
        f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(lines)
        + "\n</tbody>\n</table>"
    )


def hit_rate_svg(
    curves: Mapping[str, Sequence[tuple[int, float]]],
    width: int = 560,
    overall: Mapping[str, float | None] | None = None,
) -> str:
    """An SVG line plot of the moving-window hit rate (y, 0–100 %) along the story (x).

    One line per artifact; x is scaled per artifact to its own position range, so storylines
    of different lengths share the plot (the axis shows each artifact's range in the legend).
    The legend quotes each artifact's ``overall`` rate (default: its curve's last point).
    """
    height, left, right, top, bottom = 240, 48, 16, 16, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        'aria-label="Bookmark hit rate along the storyline (moving window)">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
            f"{int(tick * 100)}%</text>"
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" font-size="12" '
        'text-anchor="middle">story position (each storyline from its first to last target)</text>'
    )
    drawn = [curve for curve in curves.values() if curve]
    if len(drawn) == 1:  # one storyline: its own positions label the x axis
        for x, anchor, value in (
            (left, "start", drawn[0][0][0]),
            (left + plot_w, "end", drawn[0][-1][0]),
        ):
            parts.append(
                f'<text x="{x}" y="{top + plot_h + 14}" font-size="11" text-anchor="{anchor}">'
                f"{value}</text>"
            )
    for index, (artifact, curve) in enumerate(sorted(curves.items())):
        if not curve:
            continue
        color = _COLORS[index % len(_COLORS)]
        first, last = curve[0][0], curve[-1][0]
        span = max(last - first, 1)
        points = " ".join(
            f"{left + plot_w * (x - first) / span:.1f},{top + plot_h * (1 - y):.1f}"
            for x, y in curve
        )
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>')
        total = (overall or {}).get(artifact)
        shown = curve[-1][1] if total is None else total
        label = html.escape(f"{artifact} ({first}–{last}): {100 * shown:.0f}% overall")
        parts.append(
            f'<text x="{left + 8}" y="{top + 16 + 14 * index}" font-size="11" fill="{color}">'
            f"{label}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def hit_rate_section(records: Sequence[Record]) -> tuple[str, str]:
    """(svg or empty, note): the bookmarks method's hit-rate plot, or why there is none."""
    runs = [r for r in records if r["method"] == "bookmarks"]
    curves: dict[str, list[tuple[int, float]]] = {}
    overall: dict[str, float | None] = {}
    for artifact in sorted({str(r["artifact"]) for r in runs}):
        mine = [r for r in runs if r["artifact"] == artifact]
        curve = hit_rate_curve(mine)
        if curve:
            curves[artifact] = curve
            overall[artifact] = overall_hit_rate(mine)
    empty = questionless_steps(runs)
    if not curves:
        if runs:
            return (
                "",
                f"The bookmarks method kept no question in any of its {len(runs)} steps (the "
                "model proposed none, or the code dropped them all), so there is no hit-rate "
                "plot: no bookmark was matched or synced.",
            )
        return (
            "",
            "No bookmarks run is present, so there is no hit-rate plot (run --method bookmarks).",
        )
    note = (
        "Share of proposed questions matched to an existing bookmark (reuse + derive) over the "
        f"last {HIT_RATE_WINDOW} steps, along the story (as the paper's Figure 3, which shows it "
        "fluctuating); the legend gives each storyline's overall rate."
    )
    if empty:
        note += f" {empty} of {len(runs)} steps kept no question and are left out of the plot."
    return hit_rate_svg(curves, overall=overall), note


def questionless_steps(runs: Sequence[Record]) -> int:
    """Steps of the bookmarks method that kept no question (proposed none, or all dropped)."""
    return sum(
        1
        for r in runs
        if "reuse" in (r.get("stats") or {})
        and not any(int(r["stats"].get(k, 0)) for k in ("reuse", "derive", "new"))
    )


def degraded_lines(summary: Mapping[str, Any]) -> list[str]:
    """What degraded, per method: failed instances (with why) and answers kept as they were."""
    failed = (summary.get("failed") or {}).get("failures", [])
    lines = [
        f"{len(failed)} instance(s) failed and are left out of the scores (rerun to retry):",
        *(
            f"  {f['method']} {f['artifact']} {f['character']} at {f['position']}: {f['reason']}"
            for f in failed
        ),
    ]
    answers = degraded_answers(summary)
    kept = [
        "model answers inside the methods still invalid after retries and degraded (kept as "
        "they were, unknown or not evidence): "
        + ", ".join(f"{method} {n}" for method, n in answers.items())
    ]
    return (lines if failed else []) + (kept if answers else [])


def degraded_answers(summary: Mapping[str, Any]) -> dict[str, int]:
    """Degraded in-step answers per method (methods with none left out)."""
    counts = {
        method: int((figures.get("own") or {}).get("degraded_answers", 0))
        for method, figures in summary.get("methods", {}).items()
    }
    return {method: n for method, n in counts.items() if n}


def render_markdown(summary: Mapping[str, Any], records: Sequence[Record]) -> str:
    """The Markdown report."""
    svg, note = hit_rate_section(records)
    judge = JUDGE_TITLES.get(str(summary["judge"]), str(summary["judge"]))
    status = "" if summary.get("complete", True) else "\n\n**Partial run**: rerun to finish."
    degraded = degraded_lines(summary)
    if degraded:
        status += "\n\n**Degraded:** " + "\n".join(degraded)
    return (
        "\n\n".join(
            [
                "# BOOKMARKS benchmark",
                f"Judge: {judge}, judge model `{summary['judge_model']}`, "
                f"{summary['instances']} instances.{status}",
                "## Scores (Table 2 layout)",
                score_tables_markdown(summary),
                "## Methods and ablations",
                "\n".join(f"- {line}" for line in ablation_lines(summary)),
                "## Memory efficiency and cost",
                markdown_table(efficiency_rows(summary)),
                "## Per character",
                markdown_table(character_rows(summary)),
                "## Hit rate along the storyline",
                note,
                *([svg] if svg else []),
                *settings_section(summary),
            ]
        )
        + "\n"
    )


def settings_section(summary: Mapping[str, Any]) -> list[str]:
    """The paper's settings beside the run's (empty for summaries written before them)."""
    rows = summary.get("paper_settings") or []
    if not rows:
        return []
    return ["## Settings: the paper's and this run's", "\n".join(settings_markdown(rows))]


def render_html(summary: Mapping[str, Any], records: Sequence[Record]) -> str:
    """The HTML report (same content, self-contained)."""
    svg, note = hit_rate_section(records)
    judge = JUDGE_TITLES.get(str(summary["judge"]), str(summary["judge"]))
    partial = "" if summary.get("complete", True) else "<p><b>Partial run</b>: rerun to finish.</p>"
    degraded = degraded_lines(summary)
    if degraded:
        partial += "<p><b>Degraded:</b> " + "<br>".join(html.escape(d) for d in degraded) + "</p>"
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}"
        "td:first-child,th:first-child{text-align:left}"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>BOOKMARKS benchmark</title><style>{style}</style></head><body>\n"
        "<h1>BOOKMARKS benchmark</h1>\n"
        f"<p>Judge: {html.escape(judge)}, judge model <code>"
        f"{html.escape(str(summary['judge_model']))}</code>; acting model <code>"
        f"{html.escape(str(summary.get('model', '?')))}</code>, fast model <code>"
        f"{html.escape(str(summary.get('fast_model', '?')))}</code>; "
        f"{summary['instances']} instances.</p>"
        f"{partial}\n<h2>Scores (Table 2 layout)</h2>\n"
        + "".join(
            f"<h3>{html.escape(title)}</h3>\n{html_table(rows)}\n"
            for title, rows in score_tables(summary)
        )
        + "<h2>Methods and ablations</h2>\n<ul>"
        + "".join(f"<li>{html.escape(line)}</li>" for line in ablation_lines(summary))
        + "</ul>\n"
        f"<h2>Memory efficiency and cost</h2>\n{html_table(efficiency_rows(summary))}\n"
        f"<h2>Per character</h2>\n{html_table(character_rows(summary))}\n"
        f"<h2>Hit rate along the storyline</h2>\n<p>{html.escape(note)}</p>\n{svg}\n"
        "</body></html>\n"
    )


def write_report(
    out_dir: Path, summary: Mapping[str, Any], records: Sequence[Record]
) -> tuple[Path, Path]:
    """Write report.md and report.html atomically; return their paths."""
    md_path, html_path = out_dir / REPORT_MD, out_dir / REPORT_HTML
    write_text_atomic(md_path, render_markdown(summary, records))
    write_text_atomic(html_path, render_html(summary, records))
    return md_path, html_path
