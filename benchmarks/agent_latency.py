"""How quickly an `Agent` answers: its first event after `prompt`, and `agent_end` after `abort`.

    python benchmarks/agent_latency.py            # a table
    python benchmarks/agent_latency.py --json     # one JSON object per line
    python benchmarks/agent_latency.py --check    # exit 1 when a target is missed

Every run uses a faux provider (no network). *prompt -> first event*: a trivial reply, timed
from the call to `agent.prompt` to `agent_start` as a subscribed listener sees it (on the run's
thread) and as a caller iterating the returned `AgentRun` sees it (`next(iter(run))`); for
reference, the caller's view again with a long unpaced reply that keeps the run thread busy.
*abort -> agent_end*: `run.abort()` from the main thread while a paced reply is streaming (after
its first text delta) or while a tool blocks in `signal.wait`, timed to `agent_end` in a
listener and to the return of `run.result()`. Each run ends before the next starts. See
README.md beside this file for the figures and how they were taken.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)

RUNS = 20
WARMUP = 3

TARGET_FIRST_EVENT_MS = 2.0
TARGET_ABORT_MS = 20.0

TOKENS_PER_SECOND = 50  # one 4-character chunk every 20 ms
LONG_REPLY = "word " * 2000  # paced: 2,500 chunks, 50 s, never reached; unpaced: ~7 ms of CPU
WAIT_S = 10.0  # the longest any run or wait may take before the benchmark gives up

clock = time.perf_counter


class Bench:
    """An agent on a fresh faux provider, with a listener that timestamps the events we need."""

    def __init__(self, faux: FauxProvider, tools: list[ac.AgentTool] | None = None) -> None:
        self.faux = faux
        self.agent = ac.Agent(model=faux.get_model(), tools=tools or [])
        self.first_delta = threading.Event()
        self.marks: dict[str, float] = {}
        self.ends: list[ac.AgentEndEvent] = []
        self._unsubscribe = self.agent.subscribe(self._listener)

    def _listener(self, event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
        now = clock()
        if isinstance(event, ac.AgentStartEvent):
            self.marks["agent_start"] = now
        elif isinstance(event, ac.AgentEndEvent):
            self.marks["agent_end"] = now
            self.ends.append(event)
        elif (isinstance(event, ac.MessageUpdateEvent)
              and isinstance(event.assistant_message_event, ac.TextDeltaEvent)):
            self.first_delta.set()

    def fresh(self, replies: list[Any]) -> None:
        """Prepare the next run: an empty transcript, `replies` queued, no marks."""
        self.agent.reset()
        self.faux.set_responses(replies)
        self.first_delta.clear()
        self.marks.clear()
        self.ends.clear()

    def finished(self, run: ac.AgentRun, ends_with: Callable[[Any], bool]) -> None:
        """Wait for `run`, then check that its last message is the one the benchmark meant."""
        run.result(WAIT_S)
        if not self.agent.wait_for_idle(WAIT_S):
            raise RuntimeError("the agent did not become idle")
        last = self.ends[-1].messages[-1] if len(self.ends) == 1 else None
        if not ends_with(last):
            raise RuntimeError(f"unexpected end of run: {last!r}")

    def close(self) -> None:
        self._unsubscribe()
        self.faux.unregister()


def _stopped(reason: ac.StopReason) -> Callable[[Any], bool]:
    return lambda m: isinstance(m, ac.AssistantMessage) and m.stop_reason is reason


def _aborted_tool(message: Any) -> bool:
    return isinstance(message, ac.ToolResultMessage) and message.content[0].text == "aborted"


def _ms(start: float, end: float) -> float:
    return (end - start) * 1000


def first_event(bench: Bench, iterate: bool, reply: str = "ok") -> dict[str, float]:
    """One run: ms from `prompt` to its return, to `agent_start` in the listener, in the caller."""
    bench.fresh([faux_assistant_message(reply)])
    start = clock()
    run = bench.agent.prompt("hi")
    returned = clock()
    times = {"returned": _ms(start, returned)}
    if iterate:
        event = next(iter(run))
        times["iterated"] = _ms(start, clock())
        if not isinstance(event, ac.AgentStartEvent):
            raise RuntimeError(f"first event is {event!r}")
    bench.finished(run, _stopped(ac.StopReason.STOP))
    times["listener"] = _ms(start, bench.marks["agent_start"])
    return times


def abort_streaming(bench: Bench) -> dict[str, float]:
    """One run: ms from `abort()` (after the first text delta) to `agent_end` and `result()`."""
    bench.fresh([faux_assistant_message(LONG_REPLY)])
    run = bench.agent.prompt("hi")
    if not bench.first_delta.wait(WAIT_S):
        raise RuntimeError("no text delta arrived")
    start = clock()
    run.abort()
    run.result(WAIT_S)
    returned = clock()
    bench.finished(run, _stopped(ac.StopReason.ABORTED))
    return {"listener": _ms(start, bench.marks["agent_end"]), "result": _ms(start, returned)}


def abort_tool(bench: Bench, started: threading.Event) -> dict[str, float]:
    """One run: ms from `abort()` (while the tool waits on its signal) to `agent_end`."""
    bench.fresh([faux_assistant_message(faux_tool_call("wait", {}))])
    started.clear()
    run = bench.agent.prompt("hi")
    if not started.wait(WAIT_S):
        raise RuntimeError("the tool did not start")
    start = clock()
    run.abort()
    run.result(WAIT_S)
    returned = clock()
    bench.finished(run, _aborted_tool)
    return {"listener": _ms(start, bench.marks["agent_end"]), "result": _ms(start, returned)}


def waiting_tool(started: threading.Event) -> ac.AgentTool:
    """A tool that announces it has started, then waits for the run's abort (or 10 s)."""

    def execute(tool_call_id: str, args: Any, signal: ac.AbortSignal,
                on_update: Any) -> ac.AgentToolResult:
        started.set()
        aborted = signal.wait(WAIT_S)
        return ac.AgentToolResult([ac.TextContent("aborted" if aborted else "done")])

    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    return ac.AgentTool("wait", "Wait until the run is aborted.", schema, execute)


