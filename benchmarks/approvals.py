"""What human approval of tool calls costs (API §20): per turn, and a pause → resume round trip.

    python benchmarks/approvals.py            # a table
    python benchmarks/approvals.py --json     # one JSON object per measurement and line
    python benchmarks/approvals.py --check    # exit 1 when a target is missed

Per turn: loop_overhead.py's loop (TURNS turns of one call to a trivial tool, replies from a
`stream_fn` returning pre-filled streams, the last result `terminate=True`) in three variants
that alternate run by run: the tool has no rule (`requires_approval=False`, the default); a
rule `requires_approval=lambda args: False` (evaluated for every call: the arguments validated
once more, the rule called, nothing waits); and `requires_approval=True` decided by
`approve=lambda call, tool: True` (every call asked on the run's worker, a
`tool_approval_request` event and a `ToolApprovalMessage` per turn).

Round trip: `Agent(session=SqliteSession(file))` is prompted, the model asks for one call of a
tool with `requires_approval=True`, the run stops with it pending; a new `SqliteSession` on the
same file and a new `Agent(session=...)` load the transcript (as a new process would; here in
the same process), `continue_(approvals={id: True})` runs the tool, the model answers with text
and the run ends. The peer, measured in the same run: the OpenAI Agents SDK's human in the
loop, a `function_tool(needs_approval=True)`, `Runner.run` ending with `result.interruptions`,
`result.to_state().to_string()` stored in a SQLite file (WAL, `synchronous=NORMAL`, as
`SqliteSession` opens its file), read back by a new connection, `RunState.from_string` with a
new `Agent`, `state.approve(...)`, `Runner.run(agent, state)`. Its model is an offline
`agents.Model` returning scripted `ModelResponse`s. No network anywhere. The SQLite files go
to /dev/shm by default (`--dir` to put them on a disk). Every figure is the median of
LOOP_RUNS loop runs or of RUNS round-trip runs (each the median of TRIPS round trips), after
a warm-up run. See README.md beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from loop_overhead import (  # loop_overhead.py's model, tool and pre-filled replies
    EDGE,
    MODEL,
    SCHEMA,
    _noop,
    _script,
    _scripted_stream_fn,
    thread_round_trip_us,
)

import agentcore as ac
from agentcore.sessions import SqliteSession

RUNS = 7
LOOP_RUNS = 21  # loop runs are short (~30 ms) and noisy: more of them
TURNS = 200
TRIPS = 20  # round trips per run (one run's figure: their median)

TARGET_RULE_US = 15.0  # a rule that says "no" adds at most this per turn
TARGET_APPROVE_US = 200.0  # an `approve` callback that says "yes" adds at most this per turn
TARGET_TRIP_MS = 15.0  # pause → reload → resume → end, agentcore, median (idle VM: 3-7)
TARGET_PEER_RATIO = 1.0  # agentcore's round trip at most as long as the peer's

clock = time.perf_counter

RULES: dict[str, tuple[bool | Callable[[Any], bool], Any]] = {
    "no rule": (False, None),
    "rule says no (lambda args: False)": (lambda args: False, None),
    "requires_approval=True, approve says yes": (True, lambda call, tool: True),
}
"""Variant → (`requires_approval`, `approve`)."""


# --- per turn -----------------------------------------------------------------------------------


def run_turns(turns: int, rule: bool | Callable[[Any], bool],
              approve: Any) -> tuple[float, float]:
    """One loop run of `turns` turns: (seconds per turn, last EDGE turns / first EDGE turns)."""
    asked: list[None] = []
    if callable(rule):  # count the rule's calls (a list append: well under a µs)
        inner = rule

        def rule(args: Any) -> bool:
            asked.append(None)
            return inner(args)

    tool = ac.AgentTool("noop", "Do nothing.", SCHEMA, _noop, requires_approval=rule)
    config = ac.AgentLoopConfig(model=MODEL, approve=approve)
    context = ac.AgentContext("", [], [tool])
    stream_fn = _scripted_stream_fn(_script(turns))
    marks: list[float] = []

    def sink(event: ac.AgentEvent) -> None:
        if isinstance(event, (ac.TurnStartEvent, ac.AgentEndEvent)):
            marks.append(clock())

    start = clock()
    messages = ac.run_agent_loop([ac.UserMessage("go")], context, config, sink,
                                 stream_fn=stream_fn)
    wall = clock() - start
    expected = 1 + (3 if approve is not None else 2) * turns
    results = [m for m in messages if isinstance(m, ac.ToolResultMessage)]
    if len(messages) != expected or len(results) != turns or any(r.is_error for r in results):
        raise RuntimeError(f"unexpected run: {len(messages)} messages, expected {expected}")
    if callable(rule) and len(asked) != turns:
        raise RuntimeError(f"the rule was called {len(asked)} times in {turns} turns")
    durations = [b - a for a, b in itertools.pairwise(marks)]
    edge = min(EDGE, max(1, turns // 2))
    growth = statistics.fmean(durations[-edge:]) / statistics.fmean(durations[:edge])
    return wall / turns, growth


# --- round trip, agentcore ----------------------------------------------------------------------


def _call_reply(call_id: str) -> tuple[Any, ...]:
    call = ac.ToolCall(call_id, "noop", {"turn": 1})
    empty = ac.AssistantMessage([], "bench", "bench", "bench")
    opened = ac.AssistantMessage([ac.ToolCall(call_id, "noop", {})], "bench", "bench", "bench")
    final = ac.AssistantMessage([call], "bench", "bench", "bench",
                                stop_reason=ac.StopReason.TOOL_USE)
    return (ac.StartEvent(empty), ac.ToolCallStartEvent(0, opened),
            ac.ToolCallEndEvent(0, call, final), ac.DoneEvent(ac.StopReason.TOOL_USE, final))


def _text_reply(text: str) -> tuple[Any, ...]:
    empty = ac.AssistantMessage([], "bench", "bench", "bench")
    final = ac.AssistantMessage([ac.TextContent(text)], "bench", "bench", "bench",
                                stop_reason=ac.StopReason.STOP)
    return (ac.StartEvent(empty), ac.DoneEvent(ac.StopReason.STOP, final))


GUARDED = ac.AgentTool("noop", "Do nothing.", SCHEMA, _noop, requires_approval=True)


def agentcore_trip(directory: Path) -> dict[str, float]:
    """One pause → reload → resume → end, in ms: the whole, and its parts."""
    path = directory / "session.db"
    first = _scripted_stream_fn([_call_reply("call_1")])
    second = _scripted_stream_fn([_text_reply("done")])
    t0 = clock()
    with SqliteSession(path) as session:
        agent = ac.Agent(MODEL, tools=[GUARDED], session=session, stream_fn=first)
        run = agent.prompt("go")
        pending = run.pending_approvals
        agent.close()
    t1 = clock()
    with SqliteSession(path) as session:  # a new process would do this
        agent = ac.Agent(MODEL, tools=[GUARDED], session=session, stream_fn=second)
        waiting = agent.state.pending_approvals
        t2 = clock()
        run = agent.continue_(approvals={call.id: True for call in waiting})
        run.result()
        agent.close()
    t3 = clock()
    if [c.id for c in pending] != ["call_1"] or [c.id for c in waiting] != ["call_1"]:
        raise RuntimeError(f"unexpected pause: {pending!r}, {waiting!r}")
    kinds = [type(m) for m in agent.messages]  # user, call, approval, result, text
    if run.text != "done" or kinds != [ac.UserMessage, ac.AssistantMessage,
                                       ac.ToolApprovalMessage, ac.ToolResultMessage,
                                       ac.AssistantMessage] or agent.messages[3].is_error:
        raise RuntimeError(f"unexpected resume: {agent.messages!r}")
    path.unlink()
    for suffix in ("-wal", "-shm"):
        (directory / f"session.db{suffix}").unlink(missing_ok=True)
    return {"round trip": (t3 - t0) * 1e3, "prompt → pause": (t1 - t0) * 1e3,
            "reload": (t2 - t1) * 1e3, "resume → end": (t3 - t2) * 1e3}


# --- round trip, OpenAI Agents SDK --------------------------------------------------------------


def agents_sdk_trip_factory() -> Callable[[Path], dict[str, float]]:
    """The peer's round trip, set up once (imports, tracing off)."""
    import agents
    from agents import Agent, ModelResponse, Runner, RunState, function_tool
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    agents.set_tracing_disabled(True)

    class Scripted(agents.Model):
        """Serves prebuilt responses in order; no network."""

        def __init__(self, responses: list[Any]) -> None:
            self.responses = iter(responses)

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            return next(self.responses)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    def call_response() -> Any:
        return ModelResponse(output=[ResponseFunctionToolCall(
            arguments=json.dumps({"turn": 1}), call_id="call_1", name="noop",
            type="function_call", status="completed")], usage=Usage(), response_id=None)

    def text_response() -> Any:
        return ModelResponse(output=[ResponseOutputMessage(
            id="msg_final", role="assistant", status="completed", type="message",
            content=[ResponseOutputText(annotations=[], text="done", type="output_text")])],
            usage=Usage(), response_id=None)

    ran: list[int] = []

    async def noop(turn: int) -> str:
        """Do nothing."""
        ran.append(turn)
        return "ok"

    tool = function_tool(noop, needs_approval=True)

    def open_db(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS state (id TEXT PRIMARY KEY, data TEXT)")
        return db

    async def resume(path: Path) -> tuple[Any, int, float]:
        db = open_db(path)
        (data,) = db.execute("SELECT data FROM state WHERE id = 'run'").fetchone()
        db.close()
        agent = Agent(name="bench", model=Scripted([text_response()]), tools=[tool])
        state = await RunState.from_string(agent, data)
        waiting = state.get_interruptions()
        loaded = clock()
        for item in waiting:
            state.approve(item)
        return await Runner.run(agent, state), len(waiting), loaded

    def trip(directory: Path) -> dict[str, float]:
        path = directory / "state.db"
        ran.clear()
        t0 = clock()
        agent = Agent(name="bench", model=Scripted([call_response()]), tools=[tool])
        result = Runner.run_sync(agent, "go")
        pending = len(result.interruptions)
        db = open_db(path)
        with db:
            db.execute("INSERT OR REPLACE INTO state VALUES ('run', ?)",
                       (result.to_state().to_string(),))
        db.close()
        t1 = clock()
        result, waiting, t2 = asyncio.run(resume(path))
        t3 = clock()
        if pending != 1 or waiting != 1 or ran != [1] or result.final_output != "done":
            raise RuntimeError(f"unexpected peer run: {pending}, {waiting}, {ran}, "
                               f"{result.final_output!r}")
        path.unlink()
        for suffix in ("-wal", "-shm"):
            (directory / f"state.db{suffix}").unlink(missing_ok=True)
        return {"round trip": (t3 - t0) * 1e3, "prompt → pause": (t1 - t0) * 1e3,
                "reload": (t2 - t1) * 1e3, "resume → end": (t3 - t2) * 1e3}

    return trip


def default_dir() -> Path:
    """Where the round trips keep their files: /dev/shm (a tmpfs) if there is one.

    What a commit costs on a disk is sessions.py's subject; here both libraries would wait for
    the same fsyncs (SQLite in WAL mode syncs when the file is created and checkpointed), which
    on a shared VM vary ten-fold with other processes' writes.
    """
    shm = Path("/dev/shm")
    return shm if shm.is_dir() else Path(tempfile.gettempdir())


# --- driving ------------------------------------------------------------------------------------


def _row(name: str, values: list[float], unit: str, target: str | None = None,
         ok: bool | None = None) -> dict[str, Any]:
    return {"name": name, "median": round(statistics.median(values), 4),
            "min": round(min(values), 4), "max": round(max(values), 4), "unit": unit,
            "runs": len(values), "target": target, "ok": ok}


def measure_turns(runs: int, turns: int) -> list[dict[str, Any]]:
    """The three variants alternating run by run after a warm-up round; extra cost per run."""
    per_turn: dict[str, list[float]] = {name: [] for name in RULES}
    growth: dict[str, list[float]] = {name: [] for name in RULES}
    hop: list[float] = []
    for round_ in range(runs + 1):
        for name, (rule, approve) in RULES.items():
            seconds, ratio = run_turns(turns, rule, approve)
            if round_:
                per_turn[name].append(seconds * 1e6)
                growth[name].append(ratio)
        if round_:
            hop.append(thread_round_trip_us())
    base = per_turn["no rule"]
    rows = [_row(f"loop, {name}: time per turn", values, "µs")
            for name, values in per_turn.items()]
    rows += [_row(f"loop, {name}: last {EDGE} / first {EDGE} turns", values, "x")
             for name, values in growth.items()]
    rows.append(_row("thread round trip (floor of one hand-off to a worker)", hop, "µs"))
    for name, limit in (("rule says no (lambda args: False)", TARGET_RULE_US),
                        ("requires_approval=True, approve says yes", TARGET_APPROVE_US)):
        extra = [a - b for a, b in zip(per_turn[name], base, strict=True)]
        median = statistics.median(extra)
        rows.append(_row(f"{name}: extra per turn", extra, "µs", f"<= {limit:g}",
                         median <= limit))
    return rows


def measure_trips(runs: int, trips: int, base: Path) -> list[dict[str, Any]]:
    """Both round trips, alternating run by run (a run: `trips` trips, its figure their median)."""
    makers: dict[str, Callable[[Path], dict[str, float]] | str] = {
        "agentcore": agentcore_trip}
    try:
        makers["openai-agents"] = agents_sdk_trip_factory()
    except ImportError as exc:
        makers["openai-agents"] = f"not installed ({exc.name})"
    live = {name: fn for name, fn in makers.items() if not isinstance(fn, str)}
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in live}
    directory = Path(tempfile.mkdtemp(dir=base))
    try:
        for round_ in range(runs + 1):
            for name, trip in live.items():
                figures: dict[str, list[float]] = {}
                for _ in range(trips):
                    for part, value in trip(directory).items():
                        figures.setdefault(part, []).append(value)
                if round_:
                    for part, values in figures.items():
                        samples[name].setdefault(part, []).append(statistics.median(values))
    finally:
        shutil.rmtree(directory)
    rows = []
    for name, parts in samples.items():
        for part, values in parts.items():
            whole = part == "round trip" and name == "agentcore"
            median = statistics.median(values)
            rows.append(_row(f"{name}: {part}", values, "ms",
                             f"<= {TARGET_TRIP_MS:g}" if whole else None,
                             median <= TARGET_TRIP_MS if whole else None))
    if "openai-agents" in samples:
        ratio = [a / b for a, b in zip(samples["agentcore"]["round trip"],
                                       samples["openai-agents"]["round trip"], strict=True)]
        median = statistics.median(ratio)
        rows.append(_row("agentcore / openai-agents, round trip (time)", ratio, "x",
                         f"<= {TARGET_PEER_RATIO:g}", median <= TARGET_PEER_RATIO))
    else:
        print(f"openai-agents: {makers['openai-agents']}: skipped", file=sys.stderr)
    return rows


