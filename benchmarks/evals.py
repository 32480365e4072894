"""What `evaluate` adds to a batch: 1,000 cases on a scripted model, with and without the harness.

    python benchmarks/evals.py              # 1,000 cases, 5 rounds, median
    python benchmarks/evals.py --quick      # 200 cases, 3 rounds
    python benchmarks/evals.py --json       # one JSON object with the figures
    python benchmarks/evals.py --check      # exit 1 when the target is missed

Each round times, interleaved and in an order that alternates, (a) `run_batch` of the cases'
inputs, iterated to its end, and (b) `evaluate` of the same cases with three cheap evaluators
(`Equals()`, `Contains()`, `Regex`), which runs the same `run_batch` and then scores every
run and builds the `Report`, `to_json()` included. Both use `max_concurrency=8`, no progress
bar, and a fresh `scripted_model` whose reply is a function of the prompt (one text reply per
run, streamed as fast as it goes). What (b) adds is the harness: wrapping results with their
duration, scoring, and the report. Target (issue 37): (b) at most 1.10 x (a), on the medians.
See README.md beside this file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from agentcore import Agent, UserMessage
from agentcore.batch import run_batch
from agentcore.evals import Case, Contains, Dataset, Equals, Regex, evaluate
from agentcore.testing import scripted_model

TARGET = 1.10


def _reply(context: Any, options: Any, model: Any) -> str:
    user = [m for m in context.messages if isinstance(m, UserMessage)][-1]
    content = user.content if isinstance(user.content, str) else "?"
    return f"The answer to {content} is {len(content)}."


def _dataset(count: int) -> Dataset:
    cases = []
    for i in range(count):
        text = f"question {i}"
        cases.append(Case(text, f"The answer to {text} is {len(text)}."))
    return Dataset(cases)


def _plain(dataset: Dataset) -> float:
    with scripted_model([_reply] * len(dataset)) as fake:
        start = time.perf_counter()
        results = list(run_batch(lambda: Agent(fake.model), [c.input for c in dataset],
                                 max_concurrency=8, progress=False))
        took = time.perf_counter() - start
    assert all(r.error is None for r in results)
    return took


def _harness(dataset: Dataset) -> float:
    with scripted_model([_reply] * len(dataset)) as fake:
        start = time.perf_counter()
        report = evaluate(lambda: Agent(fake.model), dataset,
                          [Equals(), Contains(), Regex(r"is \d+\.$")], progress=False)
        report.to_json()
        took = time.perf_counter() - start
    assert report.passed, report.to_text()[-500:]
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 cases, 3 rounds")
    parser.add_argument("--cases", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args(argv)
    cases = args.cases or (200 if args.quick else 1000)
    rounds = args.rounds or (3 if args.quick else 5)
    dataset = _dataset(cases)
    _plain(_dataset(50))  # warm up: imports, the shared HTTP client, the thread pool
    plain, harness = [], []
    for n in range(rounds):
        order = [(_plain, plain), (_harness, harness)]
        for fn, into in order if n % 2 == 0 else reversed(order):
            into.append(fn(dataset))
    a, b = statistics.median(plain), statistics.median(harness)
    figures = {"cases": cases, "rounds": rounds, "run_batch_s": a, "evaluate_s": b,
               "ratio": b / a, "target": TARGET, "met": b / a <= TARGET,
               "run_batch_all_s": plain, "evaluate_all_s": harness}
    if args.json:
        sys.stdout.write(json.dumps(figures) + "\n")
    else:
        sys.stdout.write(
            f"{cases} cases, median of {rounds} rounds\n"
            f"  run_batch:  {a:.3f} s  ({a / cases * 1e3:.3f} ms a case)\n"
            f"  evaluate:   {b:.3f} s  ({b / cases * 1e3:.3f} ms a case)\n"
            f"  evaluate / run_batch: {b / a:.3f} (target at most {TARGET:.2f}: "
            f"{'met' if b / a <= TARGET else 'MISSED'})\n")
    return 0 if not args.check or b / a <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
