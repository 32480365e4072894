"""What tracing costs per turn: the loop benchmark with `agentcore.otel` on and off.

    python benchmarks/otel_overhead.py            # a table
    python benchmarks/otel_overhead.py --json     # one JSON object per line
    taskset -c 0 python benchmarks/otel_overhead.py   # without the vCPU wake-ups (see README)

The workload is `loop_overhead.py`'s (TURNS turns, each a scripted reply with one tool call,
run on the run's worker thread), timed three ways, interleaved run by run so that a noisy
moment of the machine affects them alike: not instrumented; instrumented with the SDK's
`InMemorySpanExporter` behind a `SimpleSpanProcessor` (every span exported as it ends, on the
thread that ends it); the same with `capture_content=True`. Each turn makes two spans (`chat`
and `execute_tool`), each run one more (`invoke_agent`). The exporter is cleared between runs.
Needs `opentelemetry-sdk` (the test extra installs it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from typing import Any

import loop_overhead
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agentcore as ac
from agentcore.otel import instrument

TURNS = loop_overhead.TURNS
RUNS = 7


def traced_runner(capture_content: bool) -> tuple[Callable[[int], float], Callable[[], None]]:
    """A function timing one instrumented run (µs per turn), and the one that uninstruments."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def run(turns: int) -> float:
        uninstrument = instrument(provider, capture_content=capture_content)
        try:
            wall, _ = loop_overhead.run_loop(turns)
        finally:
            uninstrument()
        spans = len(exporter.get_finished_spans())
        if spans != 2 * turns + 1:
            raise RuntimeError(f"expected {2 * turns + 1} spans, got {spans}")
        exporter.clear()
        return wall / turns * 1e6

    return run, provider.shutdown


def plain(turns: int) -> float:
    """One run not instrumented, in µs per turn."""
    return loop_overhead.run_loop(turns)[0] / turns * 1e6


def measure(runs: int = RUNS, turns: int = TURNS) -> list[dict[str, Any]]:
    """Median (min, max) µs per turn of each way, and the overhead of tracing per turn."""
    traced, close_traced = traced_runner(False)
    content, close_content = traced_runner(True)
    ways = {"not instrumented": plain, "instrumented, in-memory exporter": traced,
            "instrumented, capture_content=True": content}
    try:
        for way in ways.values():  # warm-up
            way(turns)
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(runs):
            for name, way in ways.items():
                times[name].append(way(turns))
    finally:
        close_traced()
        close_content()
    base = statistics.median(times["not instrumented"])
    rows = [_row(f"loop, {name}: time per turn", values) for name, values in times.items()]
    for name in list(ways)[1:]:
        rows.append(_row(f"tracing overhead per turn ({name.split(', ', 1)[1]})",
                         [value - base for value in times[name]]))
    return rows


def _row(name: str, values: list[float]) -> dict[str, Any]:
    return {"name": name, "median": round(statistics.median(values), 1),
            "min": round(min(values), 1), "max": round(max(values), 1), "unit": "us",
            "runs": len(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs of each way")
    parser.add_argument("--turns", type=int, default=TURNS, help="turns per loop run")
    args = parser.parse_args(argv)
    rows = measure(args.runs, args.turns)
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, {args.turns} turns, "
          f"median of {args.runs} runs of each way, interleaved, after a warm-up")
    width = max(len(r["name"]) for r in rows)
    print(f"{'measurement':<{width}}  {'median':>8}  {'min':>8}  {'max':>8}  unit")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['median']:>8.1f}  {r['min']:>8.1f}  {r['max']:>8.1f}"
              f"  {r['unit']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