def _fmt(value: float) -> str:
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3g}"


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'median':>8}  {'min':>8}  {'max':>8}  unit  target"]
    for r in rows:
        target = "" if r["target"] is None else f"{r['target']} ({'ok' if r['ok'] else 'MISSED'})"
        lines.append(f"{r['name']:<{width}}  {_fmt(r['median']):>8}  {_fmt(r['min']):>8}  "
                     f"{_fmt(r['max']):>8}  {r['unit']:<4}  {target}")
    return "\n".join(lines)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per variant")
    parser.add_argument("--loop-runs", type=int, default=LOOP_RUNS,
                        help="timed loop runs per variant")
    parser.add_argument("--turns", type=int, default=TURNS, help="turns per loop run")
    parser.add_argument("--trips", type=int, default=TRIPS, help="round trips per run")
    parser.add_argument("--dir", type=Path, default=default_dir(),
                        help="where the temporary SQLite files go (default: a tmpfs when there "
                             "is one, so that the disk's fsyncs are not measured; give a "
                             "directory on a disk to include them)")
    args = parser.parse_args(argv)
    if min(args.runs, args.loop_runs, args.turns, args.trips) < 1:
        parser.error("--runs, --loop-runs, --turns and --trips must be positive")
    started = clock()
    base = Path(tempfile.mkdtemp(prefix=".approvals-bench-", dir=args.dir))
    try:
        rows = (measure_turns(args.loop_runs, args.turns)
                + measure_trips(args.runs, args.trips, base))
    finally:
        shutil.rmtree(base)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"agentcore {ac.__version__}, openai-agents {_version('openai-agents')}, Python "
              f"{sys.version.split()[0]}, median of {args.loop_runs} loop runs of {args.turns} "
              f"turns and of {args.runs} runs of {args.trips} round trips, after a warm-up; "
              f"took {clock() - started:.1f} s")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
