"""Many AG-UI streams at once: `agentcore.web.app` beside pydantic-ai's AG-UI adapter.

    python benchmarks/web_load.py                    # 200 streams at once, 5 rounds, both servers
    python benchmarks/web_load.py --streams 50 --rounds 3
    python benchmarks/web_load.py --servers agentcore --tokens-per-second 200
    python benchmarks/web_load.py --json             # one JSON object per server and round
    python benchmarks/web_load.py --switch-interval 0.0005   # the servers' GIL switch interval
    python benchmarks/web_load.py --serve agentcore  # one server alone: prints its port

Each server runs on uvicorn (h11, asyncio, 127.0.0.1) in a process of its own (this file with
`--serve`), so that the client does not share its GIL; the client, in this process, is a bare
asyncio HTTP/1.1 client that opens one connection per stream. Both servers answer "What is 6 * 7?"
with the same conversation, streamed in the same chunks (4 or 8 characters each, as the offline
model cuts them): a text, a `calculator` call, the tool's result `42`, a closing text, and
neither model waits between chunks unless `--tokens-per-second` asks (what is measured is the
machinery between the model and the socket):

- agentcore: `agentcore.web.app(make_agent)`, a new `Agent` per threadId on the offline model
  (`agentcore._cli._offline.register_offline`) with the demo's calculator and clock.
- pydantic-ai: a Starlette app whose `POST /ag-ui` is `AGUIAdapter.dispatch_request(request,
  agent=agent)`, one `Agent` on a `FunctionModel` whose stream function plays the same
  replies, with an `async def calculator` (its cheapest tool path) that calls the same
  `calculate` as the demo's tool.

A round sends N streams at once, each on a new threadId; the servers alternate round by round
after one untimed warm-up round each. Per stream, from the moment its request is written: time
to the first `data:` line (first event, RUN_STARTED), to the first TEXT_MESSAGE_CONTENT (first
text) and to the last `data:` line (last event). Per round: the wall time from the first
connect to the last stream's end, events per second, the server's CPU (`/proc/PID/stat`), peak
threads (sampled every 10 ms) and RSS. Every stream is checked afterwards (status 200, every
event valid under `ag_ui.core`'s models, RUN_STARTED first and RUN_FINISHED last, the tool's
result "42", the answer's text). See README.md beside this file for the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import random
import select
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

STREAMS = 200
ROUNDS = 5
SERVERS = ("agentcore", "pydantic-ai")
SERVER_START_TIMEOUT_S = 60.0
STREAM_TIMEOUT_S = 120.0
BACKLOG = 4096
PROMPT = "What is 6 * 7?"
ANSWER = "The calculator says 6 * 7 = 42."
clock = time.perf_counter


# --- the servers (each in its own process) ------------------------------------------------------


def agentcore_app(tokens_per_second: float | None) -> Any:
    """`agentcore.web.app` with a new Agent per threadId on the offline model."""
    from agentcore import Agent
    from agentcore._cli._demo_tools import SYSTEM_PROMPT, calculator_tool, clock_tool
    from agentcore._cli._offline import register_offline
    from agentcore.web import app

    faux = register_offline(tokens_per_second)

    def make_agent(thread_id: str) -> Agent:
        return Agent(faux.get_model(), system_prompt=SYSTEM_PROMPT,
                     tools=[calculator_tool(), clock_tool()])

    return app(make_agent)


def pydantic_ai_app(tokens_per_second: float | None) -> Any:
    """pydantic-ai's AG-UI adapter over a FunctionModel playing the offline model's replies."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ToolCallPart, ToolReturnPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from agentcore._cli._demo_tools import SYSTEM_PROMPT, calculate
    from agentcore._cli._offline import _expression

    chunker = random.Random(0)

    def chunks(text: str) -> Iterator[str]:
        """Cut as the faux provider cuts with token_size=(1, 2): 4 or 8 characters a chunk."""
        i = 0
        while i < len(text):
            size = chunker.randint(1, 2) * 4
            yield text[i : i + size]
            i += size

    async def paced(chunk: str) -> None:
        if tokens_per_second:
            await asyncio.sleep(max(1, len(chunk) // 4) / tokens_per_second)

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        last = messages[-1]
        results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if results:  # the tool has answered: report it, as offline_reply does
            calls = {p.tool_call_id: p for p in messages[-2].parts if isinstance(p, ToolCallPart)}
            expression = calls[results[0].tool_call_id].args_as_dict()["expression"]
            text = f"The calculator says {expression} = {results[0].model_response_str()}."
            for chunk in chunks(text):
                await paced(chunk)
                yield chunk
            return
        said = "".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))
        expression = _expression(said) or "0"
        for chunk in chunks(f'You said "{said}". Let me ask the calculator.'):
            await paced(chunk)
            yield chunk
        call_id = f"call_{chunker.getrandbits(48):x}"
        for i, chunk in enumerate(chunks(json.dumps({"expression": expression}))):
            await paced(chunk)
            yield {0: DeltaToolCall(name="calculator" if i == 0 else None, json_args=chunk,
                                    tool_call_id=call_id if i == 0 else None)}

    async def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: The expression, e.g. "17 * 23".
        """
        return str(calculate(expression))

    agent = Agent(FunctionModel(stream_function=stream), system_prompt=SYSTEM_PROMPT,
                  tools=[calculator])

    async def run(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route("/ag-ui", run, methods=["POST"])])


def serve(kind: str, tokens_per_second: float | None, switch_interval: float | None) -> None:
    """Serve `kind` on uvicorn at 127.0.0.1; print the port once listening; run until SIGTERM."""
    import uvicorn

    if switch_interval:
        sys.setswitchinterval(switch_interval)

    app = agentcore_app(tokens_per_second) if kind == "agentcore" else pydantic_ai_app(
        tokens_per_second)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(BACKLOG)  # connections wait in the backlog until uvicorn accepts them
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", http="h11", loop="asyncio",
                            backlog=BACKLOG, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


@contextlib.contextmanager
def server_process(kind: str, tokens_per_second: float | None,
                   switch_interval: float | None) -> Iterator[tuple[int, int]]:
    """Start `serve(kind)` in a child process; yield (port, pid); terminate it on the way out."""
    argv = [sys.executable, os.path.abspath(__file__), "--serve", kind]
    if tokens_per_second:
        argv += ["--tokens-per-second", str(tokens_per_second)]
    if switch_interval:
        argv += ["--switch-interval", str(switch_interval)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], SERVER_START_TIMEOUT_S)
        line = proc.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            raise RuntimeError(f"the {kind} server did not report its port (got {line!r})")
        yield int(line), proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid`, all its threads (`/proc/PID/stat`)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_status(pid: int) -> dict[str, int]:
    """Threads and resident KiB of process `pid` (`/proc/PID/status`)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Threads", "VmRSS"):
                out[key] = int(value.split()[0])
    return out


