"""agentcore side by side with the OpenAI Agents SDK and pydantic-ai, in one run.

    python benchmarks/compare.py                        # a table, targets, notes
    python benchmarks/compare.py --json                 # one JSON object per case and variant
    python benchmarks/compare.py --check                # exit 1 when a target is missed
    python benchmarks/compare.py --cases loop_overhead,memory

Cases (every variant: RUNS timed runs after WARMUP untimed ones; variants of a case alternate
run by run, so that a noisy moment of the machine hits them alike):

- loop_overhead: TURNS turns of one trivial tool call each against a zero-latency scripted
  model; time per turn, the first and last EDGE turns, and a plain-Python floor. agentcore
  runs every call on the run's worker thread, so beside it runs the thread hand-off floor (a
  bare round trip to a parked thread); its target is on agentcore minus that floor.
- parallel_fanout: one reply asking for FANOUT calls of a synchronous tool that sleeps 100 ms,
  then a final answer (ideal: about 100 ms).
- sse_throughput: sse_throughput.py's out-of-process server; agentcore's provider, the openai
  SDK, `requests.iter_lines` + `json.loads`.
- memory: bytes per message of a MESSAGES-message history in each library's own message types,
  by tracemalloc in a fresh subprocess per variant.
- import_time: `-X importtime` cumulative of each top-level package, fresh interpreter each.
- abort_latency (agentcore only): `abort()` -> `agent_end` while streaming from a slow local
  OpenAI-compatible server.
- eventstream: eventstream.py's Bedrock `ConverseStream` body (20,000 text deltas) decoded by
  agentcore's event-stream decoder and by botocore's `EventStreamBuffer`, in 16 KiB reads and
  one frame per read.
- approvals: approvals.py's pause → resume round trip of a tool call needing approval:
  agentcore's `Agent(session=SqliteSession)` stopping, reloaded by a new `Agent`, resumed with
  `continue_(approvals=...)`; the OpenAI Agents SDK's `needs_approval` tool, `result.to_state()`
  stored in SQLite, `RunState.from_string`, `state.approve`, `Runner.run`.

The peers (`agents`, `pydantic_ai`, `openai`, `botocore`) are imported lazily; a missing one
skips its variants with a note. See README.md beside this file for the figures and what each
variant does.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any

import agent_latency
import approvals
import eventstream
import loop_overhead
import sse_throughput

import agentcore as ac

RUNS = 5
WARMUP = 1
TURNS = loop_overhead.TURNS  # 200
EDGE = loop_overhead.EDGE  # 20
FANOUT = 32
SLEEP_S = 0.1
MESSAGES = 10_000
SLOW_PACE_S = 0.2  # the slow server: one chunk every 200 ms after the first content chunk
SLOW_CHUNKS = 1_000  # 200 s of stream: never reached

TARGET_OVER_FLOOR_US = loop_overhead.TARGET_OVER_FLOOR_US  # 30: loop - hand-off floor
TARGET_PEER_RATIO = 40.0
TARGET_GROWTH = loop_overhead.TARGET_GROWTH  # 1.5
TARGET_FANOUT_MS = 110.0
TARGET_SSE_RATIO = sse_throughput.TARGET_SDK_RATIO  # 10
TARGET_BYTES_PER_MESSAGE = 600.0
TARGET_IMPORT_MS = loop_overhead.TARGET_IMPORT_MS  # 300
TARGET_ABORT_MS = agent_latency.TARGET_ABORT_MS  # 20
TARGET_EVENTSTREAM_RATIO = eventstream.TARGET_RATIO  # 1.5
TARGET_TRIP_MS = approvals.TARGET_TRIP_MS  # 15
TARGET_TRIP_RATIO = approvals.TARGET_PEER_RATIO  # 1

AGENTCORE = "agentcore"
HAND_OFF = "floor (thread hand-off)"
AGENTS_SDK = "openai-agents"
PYDANTIC_AI = "pydantic-ai"
OPENAI_SDK = "openai SDK"
BOTOCORE = "botocore"
PEER_MODULES = {AGENTS_SDK: "agents", PYDANTIC_AI: "pydantic_ai"}
# variants that may fail without stopping the run
PEERS = {AGENTS_SDK, PYDANTIC_AI, OPENAI_SDK, BOTOCORE}
CASES = ("loop_overhead", "parallel_fanout", "sse_throughput", "memory", "import_time",
         "abort_latency", "eventstream", "approvals")

clock = time.perf_counter


# --- results ------------------------------------------------------------------------------------


@dataclass
class Variant:
    """One variant of one case: metric name -> samples (the first metric is the main one)."""

    case: str
    name: str
    units: dict[str, str]
    samples: dict[str, list[float]] = field(default_factory=dict)
    note: str | None = None
    skipped: bool = False

    def median(self, metric: str) -> float:
        return statistics.median(self.samples[metric])


@dataclass
class Target:
    """One target: `value` compared with `limit` (`<=` or `>=`); `ok` None when not measured."""

    case: str
    what: str
    value: float | None
    op: str
    limit: float
    unit: str
    note: str | None = None

    @property
    def ok(self) -> bool | None:
        if self.value is None:
            return None
        return self.value <= self.limit if self.op == "<=" else self.value >= self.limit


Runner = Callable[[], dict[str, float]]


def _missing(variant: str) -> str | None:
    """A note when the peer behind `variant` is not installed, else None."""
    module = PEER_MODULES[variant]
    if importlib.util.find_spec(module) is None:
        return f"{module} not installed (pip install -e '.[bench]'): skipped"
    return None


def _peer(variant: str, factory: Callable[[], Runner]) -> Runner | str:
    """The peer's runner; or, when it is not installed or cannot be set up, a note."""
    note = _missing(variant)
    if note is not None:
        return note
    try:
        return factory()
    except Exception as exc:
        return f"failed to set up: {exc!r:.300}"


