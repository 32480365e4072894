"""How promptly a run ends at its edges: tool timeouts, aborts past deaf tools, Ctrl-C at exit.

    python benchmarks/lifecycle.py            # a table
    python benchmarks/lifecycle.py --json     # one JSON object per line
    python benchmarks/lifecycle.py --check    # exit 1 when a target is missed

See README.md beside this file for what is measured, how, and the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import agentcore as ac
from agentcore.providers.faux import (
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)

RUNS = 20
EXIT_RUNS = 5
TIMEOUT_S = 0.05
TARGET_TIMEOUT_OVERSHOOT_MS = 10.0
TARGET_ABORT_DEAF_TOOL_MS = 1100.0  # the loop's 1 s grace, then the run's end
TARGET_EXIT_S = 2.0

TESTS = Path(__file__).resolve().parent.parent / "tests"


def _deaf_tool(release: threading.Event, started: threading.Event,
               timeout: float | None) -> ac.AgentTool:
    """A tool that ignores its signal until `release` is set."""

    def execute(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        started.set()
        release.wait(30)
        return ac.AgentToolResult([ac.TextContent("late")])

    return ac.AgentTool("deaf", "Ignores aborts.", {"type": "object"}, execute, timeout=timeout)


def timeout_overshoot_ms(runs: int) -> list[float]:
    """From a call's start to its timed-out end, minus the timeout (the loop's lateness)."""
    faux = register_faux_provider()
    release, started = threading.Event(), threading.Event()
    tool = _deaf_tool(release, started, TIMEOUT_S)
    out = []
    try:
        for _ in range(runs):
            marks: dict[str, float] = {}

            def sink(event: ac.AgentEvent, marks: dict[str, float] = marks) -> None:
                if isinstance(event, (ac.ToolExecutionStartEvent, ac.ToolExecutionEndEvent)):
                    marks[event.type] = time.perf_counter()

            faux.set_responses([faux_assistant_message([faux_tool_call("deaf", {})],
                                                       stop_reason="toolUse"),
                                faux_assistant_message("done")])
            ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], [tool]),
                              ac.AgentLoopConfig(model=faux.get_model()), sink)
            took = marks["tool_execution_end"] - marks["tool_execution_start"]
            out.append((took - TIMEOUT_S) * 1000)
    finally:
        release.set()
        faux.unregister()
    return out


def abort_deaf_tool_ms(runs: int) -> list[float]:
    """From `abort()` to `agent_end` while the run's only tool ignores its signal."""
    faux = register_faux_provider()
    release = threading.Event()
    out = []
    try:
        for _ in range(max(1, runs // 4)):  # each run takes the whole grace
            started = threading.Event()
            agent = ac.Agent(faux.get_model(), tools=[_deaf_tool(release, started, None)])
            ended: list[float] = []
            agent.subscribe(lambda e, s, ended=ended: ended.append(time.perf_counter())
                            if isinstance(e, ac.AgentEndEvent) else None)
            faux.set_responses([faux_assistant_message([faux_tool_call("deaf", {})],
                                                       stop_reason="toolUse")])
            run = agent.prompt("go")
            started.wait(5)
            began = time.perf_counter()
            agent.abort()
            run.result(5)
            out.append((ended[0] - began) * 1000)
            agent.close()
    finally:
        release.set()
        faux.unregister()
    return out


def exit_after_ctrl_c_s(mode: str, runs: int) -> list[float]:
    """SIGINT to a child whose main thread has ended with a run in flight → the child's end."""
    sys.path.insert(0, str(TESTS / "loop"))  # tests/loop/test_exit.py
    from test_exit import interrupt, start  # the child the tests run

    ready = {"main done", "streaming" if mode == "stream" else "tool started"}
    out = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            _, took = interrupt(start(Path(tmp), mode), ready)
        out.append(took)
    return out


def _row(name: str, values: list[float], unit: str, target: float | None) -> dict[str, Any]:
    median = statistics.median(values)
    return {"name": name, "median": round(median, 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "unit": unit, "runs": len(values),
            "target": target, "ok": None if target is None else median <= target}


def measure(runs: int, exit_runs: int) -> list[dict[str, Any]]:
    rows = [
        _row(f"tool timeout ({TIMEOUT_S * 1000:g} ms): lateness of the error result",
             timeout_overshoot_ms(runs), "ms", TARGET_TIMEOUT_OVERSHOOT_MS),
        _row("abort -> agent_end, tool ignoring its signal", abort_deaf_tool_ms(runs), "ms",
             TARGET_ABORT_DEAF_TOOL_MS),
    ]
    for mode, what in (("stream", "reply streaming"), ("honour", "tool honouring its signal"),
                       ("ignore", "tool ignoring its signal")):
        rows.append(_row(f"Ctrl-C at exit -> process end, {what}",
                         exit_after_ctrl_c_s(mode, exit_runs), "s", TARGET_EXIT_S))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per measurement")
    parser.add_argument("--exit-runs", type=int, default=EXIT_RUNS, help="child processes per mode")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    rows = measure(args.runs, args.exit_runs)
    for row in rows:
        if args.json:
            sys.stdout.write(json.dumps(row) + "\n")
        else:
            target = "" if row["target"] is None else (
                f"<= {row['target']:g} ({'ok' if row['ok'] else 'MISSED'})")
            sys.stdout.write(f"{row['name']:62} {row['median']:9} {row['min']:9} "
                             f"{row['max']:9}  {row['unit']:3} {target}\n")
    return 1 if args.check and any(row["ok"] is False for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