# --- the client (this process) ------------------------------------------------------------------


class Stream:
    """One stream as the client saw it: times from its request's send, and its `data:` lines."""

    __slots__ = ("closed", "error", "first", "last", "lines", "sent", "status", "text")

    def __init__(self) -> None:
        self.sent = 0.0
        self.first = 0.0  # the first `data:` line arrived (perf_counter)
        self.text = 0.0  # the first TEXT_MESSAGE_CONTENT arrived
        self.last = 0.0  # the last `data:` line arrived
        self.closed = 0.0  # the body ended
        self.status = 0
        self.lines: list[bytes] = []
        self.error: str | None = None


def run_input(thread_id: str) -> bytes:
    return json.dumps({
        "threadId": thread_id, "runId": f"run-{thread_id}",
        "messages": [{"id": f"msg-{thread_id}", "role": "user", "content": PROMPT}],
        "tools": [], "context": [], "state": None, "forwardedProps": None,
    }).encode()


async def one_stream(port: int, thread_id: str) -> Stream:
    """POST one run on a connection of its own and read its SSE body to the end."""
    seen = Stream()
    body = run_input(thread_id)
    head = (f"POST /ag-ui HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    writer = None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        seen.sent = clock()
        writer.write(head + body)
        status = await reader.readline()
        seen.status = int(status.split()[1])
        headers = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode("latin-1").partition(":")
            headers[key.strip().lower()] = value.strip()
        pending = b""
        if headers.get("transfer-encoding", "").lower() != "chunked":
            pending = await reader.readexactly(int(headers.get("content-length", "0")))
            seen.lines = pending.split(b"\n")
            return seen
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            data = await reader.readexactly(size + 2)
            if size == 0:
                break
            now = clock()
            pending += data[:-2]
            *complete, pending = pending.split(b"\n")
            for line in complete:
                if line.startswith(b"data: "):
                    seen.first = seen.first or now
                    seen.last = now
                    seen.lines.append(line)
                    if not seen.text and b'"TEXT_MESSAGE_CONTENT"' in line:
                        seen.text = now
        seen.closed = clock()
    except Exception as exc:  # reported with the round's results, never raised mid-round
        seen.error = f"{type(exc).__name__}: {exc}"
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
    return seen


def check(seen: Stream, thread_id: str, adapter: Any, ag: Any) -> str | None:
    """Why `seen` is not a whole, valid, successful run of the conversation; None when it is."""
    if seen.error:
        return seen.error
    if seen.status != 200:
        return f"status {seen.status}: {b' '.join(seen.lines)[:200]!r}"
    try:
        events = [adapter.validate_json(line[len(b"data: "):]) for line in seen.lines]
    except Exception as exc:
        return f"an event is not valid AG-UI: {exc}"[:300]
    types = [e.type for e in events]
    if not types or types[0] != ag.EventType.RUN_STARTED or types[-1] != ag.EventType.RUN_FINISHED:
        return f"events {types[:3]} ... {types[-3:]}"
    if events[0].thread_id != thread_id or events[-1].thread_id != thread_id:
        return "another threadId"
    outcome = getattr(events[-1], "outcome", None)
    if outcome is not None and outcome.type != "success":
        return f"outcome {outcome!r}"
    results = [e.content for e in events if e.type == ag.EventType.TOOL_CALL_RESULT]
    if results != ["42"]:
        return f"tool results {results!r}"
    text = "".join(e.delta for e in events if e.type == ag.EventType.TEXT_MESSAGE_CONTENT)
    if not text.endswith(ANSWER):
        return f"text {text[-80:]!r}"
    return None


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile of `values`, linearly interpolated (inclusive)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q / 100
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


async def sample_threads(pid: int, peak: list[int], stop: asyncio.Event) -> None:
    """Keep the server's peak thread count in `peak[0]`, sampled every 10 ms."""
    while not stop.is_set():
        with contextlib.suppress(OSError):
            peak[0] = max(peak[0], process_status(pid)["Threads"])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.01)