def _drive(case: str, units: dict[str, str], runners: dict[str, Runner | str],
           runs: int, warmup: int) -> list[Variant]:
    """Warm up every variant, then time them in turn, run by run.

    A runner given as a string is a skipped variant with that note. A peer variant that raises
    is dropped with a note; the exceptions of agentcore and the floors propagate.
    """
    variants = {name: Variant(case, name, units) for name in runners}
    live: dict[str, Runner] = {}
    for name, runner in runners.items():
        if isinstance(runner, str):
            variants[name].skipped, variants[name].note = True, runner
        else:
            live[name] = runner

    def call(name: str) -> dict[str, float] | None:
        try:
            return live[name]()
        except Exception as exc:
            if name not in PEERS:
                raise
            variants[name].skipped = True
            variants[name].note = f"failed: {exc!r:.300}"
            variants[name].samples.clear()
            del live[name]
            return None

    for name in list(live):
        for _ in range(warmup):
            if name in live:
                call(name)
    for _ in range(runs):
        for name in list(live):
            values = call(name)
            for metric, value in (values or {}).items():
                variants[name].samples.setdefault(metric, []).append(value)
    return list(variants.values())


def _find(variants: list[Variant], name: str) -> Variant | None:
    return next((v for v in variants if v.name == name and not v.skipped), None)


# --- case 1: loop overhead ----------------------------------------------------------------------


def _turn_metrics(wall: float, durations: list[float], turns: int) -> dict[str, float]:
    first = statistics.fmean(durations[:EDGE])
    last = statistics.fmean(durations[-EDGE:])
    return {"per turn": wall / turns * 1e6, f"first {EDGE} turns": first * 1e6,
            f"last {EDGE} turns": last * 1e6, f"last {EDGE} / first {EDGE}": last / first}


def _pairwise_durations(marks: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(marks)]


def agentcore_loop(turns: int) -> Runner:
    """loop_overhead.py's run: a scripted `stream_fn`; turns timed at `turn_start`."""

    def run() -> dict[str, float]:
        wall, durations = loop_overhead.run_loop(turns)
        return _turn_metrics(wall, durations, turns)

    return run


def floor_loop(turns: int) -> Runner:
    """loop_overhead.py's floor: the same messages as plain dicts, the tool called directly."""
    return lambda: {"per turn": loop_overhead.run_floor(turns) / turns * 1e6}


def hand_off_floor() -> Runner:
    """loop_overhead.py's thread hand-off floor: one call to a parked thread and back."""
    return lambda: {"per turn": loop_overhead.thread_round_trip_us()}


def agents_sdk_loop(turns: int) -> Runner:
    """A custom `agents.Model` returning canned `ModelResponse`s; `Runner.run_sync`."""
    import agents
    from agents import Agent, ModelResponse, function_tool
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    agents.set_tracing_disabled(True)
    marks: list[float] = []

    class Scripted(agents.Model):
        """Serves the prebuilt responses in order; timestamps every model call."""

        def __init__(self, responses: list[Any]) -> None:
            self.responses = iter(responses)

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            marks.append(clock())
            return next(self.responses)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    def script() -> list[Any]:
        out = [ModelResponse(output=[ResponseFunctionToolCall(
            arguments=json.dumps({"turn": i}), call_id=f"call_{i}", name="noop",
            type="function_call", status="completed")], usage=Usage(), response_id=None)
            for i in range(turns)]
        out.append(ModelResponse(output=[ResponseOutputMessage(
            id="msg_final", role="assistant", status="completed", type="message",
            content=[ResponseOutputText(annotations=[], text="done", type="output_text")])],
            usage=Usage(), response_id=None))
        return out

    async def noop(turn: int) -> str:
        """Do nothing."""
        return "ok"

    tool = function_tool(noop)

    def run() -> dict[str, float]:
        marks.clear()
        agent = Agent(name="bench", model=Scripted(script()), tools=[tool])
        start = clock()
        result = agents.Runner.run_sync(agent, "go", max_turns=turns + 10)
        wall = clock() - start
        if result.final_output != "done" or len(marks) != turns + 1:
            raise RuntimeError(f"unexpected run: {result.final_output!r}, {len(marks)} calls")
        return _turn_metrics(wall, _pairwise_durations(marks), turns)

    return run


