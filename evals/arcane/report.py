"""The ARCANE report: the paper's Table 2 layout and a plot of fidelity along the phases.

Markdown and HTML carry the same tables; the plot is hand-written SVG (no plotting dependency).
Best mode per column and model is bolded, recomputed here (spec default 40).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from personae.evals.arcane.metrics import CATEGORIES, METRICS
from personae.evals.paper_settings import settings_markdown

COLUMNS = [(c, m) for c in CATEGORIES for m in METRICS]
SHORT = {"in_scenario": "IS", "in_world": "IW", "out_of_world": "OW"}
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def table2_rows(summary: Mapping[str, Any], own: bool = False) -> list[list[str]]:
    """Header plus one row per (model, mode): 12 cells and Overall, bests in bold per model.

    The cells cover the judgements every mode of the model scored (the comparison); ``own``
    gives each row over every judgement it scored instead, with its counts of what is missing
    after 3 attempts and of undefined PTF, and no bold (its rows cover different sets).
    """
    prefix = "own_" if own else ""
    header = ["Model", "Mode", *[f"{SHORT[c]}-{m.upper()}" for c, m in COLUMNS], "Overall"]
    header += ["Scored", "Missing phase", "Missing PTF", "PTF undefined"] if own else ["Probes"]
    rows = [header]
    data = summary["rows"]

    def value_of(row: Mapping[str, Any], c: str, m: str) -> float | None:
        if m == "overall":
            return row.get(prefix + "overall")
        return (row.get(prefix + "cells") or {}).get(f"{c}.{m}")

    for row in data:
        peers = [r for r in data if r["model"] == row["model"]]
        cells = []
        for c, m in [*COLUMNS, ("", "overall")]:
            value = value_of(row, c, m)
            best = max((v for r in peers if (v := value_of(r, c, m)) is not None), default=None)
            text = "–" if value is None else f"{value:.1f}"
            bold = not own and value is not None and value == best and len(peers) > 1
            cells.append(f"**{text}**" if bold else text)
        if own:
            counts = [
                row.get("judgements_scored"),
                row["missing_phase_judgements"],
                row["missing_ptf"],
                row.get("undefined_ptf"),
            ]
            cells += ["–" if n is None else str(n) for n in counts]
        else:
            cells.append(str(row["probes"]))
        rows.append([row["model"], row["mode"], *cells])
    return rows


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def html_table(rows: Sequence[Sequence[str]]) -> str:
    """The same table in HTML (bold markers become <b>)."""

    def cell(text: str, tag: str) -> str:
        bold = text.startswith("**")
        inner = html.escape(text.strip("*"))
        return f"<{tag}>{'<b>' + inner + '</b>' if bold else inner}</{tag}>"

    head = "".join(cell(c, "th") for c in rows[0])
    body = "".join("<tr>" + "".join(cell(c, "td") for c in r) + "</tr>" for r in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def phase_svg(curves: Mapping[str, Sequence[tuple[int, float]]], width: int = 560) -> str:
    """Mean per-phase fidelity (1-100, y) against phase index (x), one line per model / mode."""
    height, left, right, top, bottom = 300, 44, 12, 12, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    last = max((k for points in curves.values() for k, _ in points), default=1) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 18 * len(curves)}">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
    ]
    for tick in (0, 25, 50, 75, 100):
        y = top + plot_h * (1 - tick / 100)
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{tick}</text>'
        )
    for k in range(last + 1):
        x = left + plot_w * k / last
        parts.append(
            f'<text x="{x:.1f}" y="{top + plot_h + 14}" font-size="11" text-anchor="middle">{k}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 30}" font-size="12" '
        'text-anchor="middle">phase index (mean of APF, RPF, RAE)</text>'
    )
    for i, (name, points) in enumerate(curves.items()):
        color = COLORS[i % len(COLORS)]
        path = " ".join(
            f"{left + plot_w * k / last:.1f},{top + plot_h * (1 - v / 100):.1f}" for k, v in points
        )
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        y = height + 18 * i + 4
        parts.append(
            f'<text x="{left}" y="{y}" font-size="11" fill="{color}">{html.escape(name)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def gap_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per model: Arc minus the best other mode."""
    lines = []
    for g in summary["arc_gaps"]:
        parts = [
            f"{SHORT[c]} {v['overall']:+.1f} (PTF {v['ptf']:+.1f}, per-phase {v['per_phase']:+.1f})"
            for c, v in g.get("per_category", {}).items()
        ]
        detail = f"; per category: {', '.join(parts)}" if parts else ""
        lines.append(
            f"{g['model']}: Arc {g['gap']:+.1f} vs best other mode ({g['best_other_mode']}){detail}"
        )
    return lines