def measure_round(kind: str, port: int, pid: int, n: int, label: str) -> dict[str, Any]:
    """N streams at once against one server; the round's figures and every stream checked."""
    import pydantic
    from ag_ui import core as ag

    thread_ids = [f"{label}-{i:04d}" for i in range(n)]
    peak = [0]

    async def main() -> tuple[list[Stream], float, float]:
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample_threads(pid, peak, stop))
        started = clock()
        streams = await asyncio.wait_for(
            asyncio.gather(*(one_stream(port, t) for t in thread_ids)), STREAM_TIMEOUT_S)
        ended = clock()
        stop.set()
        await sampler
        return streams, started, ended

    server_cpu = process_cpu_s(pid)
    client_cpu = time.process_time()
    streams, started, ended = asyncio.run(main())
    client_cpu = time.process_time() - client_cpu
    server_cpu = process_cpu_s(pid) - server_cpu
    adapter = pydantic.TypeAdapter(ag.Event)
    problems = [(t, p) for t, s in zip(thread_ids, streams, strict=True)
                if (p := check(s, t, adapter, ag)) is not None]
    good = [s for t, s in zip(thread_ids, streams, strict=True) if s.first]
    ttfe = [(s.first - s.sent) * 1e3 for s in good]
    ttle = [(s.last - s.sent) * 1e3 for s in good]
    ttft = [(s.text - s.sent) * 1e3 for s in good if s.text]
    events = sum(len(s.lines) for s in good)
    wall = ended - started
    return {
        "server": kind, "round": label, "streams": n, "complete": n - len(problems),
        "first_problem": f"{problems[0][0]}: {problems[0][1]}" if problems else None,
        "wall_s": wall, "ttfe_p50_ms": percentile(ttfe, 50), "ttfe_p99_ms": percentile(ttfe, 99),
        "ttfe_max_ms": max(ttfe, default=float("nan")),
        "ttft_p50_ms": percentile(ttft, 50), "ttft_p99_ms": percentile(ttft, 99),
        "ttle_p50_ms": percentile(ttle, 50), "ttle_p99_ms": percentile(ttle, 99),
        "events": events, "events_per_stream": events / max(1, len(good)),
        "events_per_s": events / wall, "server_cpu_s": server_cpu,
        "server_cpu_ms_per_stream": server_cpu / n * 1e3, "client_cpu_s": client_cpu,
        "server_peak_threads": peak[0], "server_rss_mib": process_status(pid)["VmRSS"] / 1024,
    }


# --- the report ---------------------------------------------------------------------------------