def pydantic_ai_loop(turns: int) -> Runner:
    """`FunctionModel` returning a `ToolCallPart` per turn, then text; `agent.run_sync`."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RequestUsage, UsageLimits

    marks: list[float] = []

    def script() -> Iterator[Any]:
        # Usage given, so that FunctionModel does not estimate it from the whole history.
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        yield from (ModelResponse(parts=[ToolCallPart("noop", {"turn": i}, f"call_{i}")],
                                  usage=usage) for i in range(turns))
        yield ModelResponse(parts=[TextPart("done")], usage=usage)

    async def noop(turn: int) -> str:
        """Do nothing."""
        return "ok"

    limits = UsageLimits(request_limit=None)

    def run() -> dict[str, float]:
        marks.clear()
        replies = list(script())
        served = iter(replies)

        def model(messages: Any, info: Any) -> Any:
            marks.append(clock())
            return next(served)

        agent = Agent(FunctionModel(model), tools=[noop])
        start = clock()
        result = agent.run_sync("go", usage_limits=limits)
        wall = clock() - start
        if result.output != "done" or len(marks) != turns + 1:
            raise RuntimeError(f"unexpected run: {result.output!r}, {len(marks)} calls")
        return _turn_metrics(wall, _pairwise_durations(marks), turns)

    return run


def case_loop_overhead(runs: int, warmup: int) -> tuple[list[Variant], list[Target]]:
    turns = TURNS
    units = {"per turn": "us", f"first {EDGE} turns": "us", f"last {EDGE} turns": "us",
             f"last {EDGE} / first {EDGE}": "x"}
    runners: dict[str, Runner | str] = {
        AGENTCORE: agentcore_loop(turns),
        AGENTS_SDK: _peer(AGENTS_SDK, lambda: agents_sdk_loop(turns)),
        PYDANTIC_AI: _peer(PYDANTIC_AI, lambda: pydantic_ai_loop(turns)),
        "floor (plain Python)": floor_loop(turns),
        HAND_OFF: hand_off_floor(),
    }
    variants = _drive("loop_overhead", units, runners, runs, warmup)
    ours, hop = _find(variants, AGENTCORE), _find(variants, HAND_OFF)
    assert ours is not None
    assert hop is not None
    per_turn = ours.median("per turn")
    over = statistics.median(a - b for a, b in zip(ours.samples["per turn"],
                                                   hop.samples["per turn"], strict=True))
    peers = [v for name in (AGENTS_SDK, PYDANTIC_AI) if (v := _find(variants, name))]
    fastest = min(peers, key=lambda v: v.median("per turn"), default=None)
    targets = [
        Target("loop_overhead", "agentcore time per turn - thread hand-off floor", over, "<=",
               TARGET_OVER_FLOOR_US, "us", "run by run; the floor: "
               f"{hop.median('per turn'):.1f} us"),
        Target("loop_overhead", "faster peer / agentcore (time per turn)",
               None if fastest is None else fastest.median("per turn") / per_turn, ">=",
               TARGET_PEER_RATIO, "x",
               "no peer installed" if fastest is None else f"faster peer: {fastest.name}"),
        Target("loop_overhead", f"agentcore last {EDGE} / first {EDGE} turns",
               ours.median(f"last {EDGE} / first {EDGE}"), "<=", TARGET_GROWTH, "x"),
    ]
    return variants, targets


# --- case 2: parallel fan-out -------------------------------------------------------------------


class _Threads:
    """Records which threads the tool calls ran on, and when each started and ended."""

    def __init__(self) -> None:
        self.idents: set[int] = set()
        self.starts: list[float] = []
        self.ends: list[float] = []
        self._lock = threading.Lock()

    def sleep(self) -> None:
        """The tool's body: sleep SLEEP_S, recorded."""
        with self._lock:
            self.idents.add(threading.get_ident())
            self.starts.append(clock())
        time.sleep(SLEEP_S)
        with self._lock:
            self.ends.append(clock())

    def reset(self) -> None:
        self.idents.clear()
        self.starts.clear()
        self.ends.clear()

    def metrics(self, start: float, end: float) -> dict[str, float]:
        """Wall time of the run, and where it went."""
        if len(self.ends) != FANOUT:
            raise RuntimeError(f"{len(self.ends)} tool calls, expected {FANOUT}")
        return {"wall": (end - start) * 1000,
                "first tool start": (min(self.starts) - start) * 1000,
                "first -> last tool start": (max(self.starts) - min(self.starts)) * 1000,
                "last tool end -> return": (end - max(self.ends)) * 1000,
                "threads used": float(len(self.idents))}


