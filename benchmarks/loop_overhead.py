"""How much the agent loop itself costs per turn, and how long `import agentcore` takes.

    python benchmarks/loop_overhead.py            # a table
    python benchmarks/loop_overhead.py --json     # one JSON object per line
    python benchmarks/loop_overhead.py --check    # exit 1 when a target is missed
    python benchmarks/loop_overhead.py --limits   # plus the loop with every usage limit set

The loop runs TURNS turns, each a scripted reply with one tool call to a trivial tool; the last
tool result asks the loop to stop (`terminate=True`), so every turn has exactly one tool call
and no hook runs. Replies come from a `stream_fn` that returns an `AssistantMessageEventStream`
pre-filled with prebuilt events (`start`, `toolcall_start`, `toolcall_end`, `done`): no
network, no pacing, no chunking, so what is measured is the loop, its events and its tool
execution. Every call runs off the run's thread, on the run's own worker, so each turn pays
one thread hand-off; its floor, a bare round trip to a parked thread and back, is measured in
the same rounds, and the target (API §22) is on the loop's time per turn minus that floor,
round by round. See README.md beside this file for the figures and how they were taken.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any

import agentcore as ac

TURNS = 200
RUNS = 5
EDGE = 20  # turns compared at each end of a run to see whether cost grows with history

TARGET_OVER_FLOOR_US = 30.0
"""The loop's time per turn may exceed the thread hand-off floor of the same round by this."""
TARGET_GROWTH = 1.2
UPSTREAM_US_PER_TURN = 18.0
"""pi-agent-core (TypeScript, warmed up) on the same workload, as measured for issue 11."""
TARGET_IMPORT_MS = 300.0

MODEL = ac.Model("bench", "Bench", "bench", "bench", "http://localhost:0")
SCHEMA = {
    "type": "object",
    "properties": {"turn": {"type": "integer"}, "last": {"type": "boolean"}},
    "required": ["turn"],
    "additionalProperties": False,
}


def _noop(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
    return ac.AgentToolResult([ac.TextContent("ok")], terminate=True if "last" in args else None)


TOOL = ac.AgentTool("noop", "Do nothing.", SCHEMA, _noop)
LIMITS = ac.UsageLimits(max_turns=10**6, max_model_calls=10**6, max_tool_calls=10**6,
                        max_input_tokens=10**9, max_output_tokens=10**9,
                        max_total_tokens=10**9, max_cost=10.0**6)
"""Every limit set, none reached: each model call and tool batch is checked against all."""


def _script(turns: int) -> list[tuple[Any, ...]]:
    """The events of every reply, built before timing (a provider's parsing is not measured)."""
    replies = []
    for i in range(turns):
        args: dict[str, Any] = {"turn": i, "last": True} if i == turns - 1 else {"turn": i}
        call = ac.ToolCall(f"call_{i}", "noop", args)
        empty = ac.AssistantMessage([], "bench", "bench", "bench")
        opened = ac.AssistantMessage([ac.ToolCall(call.id, "noop", {})], "bench", "bench", "bench")
        final = ac.AssistantMessage([call], "bench", "bench", "bench",
                                    stop_reason=ac.StopReason.TOOL_USE)
        replies.append((
            ac.StartEvent(empty),
            ac.ToolCallStartEvent(0, opened),
            ac.ToolCallEndEvent(0, call, final),
            ac.DoneEvent(ac.StopReason.TOOL_USE, final),
        ))
    return replies


def _scripted_stream_fn(replies: list[tuple[Any, ...]]) -> ac.StreamFn:
    served = iter(replies)

    def stream_fn(model: ac.Model, context: ac.Context,
                  options: ac.StreamOptions) -> ac.AssistantMessageEventStream:
        out = ac.AssistantMessageEventStream()
        for event in next(served):
            out.push(event)
        return out

    return stream_fn


def run_loop(turns: int = TURNS, executor: Executor | None = None,
             limits: ac.UsageLimits | None = None) -> tuple[float, list[float]]:
    """One run: wall seconds from call to return, and each turn's duration in seconds."""
    replies = _script(turns)
    marks: list[float] = []
    clock = time.perf_counter

    def sink(event: ac.AgentEvent) -> None:
        if isinstance(event, (ac.TurnStartEvent, ac.AgentEndEvent)):
            marks.append(clock())

    config = ac.AgentLoopConfig(model=MODEL, tool_executor=executor, limits=limits)
    context = ac.AgentContext("", [], [TOOL])
    stream_fn = _scripted_stream_fn(replies)
    start = clock()
    messages = ac.run_agent_loop([ac.UserMessage("go")], context, config, sink,
                                 stream_fn=stream_fn)
    wall = clock() - start
    if len(messages) != 1 + 2 * turns or len(marks) != turns + 1:
        raise RuntimeError(f"unexpected run: {len(messages)} messages, {len(marks)} marks")
    return wall, [b - a for a, b in itertools.pairwise(marks)]


def run_floor(turns: int = TURNS) -> float:
    """The same work as plain Python over dicts: the least any loop could cost."""
    start = time.perf_counter()
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages.append({"role": "user", "content": "go"})
        call = {"type": "toolCall", "id": f"call_{i}", "name": "noop", "arguments": {"turn": i}}
        messages.append({"role": "assistant", "content": [call], "stopReason": "toolUse"})
        result = _noop(call["id"], call["arguments"], None, None)  # type: ignore[arg-type]
        messages.append({"role": "toolResult", "toolCallId": call["id"], "toolName": "noop",
                         "content": result.content, "isError": False})
    return time.perf_counter() - start


def import_time_ms(package: str = "agentcore", env: dict[str, str] | None = None) -> float:
    """Cumulative `-X importtime` of a top-level package, in ms (one fresh interpreter).

    `env` replaces the child's environment (default: this process's).
    """
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {package}"],
                          capture_output=True, text=True, check=True, timeout=60, env=env)
    line = re.compile(rf"^import time:\s*(\d+)\s*\|\s*(\d+)\s*\|\s*{re.escape(package)}\s*$",
                      re.M)
    match = line.search(done.stderr)
    if match is None:
        raise RuntimeError(f"no {package!r} line in the -X importtime output")
    return int(match[2]) / 1000