def _samples(fn: Callable[[], dict[str, float]], runs: int, warmup: int) -> dict[str, list[float]]:
    for _ in range(warmup):
        fn()
    out: dict[str, list[float]] = {}
    for _ in range(runs):
        for key, value in fn().items():
            out.setdefault(key, []).append(value)
    return out


def _row(name: str, values: list[float], unit: str, target: float | None) -> dict[str, Any]:
    median = statistics.median(values)
    p90 = statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else median
    return {
        "name": name,
        "median": round(median, 4),
        "p90": round(p90, 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
        "unit": unit,
        "runs": len(values),
        "target": target,
        "ok": None if target is None else median <= target,
    }


def measure_first_event(runs: int = RUNS, warmup: int = WARMUP) -> list[dict[str, Any]]:
    """prompt -> agent_start; the three kinds of run alternate."""
    bench = Bench(register_faux_provider())

    def one_of_each() -> dict[str, float]:
        watched = first_event(bench, iterate=False)
        iterated = first_event(bench, iterate=True)
        busy = first_event(bench, iterate=True, reply=LONG_REPLY)
        return {"listener": watched["listener"], "returned": watched["returned"],
                "iterated": iterated["iterated"], "busy": busy["iterated"]}

    try:
        times = _samples(one_of_each, runs, warmup)
    finally:
        bench.close()
    return [
        _row("prompt -> agent_start, listener (run thread)", times["listener"], "ms",
             TARGET_FIRST_EVENT_MS),
        _row("prompt -> agent_start, next(iter(run)) (caller)", times["iterated"], "ms",
             TARGET_FIRST_EVENT_MS),
        _row("agent.prompt() returns", times["returned"], "ms", None),
        _row("prompt -> agent_start, caller, busy run thread", times["busy"], "ms", None),
    ]


def measure_abort(runs: int = RUNS, warmup: int = WARMUP) -> list[dict[str, Any]]:
    """abort -> agent_end while a paced reply streams, and while a tool waits on its signal."""
    streaming = Bench(register_faux_provider(tokens_per_second=TOKENS_PER_SECOND,
                                             token_size=(1, 1)))
    try:
        stream = _samples(lambda: abort_streaming(streaming), runs, warmup)
    finally:
        streaming.close()
    started = threading.Event()
    tooling = Bench(register_faux_provider(), tools=[waiting_tool(started)])
    try:
        tool = _samples(lambda: abort_tool(tooling, started), runs, warmup)
    finally:
        tooling.close()
    return [
        _row("abort -> agent_end, reply streaming (listener)", stream["listener"], "ms",
             TARGET_ABORT_MS),
        _row("abort -> run.result() returns, reply streaming", stream["result"], "ms", None),
        _row("abort -> agent_end, tool in signal.wait (listener)", tool["listener"], "ms",
             TARGET_ABORT_MS),
        _row("abort -> run.result() returns, tool in signal.wait", tool["result"], "ms", None),
    ]


def _no_threads_left() -> None:
    """Every run thread must have ended; wait briefly, then fail loudly instead of hanging."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(WAIT_S)
            if thread.is_alive():
                raise RuntimeError(f"thread left running: {thread.name}")


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'median':>8}  {'p90':>8}  {'min':>8}  {'max':>8}  "
             f"unit  target"]
    for r in rows:
        target = "" if r["target"] is None else (
            f"<= {r['target']:g} ({'ok' if r['ok'] else 'MISSED'})"
        )
        lines.append(f"{r['name']:<{width}}  {r['median']:>8.3f}  {r['p90']:>8.3f}  "
                     f"{r['min']:>8.3f}  {r['max']:>8.3f}  {r['unit']:<4}  {target}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per measurement")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="untimed runs before those")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    rows = measure_first_event(args.runs, args.warmup) + measure_abort(args.runs, args.warmup)
    _no_threads_left()
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, "
              f"median of {args.runs} runs after {args.warmup} warm-up runs")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