def agentcore_fanout(executor: Executor | None = None) -> Runner:
    """`run_agent_loop`, default PARALLEL mode; scripted `stream_fn`.

    Tools run on the run's own pool (threads started by the run), or on `executor` if given.
    """
    threads = _Threads()

    @ac.tool
    def sleepy(i: int) -> str:
        """Sleep 100 ms.

        Args:
            i: which call this is.
        """
        threads.sleep()
        return f"slept {i}"

    calls: list[Any] = [ac.ToolCall(f"call_{i}", "sleepy", {"i": i}) for i in range(FANOUT)]
    replies = [
        ac.AssistantMessage(calls, "bench", "bench", "bench", stop_reason=ac.StopReason.TOOL_USE),
        ac.AssistantMessage([ac.TextContent("done")], "bench", "bench", "bench"),
    ]

    def run() -> dict[str, float]:
        threads.reset()
        served = iter(replies)

        def stream_fn(model: ac.Model, context: ac.Context,
                      options: ac.StreamOptions) -> ac.AssistantMessageEventStream:
            final = next(served)
            out = ac.AssistantMessageEventStream()
            out.push(ac.StartEvent(ac.AssistantMessage([], "bench", "bench", "bench")))
            out.push(ac.DoneEvent(final.stop_reason, final))
            return out

        context = ac.AgentContext("", [], [sleepy])
        config = ac.AgentLoopConfig(model=loop_overhead.MODEL, tool_executor=executor)
        start = clock()
        messages = ac.run_agent_loop([ac.UserMessage("go")], context, config, lambda e: None,
                                     stream_fn=stream_fn)
        end = clock()
        last = messages[-1]
        if not isinstance(last, ac.AssistantMessage) or last.text != "done":
            raise RuntimeError(f"unexpected end of run: {last!r:.300}")
        return threads.metrics(start, end)

    return run


def agents_sdk_fanout() -> Runner:
    """One `ModelResponse` with FANOUT function calls of a sync `function_tool`, then text."""
    import agents
    from agents import Agent, ModelResponse, function_tool
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    agents.set_tracing_disabled(True)
    threads = _Threads()

    def sleepy(i: int) -> str:
        """Sleep 100 ms."""
        threads.sleep()
        return f"slept {i}"

    tool = function_tool(sleepy)

    class Scripted(agents.Model):
        def __init__(self, responses: list[Any]) -> None:
            self.responses = iter(responses)

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            return next(self.responses)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    def script() -> list[Any]:
        calls = [ResponseFunctionToolCall(arguments=json.dumps({"i": i}), call_id=f"call_{i}",
                                          name="sleepy", type="function_call",
                                          status="completed") for i in range(FANOUT)]
        final = ResponseOutputMessage(
            id="msg_final", role="assistant", status="completed", type="message",
            content=[ResponseOutputText(annotations=[], text="done", type="output_text")])
        return [ModelResponse(output=calls, usage=Usage(), response_id=None),  # type: ignore[arg-type]
                ModelResponse(output=[final], usage=Usage(), response_id=None)]

    def run() -> dict[str, float]:
        threads.reset()
        agent = Agent(name="bench", model=Scripted(script()), tools=[tool])
        start = clock()
        result = agents.Runner.run_sync(agent, "go")
        end = clock()
        if result.final_output != "done":
            raise RuntimeError(f"unexpected run: {result.final_output!r}")
        return threads.metrics(start, end)

    return run


