"""The profile evaluation report as text, Markdown and HTML, in the paper's Table 1 layout.

Table 1 of CharacterHub has one row pair (DRInfo, Profile) per dimension, in the order
Personality, Ability, Experience, Relationship, Identity, Appearance, Other, then Overall, and
one column group (SS, IR, CR, as percentages) per compared setting; here one group per
profiling method. A per-character table, the knowledge density of each text and the reference
pages used (with leakage) follow.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from personae.evals.paper_settings import settings_markdown

TABLE1_ORDER = (
    "personality",
    "ability",
    "experience",
    "relationship",
    "identity",
    "appearance",
    "other",
)
"""Table 1's row order of the seven dimensions (Overall comes last)."""
_TEXT_NAMES = {"drinfo": "DRInfo", "profile": "Profile"}
_RATES = ("support_score", "irrelevant_rate", "contradiction_rate")


def percent(value: float | None) -> str:
    """A rate as a percentage with two decimals, ``-`` when unknown (no point)."""
    return "-" if value is None else f"{100 * value:.2f}"


def _density(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _leak(text: Mapping[str, Any]) -> str:
    flag = text["reference_in_sources"]
    if flag is None:
        return "unknown"
    return f"yes ({', '.join(text['leaked_source_ids'])})" if flag else "no"


def table1_rows(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of Table 1: ``Type, Source`` then SS/IR/CR for each method."""
    summary: Mapping[str, Mapping[str, Any]] = report["summary"]
    methods = sorted(summary)
    header = ["Type", "Source"] + [f"{m} {r}" for m in methods for r in ("SS", "IR", "CR")]
    rows: list[list[str]] = []
    for dimension in (*TABLE1_ORDER, "overall"):
        for kind in ("drinfo", "profile"):
            if not any(kind in summary[m] for m in methods):
                continue
            row = [dimension.capitalize(), _TEXT_NAMES[kind]]
            for method in methods:
                pooled = summary[method].get(kind)
                if pooled is None:
                    row += ["-", "-", "-"]
                    continue
                scores = (
                    pooled["overall"]
                    if dimension == "overall"
                    else pooled["per_dimension"][dimension]
                )
                row += [percent(scores[r]) for r in _RATES]
            rows.append(row)
    return header, rows


def character_rows(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the per-character table."""
    header = ["Character", "Method", "Text", "N", "SS", "IR", "CR", "Density", "Leakage"]
    rows = []
    for character in report["characters"]:
        for text in character["texts"]:
            overall = text["overall"]
            rows.append(
                [
                    character["character"],
                    text["method"],
                    _TEXT_NAMES[text["text"]],
                    str(overall["n"]),
                    *(percent(overall[r]) for r in _RATES),
                    _density(text["density"]["per_1k_tokens"]),
                    _leak(text),
                ]
            )
    return header, rows


def density_rows(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Mean knowledge density (points per 1k tokens of the same text) per text."""
    rows = [["Wiki page (reference)", _density(report.get("reference_mean_density"))]]
    for method, texts in sorted(report["summary"].items()):
        for kind in ("drinfo", "profile"):
            if kind in texts:
                rows.append(
                    [f"{method} {_TEXT_NAMES[kind]}", _density(texts[kind]["mean_density"])]
                )
    return ["Text", "Points per 1k tokens"], rows


def reference_rows(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The reference page of each character, how it was found and what it yielded."""
    rows = []
    for character in report["characters"]:
        ref = character["reference"]
        rows.append(
            [
                character["character"],
                ref["url"] or ref["source"],
                ref["found_by"],
                str(ref["knowledge_points"]),
                str(ref["dropped_points"]),
                str(ref.get("unquoted_points", 0)),
            ]
        )
    return ["Character", "Reference", "Found by", "Points", "Dropped", "Unquoted"], rows


def evidence_lines(report: Mapping[str, Any]) -> list[str]:
    """What the evidence-quote filter dropped or would drop, and each character left out.

    The filter is ours and opt-in (``--verify-evidence``); either way the reader sees how many
    points it concerns, so |K| under the paper's protocol and under ours can be compared.
    """
    unquoted = sum(c["reference"].get("unquoted_points", 0) for c in report["characters"])
    verb = "dropped" if report.get("evidence_verified") else "would drop (off by default)"
    lines = [
        f"evidence-quote filter (--verify-evidence): {verb} {unquoted} point(s) whose evidence "
        "is not a quote of the reference page"
    ]
    lines += [f"left out: {c['character']}: {c['left_out']}" for c in report.get("left_out", [])]
    return lines


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _settings_lines(report: Mapping[str, Any]) -> list[str]:
    lines = []
    for role, setting in report["settings"].items():
        described = ", ".join(f"{k} {v}" for k, v in setting.items())
        lines.append(f"- {role}: {described}")
    lines.append(f"- extraction: {report['extraction']}; judge batch: {report['judge_batch']}")
    return lines


def leakage_warnings(report: Mapping[str, Any]) -> list[str]:
    """One line per text whose profile used the reference page as a source."""
    return [
        f"{c['character']} ({t['method']}): the reference page is among the sources "
        f"({', '.join(t['leaked_source_ids'])})"
        for c in report["characters"]
        for t in c["texts"]
        if t["reference_in_sources"] and t["text"] == "profile"
    ]


def markdown_report(report: Mapping[str, Any]) -> str:
    """The whole report as Markdown (Table 1 first)."""
    count = len(report["characters"])
    lines = [
        "# CharacterHub profile evaluation",
        "",
        *[f"> **Warning:** {w}" for w in report.get("warnings", [])],
        *([""] if report.get("warnings") else []),
        f"{count} character(s); scores are percentages micro-averaged over all knowledge points "
        "of all characters (SS = Sup + 0.5·Par over N, IR = Irr/N, CR = Con/N).",
        "",
        "## Table 1 layout",
        "",
        *_markdown_table(*table1_rows(report)),
        "",
        "## Per character",
        "",
        *_markdown_table(*character_rows(report)),
        "",
        "## Knowledge density",
        "",
        *_markdown_table(*density_rows(report)),
        "",
        "## References",
        "",
        *_markdown_table(*reference_rows(report)),
        "",
    ]
    lines += [*(f"- {line}" for line in evidence_lines(report)), ""]
    warnings = leakage_warnings(report)
    if warnings:
        lines += ["**Leakage:**", "", *(f"- {w}" for w in warnings), ""]
    degraded = report.get("degraded") or {}
    if degraded.get("total"):
        lines += [
            f"**Degraded:** {degraded['total']} model answer(s) still invalid after retries; "
            f"{degraded.get('judgments', 0)} judgment(s) left out of the scores "
            "(`verdict: null` in the JSON report).",
            "",
        ]
    lines += ["## Models and settings", "", *_settings_lines(report), ""]
    if report.get("paper_settings"):
        lines += ["## Settings: the paper's and this run's", ""]
        lines += [*settings_markdown(report["paper_settings"]), ""]
    return "\n".join(lines)


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_report(report: Mapping[str, Any]) -> str:
    """The whole report as a standalone HTML page."""
    sections = [
        ("Table 1 layout", _html_table(*table1_rows(report))),
        ("Per character", _html_table(*character_rows(report))),
        ("Knowledge density", _html_table(*density_rows(report))),
        ("References", _html_table(*reference_rows(report))),
    ]
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in leakage_warnings(report))
    settings = "".join(f"<li>{html.escape(line[2:])}</li>" for line in _settings_lines(report))
    body = "".join(f"<h2>{html.escape(t)}</h2>{table}" for t, table in sections)
    evidence = "".join(f"<li>{html.escape(line)}</li>" for line in evidence_lines(report))
    body += f"<h2>Evidence and characters left out</h2><ul>{evidence}</ul>"
    if warnings:
        body += f"<h2>Leakage</h2><ul>{warnings}</ul>"
    body += f"<h2>Models and settings</h2><ul>{settings}</ul>"
    style = "table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}"
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>CharacterHub profile evaluation</title><style>{style}</style></head>"
        f"<body><h1>CharacterHub profile evaluation</h1>{body}</body></html>\n"
    )


def _plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]


def format_report(report: Mapping[str, Any]) -> str:
    """The readable summary printed after a run: Table 1, per character, density, leakage."""
    lines = ["Table 1 layout (percent, micro-averaged over all knowledge points)"]
    lines += _plain_table(*table1_rows(report))
    lines += ["", "Per character"] + _plain_table(*character_rows(report))
    lines += ["", "Knowledge density (points per 1k tokens of the same text)"]
    lines += _plain_table(*density_rows(report))
    lines += ["", "References"] + _plain_table(*reference_rows(report))
    lines += evidence_lines(report)
    lines += [f"leakage: {w}" for w in leakage_warnings(report)]
    usage = report["usage"]
    lines += [
        "",
        f"LLM calls {usage['llm_calls']}, cache hits {usage['cache_hits']}, "
        f"tokens {usage['input_tokens'] + usage['output_tokens']:,}",
    ]
    return "\n".join(lines)
