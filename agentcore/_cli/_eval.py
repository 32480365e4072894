"""`python -m agentcore eval CASES.jsonl`: an agent measured on a dataset from a shell.

The agent is the chat's (its system prompt, the calculator and the clock) on `--model`, or,
without one (or without its API key), on the chat's offline faux model. Each case is scored by
`Answered` (the run ended without an error) and, when the dataset has `expected` values,
`Contains` (the answer holds the case's `expected`; a case without one passes it). The report
is printed as a table; `--json` and `--html` write it too. The exit code is 0 when every case
passes, 1 when some fail, 2 on a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._core import Model
    from ..evals import Case, RunResult

__all__ = ["Answered", "Contains", "run_eval"]


class Answered:
    """An evaluator: the run ended without an error."""

    def __call__(self, case: Case, result: RunResult) -> bool | str:
        return True if result.error is None else f"the run failed: {result.error}"


class Contains:
    """`agentcore.evals.Contains()` on a case with an `expected`.

    A case without one has nothing to compare: it passes (`Answered` judges it).
    """

    def __call__(self, case: Case, result: RunResult) -> Any:
        from ..evals import Contains as Check

        return True if case.expected is None else Check()(case, result)


def run_eval(cases: str, model: Model | None, repeat: int, html: str | None,
             json_path: str | None, out: Any = None) -> int:
    """Evaluate the chat's agent on `cases`; the exit code (0 all pass, 1 some fail, 2 usage)."""
    from .._agent import Agent
    from ..evals import Dataset, evaluate
    from ._demo_tools import SYSTEM_PROMPT, calculator_tool, clock_tool
    from ._offline import register_offline

    out = sys.stdout if out is None else out
    try:
        dataset = Dataset.from_jsonl(cases)
    except (OSError, ValueError, TypeError) as exc:
        print(f"python -m agentcore eval: error: {exc}", file=sys.stderr)
        return 2
    faux = register_offline(None) if model is None else None
    used = faux.get_model() if faux is not None else model
    assert used is not None
    try:
        def make_agent() -> Agent:
            return Agent(used, system_prompt=SYSTEM_PROMPT, tools=[calculator_tool(),
                                                                    clock_tool()])

        evaluators: list[Any] = [Answered()]
        if any(case.expected is not None for case in dataset.cases):
            evaluators.insert(0, Contains())
        report = evaluate(make_agent, dataset, evaluators, repeat=repeat, progress=False)
    finally:
        if faux is not None:
            faux.unregister()
    report.print(file=out)
    if html is not None:
        report.to_html(html)
        out.write(f"report written to {Path(html)}\n")
    if json_path is not None:
        Path(json_path).write_text(report.to_json(indent=2), encoding="utf-8")
        out.write(f"JSON written to {Path(json_path)}\n")
    return 0 if report.passed else 1