def pydantic_ai_fanout() -> Runner:
    """`FunctionModel`: a `ModelResponse` with FANOUT `ToolCallPart`s of a sync tool, then text."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RequestUsage

    threads = _Threads()

    def sleepy(i: int) -> str:
        """Sleep 100 ms."""
        threads.sleep()
        return f"slept {i}"

    def run() -> dict[str, float]:
        threads.reset()
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        served = iter([
            ModelResponse(parts=[ToolCallPart("sleepy", {"i": i}, f"call_{i}")
                                 for i in range(FANOUT)], usage=usage),
            ModelResponse(parts=[TextPart("done")], usage=usage),
        ])
        agent = Agent(FunctionModel(lambda messages, info: next(served)), tools=[sleepy])
        start = clock()
        result = agent.run_sync("go")
        end = clock()
        if result.output != "done":
            raise RuntimeError(f"unexpected run: {result.output!r}")
        return threads.metrics(start, end)

    return run


def floor_fanout() -> Runner:
    """A fresh `ThreadPoolExecutor(FANOUT)` mapping the sleep over FANOUT calls."""
    threads = _Threads()

    def sleepy(i: int) -> str:
        threads.sleep()
        return f"slept {i}"

    def run() -> dict[str, float]:
        threads.reset()
        start = clock()
        with ThreadPoolExecutor(FANOUT) as pool:
            list(pool.map(sleepy, range(FANOUT)))
        return threads.metrics(start, clock())

    return run


def case_parallel_fanout(runs: int, warmup: int) -> tuple[list[Variant], list[Target]]:
    units = {"wall": "ms", "first tool start": "ms", "first -> last tool start": "ms",
             "last tool end -> return": "ms", "threads used": "n"}
    with ThreadPoolExecutor(FANOUT, thread_name_prefix="bench-tools") as pool:
        runners: dict[str, Runner | str] = {
            AGENTCORE: agentcore_fanout(),
            "agentcore (tool_executor: one pool, reused)": agentcore_fanout(pool),
            AGENTS_SDK: _peer(AGENTS_SDK, agents_sdk_fanout),
            PYDANTIC_AI: _peer(PYDANTIC_AI, pydantic_ai_fanout),
            f"floor (ThreadPoolExecutor({FANOUT}) per run)": floor_fanout(),
        }
        variants = _drive("parallel_fanout", units, runners, runs, warmup)
    ours = _find(variants, AGENTCORE)
    assert ours is not None
    return variants, [Target("parallel_fanout", f"agentcore {FANOUT} x 100 ms tools, wall",
                             ours.median("wall"), "<=", TARGET_FANOUT_MS, "ms")]


# --- case 3: SSE throughput ---------------------------------------------------------------------


def case_sse_throughput(runs: int, warmup: int) -> tuple[list[Variant], list[Target]]:
    chunks = sse_throughput.CHUNKS
    expected = sse_throughput.expected_text(chunks)
    units = {"wall": "ms", "per chunk": "us"}
    floor_name = "floor (requests + iter_lines + json.loads)"

    def timed(client: Callable[[], str]) -> Runner:
        def run() -> dict[str, float]:
            wall = sse_throughput._time(client, expected)
            return {"wall": wall * 1000, "per chunk": wall / chunks * 1e6}

        return run

    with sse_throughput.server_process(chunks) as base_url:
        sdk = sse_throughput.sdk_client(base_url, chunks)
        runners: dict[str, Runner | str] = {
            AGENTCORE: timed(sse_throughput.agentcore_client(base_url, chunks)),
            OPENAI_SDK: ("openai not installed (pip install -e '.[bench]'): skipped"
                         if sdk is None else timed(sdk)),
            floor_name: timed(sse_throughput.floor_client(base_url, chunks)),
        }
        variants = _drive("sse_throughput", units, runners, runs, warmup)
    ours = _find(variants, AGENTCORE)
    theirs = _find(variants, OPENAI_SDK)
    assert ours is not None
    ratio = None if theirs is None else theirs.median("wall") / ours.median("wall")
    return variants, [Target("sse_throughput", "openai SDK / agentcore (time)", ratio, ">=",
                             TARGET_SSE_RATIO, "x", None if theirs else "openai not installed")]


# --- case 4: memory -----------------------------------------------------------------------------

# Every variant holds the same conversation: MESSAGES messages cycling through a user text, an
# assistant text, an assistant tool call and its tool result. Fields beyond these contents take
# each library's defaults unless the variant says otherwise.


def _user_text(i: int) -> str:
    return f"Please look at item {i} and tell me whether anything is wrong with it."


def _assistant_text(i: int) -> str:
    return f"Item {i} looks fine to me; I will read its record to be sure."


def _call_id(i: int) -> str:
    return f"call_{i:024d}"  # OpenAI's call ids: "call_" + 24 characters


def _args(i: int) -> dict[str, Any]:
    return {"item": i, "verbose": False}


def _result_text(i: int) -> str:
    return f"item {i}: status=ok, owner=ops, size={i * 7} bytes"


def _build_agentcore(n: int, provider_filled: bool = False) -> list[Any]:
    model = ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai",
                     "https://api.openai.com/v1", cost=ac.ModelCost(0.15, 0.6, 0.075, 0.0))
    out: list[Any] = []
    for i in range(n):
        kind = i % 4
        extra: dict[str, Any] = {}
        if provider_filled and kind in (1, 2):
            usage = ac.Usage(input=1200 + i, output=40, total_tokens=1240 + i)
            extra = {"usage": ac.calculate_cost(model, usage),
                     "response_id": f"chatcmpl-{i:029d}"}
        if kind == 0:
            out.append(ac.UserMessage(_user_text(i)))
        elif kind == 1:
            out.append(ac.AssistantMessage([ac.TextContent(_assistant_text(i))], model.api,
                                           model.provider, model.id, **extra))
        elif kind == 2:
            out.append(ac.AssistantMessage(
                [ac.ToolCall(_call_id(i - 2), "read_item", _args(i))], model.api,
                model.provider, model.id, stop_reason=ac.StopReason.TOOL_USE, **extra))
        else:
            out.append(ac.ToolResultMessage(_call_id(i - 3), "read_item",
                                            [ac.TextContent(_result_text(i))]))
    return out


def _build_agents_sdk(n: int) -> list[Any]:
    from agents.items import ItemHelpers
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    out: list[Any] = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.extend(ItemHelpers.input_to_new_input_list(_user_text(i)))
        elif kind == 1:  # the message id is required; OpenAI's are "msg_" + 48 hex digits
            out.append(ResponseOutputMessage(
                id=f"msg_{i:048x}", role="assistant", status="completed", type="message",
                content=[ResponseOutputText(annotations=[], text=_assistant_text(i),
                                            type="output_text")],
            ).model_dump(exclude_unset=True))
        elif kind == 2:
            out.append(ResponseFunctionToolCall(
                arguments=json.dumps(_args(i)), call_id=_call_id(i - 2), name="read_item",
                type="function_call").model_dump(exclude_unset=True))
        else:
            call = ResponseFunctionToolCall(arguments="{}", call_id=_call_id(i - 3),
                                            name="read_item", type="function_call")
            out.append(ItemHelpers.tool_call_output_item(call, _result_text(i)))
    return out


def _build_pydantic_ai(n: int) -> list[Any]:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.append(ModelRequest(parts=[UserPromptPart(_user_text(i))]))
        elif kind == 1:
            out.append(ModelResponse(parts=[TextPart(_assistant_text(i))],
                                     model_name="gpt-4o-mini"))
        elif kind == 2:  # its OpenAI models keep the arguments as the JSON string received
            out.append(ModelResponse(
                parts=[ToolCallPart("read_item", json.dumps(_args(i)), _call_id(i - 2))],
                model_name="gpt-4o-mini"))
        else:
            out.append(ModelRequest(parts=[ToolReturnPart("read_item", _result_text(i),
                                                          _call_id(i - 3))]))
    return out


def _build_dicts(n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.append({"role": "user", "content": _user_text(i)})
        elif kind == 1:
            out.append({"role": "assistant", "content": _assistant_text(i)})
        elif kind == 2:
            out.append({"role": "assistant", "content": None, "tool_calls": [{
                "id": _call_id(i - 2), "type": "function",
                "function": {"name": "read_item", "arguments": json.dumps(_args(i))}}]})
        else:
            out.append({"role": "tool", "tool_call_id": _call_id(i - 3),
                        "content": _result_text(i)})
    return out


MEMORY_VARIANTS: dict[str, tuple[str | None, Callable[[int], list[Any]]]] = {
    AGENTCORE: (None, _build_agentcore),
    "agentcore (+ usage, cost, response id)": (
        None, lambda n: _build_agentcore(n, provider_filled=True)),
    AGENTS_SDK: ("agents", _build_agents_sdk),
    PYDANTIC_AI: ("pydantic_ai", _build_pydantic_ai),
    "plain dicts (Chat Completions)": (None, _build_dicts),
}


def memory_child(variant: str, n: int, runs: int, warmup: int) -> dict[str, Any]:
    """In a fresh interpreter: build the history `warmup + runs` times, traced by tracemalloc.

    Per build: traced memory (`tracemalloc.get_traced_memory`) right after starting tracing and
    after the build, with the history still alive, so what is counted is what the history keeps,
    not the temporaries of building it. The allocation count comes from one snapshot of the last
    build (snapshots are slow; the size is the same either way).
    """
    import gc
    import tracemalloc

    module, build = MEMORY_VARIANTS[variant]
    if module is not None and importlib.util.find_spec(module) is None:
        return {"skipped": f"{module} not installed (pip install -e '.[bench]'): skipped"}
    build(4)  # imports, caches: not part of any measured build
    per_message: list[float] = []
    count = 0
    for i in range(warmup + runs):
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        history = build(n)
        after = tracemalloc.get_traced_memory()[0]
        if i == warmup + runs - 1:
            stats = tracemalloc.take_snapshot().statistics("filename")
            count = sum(s.count for s in stats if s.traceback[0].filename != tracemalloc.__file__)
        tracemalloc.stop()
        if len(history) != n:
            raise RuntimeError(f"{len(history)} messages built, expected {n}")
        if i >= warmup:
            per_message.append((after - before) / n)
        del history
    blocks = [count / n] * runs
    return {"per message": per_message, "allocations per message": blocks}


def case_memory(runs: int, warmup: int) -> tuple[list[Variant], list[Target]]:
    units = {"per message": "B", "allocations per message": "n"}
    variants = []
    for name in MEMORY_VARIANTS:
        variant = Variant("memory", name, units)
        done = subprocess.run(
            [sys.executable, __file__, "--memory-child", name, "--messages", str(MESSAGES),
             "--runs", str(runs), "--warmup", str(warmup)],
            capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            if name not in PEERS:
                raise RuntimeError(f"memory child failed:\n{done.stderr}")
            variant.skipped, variant.note = True, f"failed: {done.stderr.strip()[-300:]}"
        else:
            report = json.loads(done.stdout)
            if "skipped" in report:
                variant.skipped, variant.note = True, report["skipped"]
            else:
                variant.samples = report
        variants.append(variant)
    ours = _find(variants, AGENTCORE)
    assert ours is not None
    return variants, [Target("memory", "agentcore bytes per message", ours.median("per message"),
                             "<=", TARGET_BYTES_PER_MESSAGE, "B")]


# --- case 5: import time ------------------------------------------------------------------------


def _import_env() -> dict[str, str]:
    """This environment, with bytecode caching on for every package alike.

    The bytecode goes to a private cache directory (PYTHONPYCACHEPREFIX), so nothing is written
    into the source tree or site-packages, and no package is measured compiling from source
    while another loads cached bytecode (the warm-up run fills the cache).
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "agentcore-bench-pycache")
    return env