def tier_lines(summary: Mapping[str, Any]) -> list[str]:
    """App. M: one line per model with the Arc-over-Vanilla lift per character tier."""
    lines = []
    for t in summary.get("tiers", []):
        parts = [
            f"{tier} {t[tier]['lift']:+.1f} (Arc {t[tier]['arc']:.1f} vs Vanilla "
            f"{t[tier]['vanilla']:.1f}, {t[tier]['probes']} probes)"
            for tier in ("central", "supporting")
            if tier in t
        ]
        lines.append(f"{t['model']}: Arc-over-Vanilla lift by tier (App. M): {', '.join(parts)}")
    return lines


def missing_lines(summary: Mapping[str, Any]) -> list[str]:
    """Missing after 3 attempts and PTF undefined below 2 phases, counted apart."""
    rows = summary["rows"]
    phases = sum(int(r["missing_phase_judgements"]) for r in rows)
    ptf = sum(int(r["missing_ptf"]) for r in rows)
    undefined = sum(int(r.get("undefined_ptf", 0)) for r in rows)
    return [
        f"Judgements missing after 3 attempts: {phases} phase judgement(s) (T35), {ptf} "
        f"trajectory judgement(s) (T36). PTF undefined (fewer than 2 available phases, not a "
        f"failure): {undefined} probe run(s)."
    ]


def novel_sections(
    by_novel: Mapping[str, Mapping[str, Any]],
) -> list[tuple[str, list[list[str]], list[str]]]:
    """(novel, Table 2 rows, Arc-gap lines) per novel, for the per-novel breakdown."""
    return [(n, table2_rows(s), gap_lines(s)) for n, s in by_novel.items()]


def judge_lines(summary: Mapping[str, Any]) -> list[str]:
    """Who judged, at which sampling (the paper: deepseek-v4-flash at T = 0)."""
    rows = {r["setting"]: r["used"] for r in summary.get("paper_settings", [])}
    if "judge" not in rows:
        return []
    return [
        f"Judge: {rows['judge']}, sampling {rows.get('judge sampling', '-')}; role-play sampling "
        f"{rows.get('role-play sampling', '-')} (the paper: deepseek-v4-flash at T = 0, role-play "
        "at the server's default)."
    ]


def render(
    summary: Mapping[str, Any],
    title: str,
    by_novel: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[str, str]:
    """(Markdown, HTML) of the report; ``by_novel`` adds the per-novel breakdown (App. L)."""
    rows = table2_rows(summary)
    svg = phase_svg(summary["phase_curves"])
    dropped = len(summary.get("dropped_probes", []))
    notes = [
        "Scores 1-100 (ARCANE judge, Tables 35-36). Per category: mean over probes; Overall: "
        "unweighted mean of the 12 cells (as in the paper's Table 2). The cells cover the "
        "judgements every mode of a model scored; each mode's own figures follow the plot.",
        *judge_lines(summary),
        *missing_lines(summary),
        f"Probes dropped, every phase unavailable (no judge score): {dropped}.",
        *gap_lines(summary),
        *tier_lines(summary),
    ]
    sections = novel_sections(by_novel or {})
    own = table2_rows(summary, own=True)
    own_title = "Each mode over every judgement it scored (sets differ when judgements are missing)"
    md_parts = [f"# {title}", markdown_table(rows), *notes, "## Fidelity along the phases", svg]
    md_parts += [f"## {own_title}", markdown_table(own)]
    if summary.get("paper_settings"):
        table = settings_markdown(summary["paper_settings"])
        md_parts += ["## Settings: the paper's and this run's", "\n".join(table)]
    html_parts = [f"<h1>{html.escape(title)}</h1>", html_table(rows)]
    html_parts += [f"<p>{html.escape(n)}</p>" for n in notes]
    html_parts += ["<h2>Fidelity along the phases</h2>", svg]
    html_parts += [f"<h2>{html.escape(own_title)}</h2>", html_table(own)]
    if sections:
        md_parts.append("## Per novel")
        html_parts.append("<h2>Per novel</h2>")
    for novel, novel_rows, gaps in sections:
        md_parts += [f"### {novel}", markdown_table(novel_rows), *gaps]
        html_parts += [f"<h3>{html.escape(novel)}</h3>", html_table(novel_rows)]
        html_parts += [f"<p>{html.escape(g)}</p>" for g in gaps]
    page = (
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>td,th{{padding:2px 6px;border:1px solid #ccc}}table{{border-collapse:collapse}}</style>"
        + "".join(html_parts)
    )
    return "\n\n".join(md_parts) + "\n", page + "\n"
