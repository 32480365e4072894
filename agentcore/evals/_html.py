"""The self-contained HTML page of a `Report`: styles inline, an SVG chart, no script."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._evaluators import Score
from ._format import cell, escape, one_line, percentile

if TYPE_CHECKING:
    from ._report import Report

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-top: 1em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.pass { background: #e6f4ea; } td.fail { background: #fde8e8; } td.error { background: #fff4d6; }
small { color: #555; }
"""

_BAR = 18
_SQUARE = 14


def _colour(score: Score) -> str:
    if score.error:
        return "#e0b000"
    value = score.score or 0.0
    red, green = int(220 * (1 - value)), int(170 * value + 40)
    return f"rgb({red},{green},60)"


def _chart(report: Report) -> str:
    """Bars of each evaluator's pass rate, then a square per run (a column) and evaluator."""
    label = 160
    bar_width = 300
    runs = len(report.rows)
    width = max(label + bar_width + 60, label + runs * (_SQUARE + 2) + 10)
    bars_height = len(report.evaluators) * (_BAR + 6)
    height = bars_height * 2 + 30
    parts = [f'<svg role="img" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}">']
    for i, name in enumerate(report.evaluators):
        y = i * (_BAR + 6)
        rate = report.pass_rate(name)
        parts.append(f'<text x="0" y="{y + 13}" font-size="12">{escape(name)}</text>')
        parts.append(f'<rect x="{label}" y="{y}" width="{bar_width}" height="{_BAR}" '
                     'fill="#eee"/>')
        parts.append(f'<rect x="{label}" y="{y}" width="{bar_width * rate:.1f}" '
                     f'height="{_BAR}" fill="#3a9a5b"><title>{escape(name)}: '
                     f'{rate:.0%} passed</title></rect>')
        parts.append(f'<text x="{label + bar_width + 6}" y="{y + 13}" font-size="12">'
                     f'{rate:.0%}</text>')
    top = bars_height + 20
    for i, name in enumerate(report.evaluators):
        y = top + i * (_BAR + 6)
        parts.append(f'<text x="0" y="{y + 11}" font-size="12">{escape(name)}</text>')
        for j, row in enumerate(report.rows):
            score = row.scores[name]
            tip = f"{row.case.name} #{row.repeat}: {cell(score)} {one_line(score.reason)}"
            parts.append(f'<rect x="{label + j * (_SQUARE + 2)}" y="{y}" width="{_SQUARE}" '
                         f'height="{_SQUARE}" fill="{_colour(score)}"><title>{escape(tip)}'
                         '</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


def _table(report: Report) -> str:
    repeat = report.repeat > 1
    head = "".join(f"<th>{escape(h)}</th>" for h in
                   ["case", *(["#"] if repeat else []), *report.evaluators, "cost $", "seconds"])
    body = []
    for row in report.rows:
        cells = [f"<td>{escape(str(row.case.name))}</td>"]
        if repeat:
            cells.append(f"<td>{row.repeat}</td>")
        for name in report.evaluators:
            score = row.scores[name]
            kind = "error" if score.error else "pass" if score.passed else "fail"
            reason = f"<br><small>{escape(one_line(score.reason, 300))}</small>" \
                if score.reason else ""
            cells.append(f'<td class="{kind}">{escape(cell(score))}{reason}</td>')
        cells.append(f"<td>{row.cost:.6f}</td><td>{row.result.duration:.3f}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def page(report: Report) -> str:
    """The whole page, as one string."""
    durations = report.durations
    summary = "".join(
        f"<li>{escape(name)}: {report.pass_rate(name):.0%} passed"
        + (f" (spread {report.spread(name):.0%})" if report.repeat > 1 else "") + "</li>"
        for name in report.evaluators)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Eval report</title><style>{_STYLE}</style></head><body>"
        f"<h1>Eval report</h1><p>{len(report.rows)} runs"
        f"{f' ({report.repeat} per case)' if report.repeat > 1 else ''}; "
        f"cost ${report.cost:.6f}; duration p50 {percentile(durations, 50):.3f} s, "
        f"p95 {percentile(durations, 95):.3f} s</p><ul>{summary}</ul>"
        f"{_chart(report)}{_table(report)}</body></html>\n")