def case_import_time(runs: int, warmup: int) -> tuple[list[Variant], list[Target]]:
    env = _import_env()

    def timed(package: str) -> Runner:
        return lambda: {"import": loop_overhead.import_time_ms(package, env)}

    runners: dict[str, Runner | str] = {AGENTCORE: timed("agentcore")}
    for name, module in PEER_MODULES.items():
        runners[name] = _peer(name, functools.partial(timed, module))
    variants = _drive("import_time", {"import": "ms"}, runners, runs, warmup)
    ours = _find(variants, AGENTCORE)
    assert ours is not None
    return variants, [Target("import_time", "import agentcore (-X importtime, cumulative)",
                             ours.median("import"), "<=", TARGET_IMPORT_MS, "ms")]


# --- case 6: abort latency ----------------------------------------------------------------------


def serve_slow(pace_s: float) -> None:
    """A slow OpenAI-compatible server: the role chunk and first content chunk at once, then one
    content chunk every `pace_s` seconds; prints its port, runs until terminated."""
    events = sse_throughput.build_events(SLOW_CHUNKS)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for n, event in enumerate(events):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    if n >= 1:
                        time.sleep(pace_s)
                self.wfile.write(b"0\r\n\r\n")
            except OSError:  # the client hung up (that is what an abort does)
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            """Silence per-request log lines."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.1)


class _ServerModel:
    """Stands in for agent_latency's FauxProvider: a fixed model on the slow server."""

    def __init__(self, model: ac.Model) -> None:
        self.model = model

    def get_model(self) -> ac.Model:
        return self.model

    def set_responses(self, replies: list[Any]) -> None:
        """Ignored: the server always streams the same long reply."""

    def unregister(self) -> None:
        """Nothing to undo."""


