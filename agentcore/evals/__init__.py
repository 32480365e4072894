"""Evals: run an agent over a dataset of cases and score every answer (API §26).

    from agentcore.evals import Case, Contains, Dataset, ToolCalled, evaluate

    dataset = Dataset.from_jsonl("cases.jsonl")      # {"input": ..., "expected": ...} a line
    report = evaluate(lambda: Agent(model, tools=[search]), dataset,
                      [Contains(), ToolCalled("search"), MaxCost(0.01)], repeat=3)
    report.print()                                   # a table, pass rates, cost, p50/p95
    report.to_html("report.html")                    # one self-contained page
    regressions = report.compare(last_week)          # the cases that got worse

`evaluate` runs on `agentcore.batch.run_batch` (threads, or a Dask cluster through `executor`;
resumable through `store`). An evaluator is any `fn(case, result)` returning a bool, a float in
[0, 1] (a pass at 0.5 and above), a str (a failure and its reason) or a `Score`; the built-in
ones are `Equals`, `Contains`, `Regex`, `ToolCalled`, `MaxCost`, `MaxDuration` and `Judge` (an
LLM judge). An evaluator that raises gives an error score; the report stands.

Layer 6: builds on `batch` (layer 5) and the `Agent`.
"""

from __future__ import annotations

from ._cases import Case, Dataset
from ._evaluate import evaluate
from ._evaluators import (
    Contains,
    Equals,
    Evaluator,
    Judge,
    JudgeVerdict,
    MaxCost,
    MaxDuration,
    Regex,
    RunResult,
    Score,
    ToolCalled,
    evaluator_name,
)
from ._report import Regression, Report, Row

__all__ = [
    "Case",
    "Contains",
    "Dataset",
    "Equals",
    "Evaluator",
    "Judge",
    "JudgeVerdict",
    "MaxCost",
    "MaxDuration",
    "Regex",
    "Regression",
    "Report",
    "Row",
    "RunResult",
    "Score",
    "ToolCalled",
    "evaluate",
    "evaluator_name",
]
