"""Small text helpers shared by the report's table and its HTML page."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ._evaluators import Score


def percentile(values: Sequence[float], q: float) -> float:
    """The `q`-th percentile (0-100) of `values`, interpolated linearly; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def cell(score: Score) -> str:
    """A score as a table cell: `pass`, `FAIL` (with the score when partial) or `ERROR`."""
    if score.error:
        return "ERROR"
    verdict = "pass" if score.passed else "FAIL"
    return verdict if score.score in (0.0, 1.0) else f"{verdict} {score.score:.2f}"


def one_line(text: str, limit: int = 160) -> str:
    """`text` on one line, cut at `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def escape(text: str) -> str:
    """`text` for HTML, quotes included."""
    return html.escape(text, quote=True)