def case_abort_latency(runs: int, warmup: int) -> tuple[list[Variant], list[Target]]:
    argv = [sys.executable, __file__, "--serve-slow"]
    with sse_throughput.server_process(SLOW_CHUNKS, argv) as base_url:
        model = ac.Model(sse_throughput.MODEL_ID, "GPT-4o mini", "openai-completions", "openai",
                         base_url=f"{base_url}/v1")
        bench = agent_latency.Bench(_ServerModel(model))  # type: ignore[arg-type]
        bench.agent.get_api_key = lambda provider: sse_throughput.API_KEY
        try:
            def run() -> dict[str, float]:
                times = agent_latency.abort_streaming(bench)
                return {"abort -> agent_end": times["listener"],
                        "abort -> run.result()": times["result"]}

            variants = _drive("abort_latency",
                              {"abort -> agent_end": "ms", "abort -> run.result()": "ms"},
                              {AGENTCORE: run}, runs, warmup)
        finally:
            bench.close()
    return variants, [Target("abort_latency", "agentcore abort -> agent_end, streaming",
                             variants[0].median("abort -> agent_end"), "<=", TARGET_ABORT_MS,
                             "ms")]


# --- case 7: AWS event-stream decoding ----------------------------------------------------------


def case_eventstream(runs: int, warmup: int) -> tuple[list[Variant], list[Target]]:
    frames = eventstream.converse_stream(eventstream.EVENTS)
    readings = {"16 KiB reads": eventstream.reads(frames, "16k"),
                "one frame per read": eventstream.reads(frames, "frame")}

    def timed(decode: Callable[[list[bytes]], tuple[float, int]]) -> Runner:
        def run() -> dict[str, float]:
            out = {}
            for metric, chunks in readings.items():
                wall, count = decode(chunks)
                assert count == len(frames), f"{count} of {len(frames)} messages decoded"
                out[metric] = wall * 1000
            return out

        return run

    runners: dict[str, Runner | str] = {
        AGENTCORE: timed(eventstream.time_ours),
        BOTOCORE: (timed(eventstream.time_botocore) if importlib.util.find_spec("botocore")
                   else "botocore not installed (pip install -e '.[bedrock]'): skipped"),
    }
    variants = _drive("eventstream", dict.fromkeys(readings, "ms"), runners, runs, warmup)
    ours = _find(variants, AGENTCORE)
    theirs = _find(variants, BOTOCORE)
    assert ours is not None
    return variants, [
        Target("eventstream", f"agentcore / botocore EventStreamBuffer (time, {metric})",
               None if theirs is None else ours.median(metric) / theirs.median(metric), "<=",
               TARGET_EVENTSTREAM_RATIO, "x", None if theirs else "botocore not installed")
        for metric in readings]


# --- case 8: approval round trip ---------------------------------------------------------------


def case_approvals(runs: int, warmup: int) -> tuple[list[Variant], list[Target]]:
    directory = tempfile.mkdtemp(prefix=".approvals-compare-", dir=approvals.default_dir())

    def timed(trip: Callable[[Any], dict[str, float]]) -> Runner:
        def run() -> dict[str, float]:  # one run: the median of approvals.TRIPS round trips
            figures: dict[str, list[float]] = {}
            for _ in range(approvals.TRIPS):
                for part, value in trip(Path(directory)).items():
                    figures.setdefault(part, []).append(value)
            return {part: statistics.median(values) for part, values in figures.items()}

        return run

    runners: dict[str, Runner | str] = {
        AGENTCORE: timed(approvals.agentcore_trip),
        AGENTS_SDK: _peer(AGENTS_SDK, lambda: timed(approvals.agents_sdk_trip_factory())),
    }
    units = dict.fromkeys(("round trip", "prompt → pause", "reload", "resume → end"), "ms")
    try:
        variants = _drive("approvals", units, runners, runs, warmup)
    finally:
        shutil.rmtree(directory)
    ours = _find(variants, AGENTCORE)
    theirs = _find(variants, AGENTS_SDK)
    assert ours is not None
    return variants, [
        Target("approvals", "agentcore pause → reload → resume → end", ours.median("round trip"),
               "<=", TARGET_TRIP_MS, "ms"),
        Target("approvals", "agentcore / openai-agents (time, round trip)",
               None if theirs is None else ours.median("round trip") / theirs.median(
                   "round trip"), "<=", TARGET_TRIP_RATIO, "x",
               None if theirs else "openai-agents not installed"),
    ]