def process_wall_ms(code: str) -> float:
    """Wall time of `python -c code` in ms, interpreter start-up included."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    return (time.perf_counter() - start) * 1000


def _row(name: str, values: list[float], unit: str, target: float | None) -> dict[str, Any]:
    median = statistics.median(values)
    return {
        "name": name,
        "median": round(median, 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "unit": unit,
        "runs": len(values),
        "target": target,
        "ok": None if target is None else median <= target,
    }


def run_loop_without_gc(turns: int = TURNS) -> float:
    """`run_loop` with the cyclic garbage collector off: how much of a turn is collection."""
    gc.disable()
    try:
        return run_loop(turns)[0]
    finally:
        gc.enable()


def run_loop_on_pool(turns: int = TURNS) -> float:
    """`run_loop` with the tool on a one-thread pool: adds a thread hand-off per call."""
    with ThreadPoolExecutor(1) as pool:
        return run_loop(turns, pool)[0]


class _Here(ThreadPoolExecutor):
    """An executor that runs each call where it is submitted: the loop without a hand-off.

    The loop ignores what `submit` returns (the call reports through the run's inbox), so
    every call gets the same settled future.
    """

    _done: Future[Any] = Future()
    _done.set_result(None)

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        fn(*args, **kwargs)
        return self._done


def run_loop_here(turns: int = TURNS) -> float:
    """`run_loop` with each call run on the run's thread: the loop's own work, no hand-off."""
    with _Here(1) as here:
        return run_loop(turns, here)[0]


def run_loop_with_limits(turns: int = TURNS) -> float:
    """`run_loop` with every usage limit set (`LIMITS`, none reached)."""
    return run_loop(turns, limits=LIMITS)[0]


def thread_round_trip_us(count: int = 2000, gap_us: float = 0.0) -> float:
    """One hand-off to another thread and back (SimpleQueue both ways), in µs.

    The floor of any tool run off the run's thread, whoever's pool it is: what the loop must
    do per call, one submit to a parked worker and one result back to the parked run thread,
    and nothing else. On a VM it depends on whether the other CPU sleeps (about 5 µs busy,
    35-90 µs idle). With `gap_us` the calling thread first spins that long before each round
    trip (not counted), as the loop works between its calls: the worker's CPU then idles
    longer between hand-offs, as it does under the loop.
    """
    import queue
    import threading

    work: queue.SimpleQueue[Any] = queue.SimpleQueue()
    done: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def serve() -> None:
        while (item := work.get()) is not None:
            done.put(item)

    thread = threading.Thread(target=serve)
    thread.start()
    clock, gap = time.perf_counter, gap_us / 1e6
    try:
        for _ in range(100):
            work.put(1)
            done.get()
        if not gap:
            start = clock()
            for _ in range(count):
                work.put(1)
                done.get()
            return (clock() - start) / count * 1e6
        total = 0.0
        for _ in range(count):
            until = clock() + gap
            while clock() < until:
                pass
            start = clock()
            work.put(1)
            done.get()
            total += clock() - start
        return total / count * 1e6
    finally:
        work.put(None)
        thread.join()


def measure_loop(runs: int = RUNS, turns: int = TURNS,
                 limits: bool = False) -> list[dict[str, Any]]:
    """The loop measurements, each the median (and min, max) of `runs` rounds after a warm-up.

    The variants and the thread hand-off floor run interleaved with the main measurement, so
    that a noisy moment of the machine affects them alike; "loop - floor" is taken round by
    round. `limits` adds the loop with every usage limit set.
    """
    run_loop(turns)
    run_loop_without_gc(turns)
    run_loop_on_pool(turns)
    run_loop_here(turns)
    run_floor(turns)
    thread_round_trip_us(200)
    if limits:
        run_loop_with_limits(turns)
    per_turn, growth, floor, ratio, no_gc, pool, hop, over, here, paced = ([] for _ in range(10))
    limited: list[float] = []
    for _ in range(runs):
        wall, durations = run_loop(turns)
        hop.append(thread_round_trip_us())
        floor_wall = run_floor(turns)
        per_turn.append(wall / turns * 1e6)
        over.append(per_turn[-1] - hop[-1])
        growth.append(statistics.fmean(durations[-EDGE:]) / statistics.fmean(durations[:EDGE]))
        floor.append(floor_wall / turns * 1e6)
        ratio.append(wall / floor_wall)
        here.append(run_loop_here(turns) / turns * 1e6)
        paced.append(thread_round_trip_us(turns, gap_us=here[-1]))
        no_gc.append(run_loop_without_gc(turns) / turns * 1e6)
        pool.append(run_loop_on_pool(turns) / turns * 1e6)
        if limits:
            limited.append(run_loop_with_limits(turns) / turns * 1e6)
    variant = ([_row("loop, every usage limit set: time per turn", limited, "us", None)]
               if limits else [])
    return [
        _row("loop (calls on the run's worker): time per turn", per_turn, "us", None),
        _row("thread hand-off floor (one call to a parked thread and back)", hop, "us", None),
        _row("loop - floor, same round: time per turn", over, "us", TARGET_OVER_FLOOR_US),
        _row(f"loop: last {EDGE} / first {EDGE} turns", growth, "x", TARGET_GROWTH),
        _row("loop, calls run where submitted (no hand-off): time per turn", here, "us", None),
        _row("thread hand-off at the loop's pace (a turn's work between calls)", paced, "us",
             None),
        _row("floor (plain dicts): time per turn", floor, "us", None),
        _row("loop / plain-dict floor", ratio, "x", None),
        _row("loop, gc disabled: time per turn", no_gc, "us", None),
        _row("loop, tool on a ThreadPoolExecutor(1): time per turn", pool, "us", None),
        *variant,
        _row("pi-agent-core, TypeScript, warmed (reference)", [UPSTREAM_US_PER_TURN], "us", None),
    ]


def measure_import(runs: int = RUNS) -> list[dict[str, Any]]:
    """Import cost in fresh interpreters, `runs` of each."""
    imports = [import_time_ms() for _ in range(runs)]
    import_wall = [process_wall_ms("import agentcore") for _ in range(runs)]
    bare_wall = [process_wall_ms("pass") for _ in range(runs)]
    return [
        _row("import agentcore (-X importtime, cumulative)", imports, "ms", TARGET_IMPORT_MS),
        _row("python -c 'import agentcore' (wall)", import_wall, "ms", None),
        _row("python -c 'pass' (wall, reference)", bare_wall, "ms", None),
    ]


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'median':>10}  {'min':>10}  {'max':>10}  unit  target"]
    for r in rows:
        target = "" if r["target"] is None else (
            f"<= {r['target']:g} ({'ok' if r['ok'] else 'MISSED'})"
        )
        lines.append(f"{r['name']:<{width}}  {r['median']:>10.1f}  {r['min']:>10.1f}  "
                     f"{r['max']:>10.1f}  {r['unit']:<4}  {target}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per measurement")
    parser.add_argument("--turns", type=int, default=TURNS, help="turns per loop run")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--loop-only", action="store_true",
                        help="skip the import measurements (e.g. under cProfile)")
    parser.add_argument("--limits", action="store_true",
                        help="also time the loop with every usage limit set (none reached)")
    args = parser.parse_args(argv)
    rows = measure_loop(args.runs, args.turns, args.limits)
    if not args.loop_only:
        rows += measure_import(args.runs)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, "
              f"{args.turns} turns, median of {args.runs} runs after a warm-up")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
