"""`Report`: what an eval found, as rows, summaries, JSON, a text table and an HTML page."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import attrs

from .._core import AgentMessage, Cost, Usage, from_dict, to_dict
from ._cases import Case
from ._evaluators import RunResult, Score
from ._format import cell, one_line, percentile
from ._html import page


@attrs.frozen(slots=True)
class Row:
    """One run of one case (`repeat` counts from 0) and every evaluator's `Score` of it."""

    case: Case
    repeat: int
    result: RunResult
    scores: dict[str, Score]

    @property
    def cost(self) -> float:
        """What the run cost in USD (`usage.cost.total`)."""
        return self.result.usage.cost.total


@attrs.frozen(slots=True)
class Regression:
    """A case that got worse under one evaluator, from `Report.compare`.

    `baseline` and `current` are the case's mean score under that evaluator over its repeats
    (an error counts 0); `passed_before`/`passed_now` the share of its runs that passed.
    """

    case: str
    evaluator: str
    baseline: float
    current: float
    passed_before: float
    passed_now: float

    def __str__(self) -> str:
        return (f"{self.case} / {self.evaluator}: score {self.baseline:.2f} -> "
                f"{self.current:.2f}, passed {self.passed_before:.0%} -> {self.passed_now:.0%}")


@attrs.frozen(slots=True)
class Report:
    """What an eval found.

    `rows`: one per case and repeat, in dataset order, repeat by repeat; `evaluators`: their
    names (as the rows' `scores` key them); `repeat`: how many times each case ran.
    """

    rows: list[Row]
    evaluators: list[str]
    repeat: int = 1

    def pass_rate(self, evaluator: str) -> float:
        """The share of runs that `evaluator` passed (an error is not a pass)."""
        return _rate([row.scores[evaluator].passed for row in self.rows])

    def spread(self, evaluator: str) -> float:
        """How much `evaluator`'s pass rate varies over the repeats.

        The highest pass rate of one round of the dataset minus the lowest (0.0 with
        `repeat=1`).
        """
        rates = [_rate([r.scores[evaluator].passed for r in self.rows if r.repeat == n])
                 for n in range(self.repeat)]
        return max(rates) - min(rates) if rates else 0.0

    @property
    def cost(self) -> float:
        """What all the runs cost, in USD (judges' own calls not included)."""
        return sum(row.cost for row in self.rows)

    @property
    def durations(self) -> list[float]:
        """Every run's duration in seconds, in row order."""
        return [row.result.duration for row in self.rows]

    @property
    def passed(self) -> bool:
        """Whether every evaluator passed every run."""
        return all(s.passed for row in self.rows for s in row.scores.values())

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the shape `to_json` gives)."""
        durations = self.durations
        return {
            "cases": [{
                "name": row.case.name,
                "input": _json_ready(row.case.input),
                "repeat": row.repeat,
                "scores": {name: {"score": s.score, "passed": s.passed, "reason": s.reason,
                                  "error": s.error} for name, s in row.scores.items()},
                "cost": row.cost,
                "duration": row.result.duration,
                "error": row.result.error,
            } for row in self.rows],
            "evaluators": {name: {"pass_rate": self.pass_rate(name),
                                  "spread": self.spread(name)} for name in self.evaluators},
            "cost": self.cost,
            "duration": {"p50": percentile(durations, 50), "p95": percentile(durations, 95)},
            "repeat": self.repeat,
        }

    def to_json(self, indent: int | None = None) -> str:
        """The report as a JSON string (API §26).

        `{"cases": [{"name", "input", "repeat", "scores":
        {<evaluator>: {"score", "passed", "reason", "error"}}, "cost", "duration", "error"}],
        "evaluators": {<evaluator>: {"pass_rate", "spread"}}, "cost", "duration": {"p50",
        "p95"}, "repeat"}`: costs in USD, durations in seconds.
        """
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Report:
        """A report read back from `to_json()`, for `compare` against a run kept on disk.

        What the JSON holds comes back: each row's case (name and input), scores, cost (as
        `usage.cost.total`), duration and error; not the runs' messages, text or output.
        """
        data = json.loads(text)
        rows = []
        for item in data["cases"]:
            raw = item["input"]
            input = raw if isinstance(raw, str) else from_dict(list[AgentMessage], raw)
            scores = {name: Score(s["score"], s["passed"], s.get("reason", ""),
                                  s.get("error", False))
                      for name, s in item["scores"].items()}
            usage = Usage(cost=Cost(total=item.get("cost", 0.0)))
            result = RunResult(usage=usage, duration=item.get("duration", 0.0),
                               error=item.get("error"))
            rows.append(Row(Case(input, name=item["name"]), item.get("repeat", 0), result,
                            scores))
        return cls(rows, list(data["evaluators"]), data.get("repeat", 1))

    def print(self, file: TextIO | None = None) -> None:
        """Write the report as a plain-text table to `file` (default: stdout)."""
        out = sys.stdout if file is None else file
        out.write(self.to_text())

    def to_text(self) -> str:
        """The table `print` writes: a line per run, then the failures' reasons, then totals."""
        headers = ["case", *(["#"] if self.repeat > 1 else []), *self.evaluators,
                   "cost $", "seconds"]
        table = [headers]
        for row in self.rows:
            table.append([str(row.case.name), *([str(row.repeat)] if self.repeat > 1 else []),
                          *(cell(row.scores[name]) for name in self.evaluators),
                          f"{row.cost:.6f}", f"{row.result.duration:.3f}"])
        widths = [max(len(line[i]) for line in table) for i in range(len(headers))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                 for line in table]
        lines.insert(1, "  ".join("-" * w for w in widths))
        reasons = [f"  {row.case.name}{f' #{row.repeat}' if self.repeat > 1 else ''} / {name}: "
                   f"{one_line(score.reason)}"
                   for row in self.rows for name, score in row.scores.items()
                   if not score.passed and score.reason]
        if reasons:
            lines += ["", "Failures:", *reasons]
        lines.append("")
        for name in self.evaluators:
            spread = f" (spread {self.spread(name):.0%})" if self.repeat > 1 else ""
            lines.append(f"{name}: {self.pass_rate(name):.0%} passed{spread}")
        durations = self.durations
        lines.append(f"cost: ${self.cost:.6f}; duration p50 {percentile(durations, 50):.3f} s, "
                     f"p95 {percentile(durations, 95):.3f} s")
        return "\n".join(lines) + "\n"

    def to_html(self, path: str | os.PathLike[str]) -> None:
        """Write one self-contained HTML page to `path`.

        The page holds the summary, a chart of the scores (inline SVG: a bar of each
        evaluator's pass rate, a square per run and evaluator) and the table. It loads
        nothing: no script, no stylesheet or font from elsewhere.
        """
        Path(path).write_text(page(self), encoding="utf-8")

    def compare(self, baseline: Report) -> list[Regression]:
        """The cases that got worse since `baseline`, as `Regression`s.

        For each case (by name) and evaluator both reports have, a `Regression` when its mean
        score over its repeats is lower here than in `baseline`. In this report's order; empty
        when nothing got worse.
        """
        worse = []
        for name in _names(self):
            for evaluator in self.evaluators:
                before = _scores(baseline, name, evaluator)
                now = _scores(self, name, evaluator)
                if not before or not now:
                    continue
                mean_before, mean_now = _mean_score(before), _mean_score(now)
                if mean_now < mean_before:
                    worse.append(Regression(name, evaluator, mean_before, mean_now,
                                            _rate([s.passed for s in before]),
                                            _rate([s.passed for s in now])))
        return worse


def _rate(passed: Sequence[bool]) -> float:
    return sum(passed) / len(passed) if passed else 0.0


def _names(report: Report) -> list[str]:
    return list(dict.fromkeys(str(row.case.name) for row in report.rows))


def _scores(report: Report, case: str, evaluator: str) -> list[Score]:
    return [row.scores[evaluator] for row in report.rows
            if row.case.name == case and evaluator in row.scores]


def _mean_score(scores: Sequence[Score]) -> float:
    return sum(s.score or 0.0 for s in scores) / len(scores)


def _json_ready(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return to_dict(list(value))
    return to_dict(value)