# --- output -------------------------------------------------------------------------------------

CASE_FUNCTIONS: dict[str, Callable[[int, int], tuple[list[Variant], list[Target]]]] = {
    "loop_overhead": case_loop_overhead,
    "parallel_fanout": case_parallel_fanout,
    "sse_throughput": case_sse_throughput,
    "memory": case_memory,
    "import_time": case_import_time,
    "abort_latency": case_abort_latency,
    "eventstream": case_eventstream,
    "approvals": case_approvals,
}


def _ratio(variants: list[Variant], variant: Variant, metric: str) -> float | None:
    """This variant's median over agentcore's, for the same metric (None for ratios)."""
    ours = _find(variants, AGENTCORE)
    if ours is None or metric not in ours.samples or variant.units[metric] in ("x", "n"):
        return None
    base = ours.median(metric)
    return variant.median(metric) / base if base else None


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _table(results: list[tuple[list[Variant], list[Target]]]) -> str:
    rows = [("case", "variant", "metric", "median", "min", "max", "unit", "x agentcore")]
    for variants, _ in results:
        for v in variants:
            if v.skipped:
                rows.append((v.case, v.name, "(skipped)", "", "", "", "", ""))
                continue
            for metric, values in v.samples.items():
                rows.append((v.case, v.name, metric, _fmt(statistics.median(values)),
                             _fmt(min(values)), _fmt(max(values)), v.units[metric],
                             _fmt(_ratio(variants, v, metric))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [c.ljust(w) if i < 3 or i == 6 else c.rjust(w)
                 for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _target_line(t: Target) -> str:
    status = "skipped" if t.ok is None else ("ok" if t.ok else "MISSED")
    value = "-" if t.value is None else _fmt(t.value)
    extra = f" ({t.note})" if t.note else ""
    return f"{t.case}: {t.what} = {value} {t.unit} (target {t.op} {t.limit:g}): {status}{extra}"


def _json_lines(results: list[tuple[list[Variant], list[Target]]],
                elapsed: dict[str, float]) -> Iterator[str]:
    for variants, targets in results:
        for v in variants:
            line: dict[str, Any] = {"case": v.case, "variant": v.name}
            if v.skipped:
                line["skipped"] = True
            else:
                line["metrics"] = {
                    metric: {"median": round(statistics.median(values), 4),
                             "min": round(min(values), 4), "max": round(max(values), 4),
                             "unit": v.units[metric], "runs": len(values),
                             "ratio_to_agentcore": (None if (r := _ratio(variants, v, metric))
                                                    is None else round(r, 4))}
                    for metric, values in v.samples.items()}
            if v.note:
                line["note"] = v.note
            if v.name == AGENTCORE:
                line["targets"] = [{"what": t.what, "value": None if t.value is None
                                    else round(t.value, 4), "op": t.op, "limit": t.limit,
                                    "unit": t.unit, "ok": t.ok, "note": t.note}
                                   for t in targets]
            line["case_seconds"] = round(elapsed[v.case], 2)
            yield json.dumps(line)


def _versions() -> str:
    parts = []
    for dist in ("agentcore", "openai-agents", "pydantic-ai-slim", "openai", "botocore"):
        try:
            parts.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per case and variant")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated cases to run (default: all of {', '.join(CASES)})")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per variant")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="untimed runs before those")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--messages", type=int, default=MESSAGES, help=argparse.SUPPRESS)
    parser.add_argument("--serve-slow", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be positive and --warmup not negative")
    if args.serve_slow:
        serve_slow(SLOW_PACE_S)
        return 0
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child, args.messages, args.runs,
                                      args.warmup)))
        return 0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASE_FUNCTIONS]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}; choose from {', '.join(CASES)}")

    started = clock()
    results, elapsed = [], {}
    for case in cases:
        case_start = clock()
        results.append(CASE_FUNCTIONS[case](args.runs, args.warmup))
        elapsed[case] = clock() - case_start
    total = clock() - started
    targets = [t for _, ts in results for t in ts]
    if args.json:
        for line in _json_lines(results, elapsed):
            print(line)
    else:
        print(f"{_versions()}; Python {platform.python_version()}, nproc {os.cpu_count()}; "
              f"median of {args.runs} runs after {args.warmup} warm-up run(s) per variant")
        print(_table(results))
        print("\ntargets:")
        for t in targets:
            print(f"  {_target_line(t)}")
        notes = [f"{v.case} / {v.name}: {v.note}" for vs, _ in results for v in vs if v.note]
        if notes:
            print("\nnotes:")
            for note in notes:
                print(f"  {note}")
        print("\ntime: " + ", ".join(f"{c} {s:.1f} s" for c, s in elapsed.items())
              + f"; total {total:.1f} s")
    return 1 if args.check and any(t.ok is False for t in targets) else 0


if __name__ == "__main__":
    sys.exit(main())