ROWS = (  # key, label, unit, digits
    ("complete", "streams complete and valid", "", 0),
    ("wall_s", "wall time, first send → last stream's end", "s", 3),
    ("ttfe_p50_ms", "time to first event, p50", "ms", 1),
    ("ttfe_p99_ms", "time to first event, p99", "ms", 1),
    ("ttft_p50_ms", "time to first text (TEXT_MESSAGE_CONTENT), p50", "ms", 1),
    ("ttft_p99_ms", "time to first text, p99", "ms", 1),
    ("ttle_p50_ms", "time to last event, p50", "ms", 1),
    ("ttle_p99_ms", "time to last event, p99", "ms", 1),
    ("events_per_s", "events per second (all streams)", "1/s", 0),
    ("events_per_stream", "events per stream", "", 1),
    ("server_cpu_ms_per_stream", "server CPU per stream", "ms", 2),
    ("server_peak_threads", "server peak threads", "", 0),
    ("server_rss_mib", "server RSS after the round", "MiB", 0),
    ("client_cpu_s", "client CPU (this process)", "s", 3),
)


def _fmt(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    """The markdown table: the median over rounds (min-max) per server, and their ratio."""
    kinds = [k for k in SERVERS if results.get(k)]
    head = "| measurement | " + " | ".join(f"{k} median (min-max)" for k in kinds)
    if len(kinds) == 2:
        head += f" | {kinds[0]} / {kinds[1]} (median of rounds)"
    lines = [head + " | unit |", "|---|" + "---:|" * (len(kinds) + (len(kinds) == 2)) + "---|"]
    for key, label, unit, digits in ROWS:
        cells = []
        for kind in kinds:
            values = [r[key] for r in results[kind]]
            cells.append(f"{_fmt(statistics.median(values), digits)} "
                         f"({_fmt(min(values), digits)}-{_fmt(max(values), digits)})")
        if len(kinds) == 2:
            pairs = zip(results[kinds[0]], results[kinds[1]], strict=True)
            ratios = [a[key] / b[key] for a, b in pairs if b[key]]
            cells.append(f"{statistics.median(ratios):.2f}" if ratios else "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {unit} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=STREAMS, help="streams at once a round")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="timed rounds per server")
    parser.add_argument("--servers", default=",".join(SERVERS),
                        help=f"comma-separated, of {', '.join(SERVERS)}")
    parser.add_argument("--tokens-per-second", type=float, default=None,
                        help="pace both models (default: no delay between chunks)")
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="the servers' sys.setswitchinterval (default: Python's, 0.005 s)")
    parser.add_argument("--json", action="store_true", help="one JSON object per round")
    parser.add_argument("--serve", choices=SERVERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.tokens_per_second, args.switch_interval)
        return 0
    kinds = [k.strip() for k in args.servers.split(",") if k.strip()]
    unknown = set(kinds) - set(SERVERS)
    if unknown:
        parser.error(f"unknown servers: {sorted(unknown)}")
    if "pydantic-ai" in kinds:
        try:
            importlib.import_module("pydantic_ai.ui.ag_ui")
        except ImportError as exc:
            print(f"pydantic-ai left out: {exc}", file=sys.stderr)
            kinds.remove("pydantic-ai")
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    with contextlib.ExitStack() as stack:
        servers = {k: stack.enter_context(
                       server_process(k, args.tokens_per_second, args.switch_interval))
                   for k in kinds}
        for kind, (port, pid) in servers.items():  # untimed: imports, first connections
            warm = measure_round(kind, port, pid, args.streams, f"{kind}-warm")
            if warm["complete"] != args.streams:
                raise SystemExit(f"{kind} warm-up failed: {warm['first_problem']}")
        for r in range(args.rounds):
            order = kinds if r % 2 == 0 else kinds[::-1]
            for kind in order:
                port, pid = servers[kind]
                result = measure_round(kind, port, pid, args.streams, f"{kind}-{r}")
                results[kind].append(result)
                if args.json:
                    print(json.dumps(result), flush=True)
                else:
                    print(f"round {r} {kind}: {result['complete']}/{args.streams} complete, "
                          f"wall {result['wall_s']:.3f} s, first event p50 "
                          f"{result['ttfe_p50_ms']:.1f} ms p99 {result['ttfe_p99_ms']:.1f} ms",
                          file=sys.stderr, flush=True)
    if not args.json:
        pace = (f"{args.tokens_per_second:g} tokens/s" if args.tokens_per_second
                else "no delay between chunks")
        print(f"{args.streams} streams at once, {args.rounds} rounds, {pace}\n")
        print(table(results))
    failed = [r for rs in results.values() for r in rs if r["complete"] != args.streams]
    for r in failed:
        print(f"{r['round']}: {r['streams'] - r['complete']} stream(s) failed, first: "
              f"{r['first_problem']}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
