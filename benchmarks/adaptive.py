"""A batch against a server of limited capacity: `run_batch` with adaptive concurrency on and off.

    python benchmarks/adaptive.py              # 1,000 runs, N=200, C=20, d=0.2 s; median of 3
    python benchmarks/adaptive.py --quick      # 200 runs, N=50, C=10, d=0.1 s; once
    python benchmarks/adaptive.py --json       # one JSON object per measurement and line
    python benchmarks/adaptive.py --check      # exit 1 when a target is missed
    python benchmarks/adaptive.py --runs 1000 --n 200 --capacity 20 --duration 0.2 --repeat 5

The server (this file with `--serve`, asyncio, its own process) answers OpenAI Chat Completions
requests with a streamed text reply of CHUNKS events spread evenly over `--duration` seconds (d)
to at most `--capacity` (C) requests at once, and any request beyond with a 429 that names no
delay (no `Retry-After`), as a provider with a concurrency limit does. A stream's place is free
before its last bytes go out. `GET /stats?reset=1` returns its counters (requests, 429s, the
most streams at once) and starts counting afresh.

Each measurement runs in a fresh child process (this file with `--child`): `run_batch` of
`--runs` one-request runs with `max_concurrency=N`, `adaptive` on or off, HTTP retries as by
default (2 retries, backoff 0.5 s then 1 s, less up to 25 %); its clock runs from the call to the
last result. The variants alternate, repetition after repetition. Ideal: `runs / C * d`, the
time the server needs to stream every reply once at full capacity. Targets (issue 35), for
adaptive on: every run completes, 429s under 10 % of requests, wall at most 1.5 x ideal. See
README.md beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

from run_log import _row, _table  # the rows and table as run_log.py prints them

import agentcore as ac

RUNS, N, CAPACITY, DURATION_S, REPEAT = 1000, 200, 20, 0.2, 3
QUICK = {"runs": 200, "n": 50, "capacity": 10, "duration": 0.1, "repeat": 1}
CHUNKS = 5
MAX_429_SHARE = 0.10
MAX_RATIO = 1.5
HERE = os.path.dirname(os.path.abspath(__file__))


# --- the server (its own process) --------------------------------------------------------------


def _event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
             "model": "m-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def _framed(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


_HEAD_200 = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n")
_REFUSAL = json.dumps({"error": {"message": "Too many concurrent requests",
                                 "type": "rate_limit_error"}}).encode()
_HEAD_429 = (b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
             b"Content-Length: %d\r\n\r\n" % len(_REFUSAL)) + _REFUSAL
_EVENTS = [_framed(_event({"role": "assistant", "content": "chunk 0 "}))] + [
    _framed(_event({"content": f"chunk {i} "})) for i in range(1, CHUNKS)]
_END = _framed(_event({}, "stop")) + _framed(b"data: [DONE]\n\n") + b"0\r\n\r\n"
TEXT = "".join(f"chunk {i} " for i in range(CHUNKS))


class Server:
    """The capped server's state: capacity, stream duration and counters."""

    def __init__(self, capacity: int, duration: float) -> None:
        self.capacity = capacity
        self.duration = duration
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.refused = 0
        self.streaming = 0
        self.max_streaming = 0

    def stats(self) -> dict[str, int]:
        return {"requests": self.requests, "refused": self.refused,
                "max_streaming": self.max_streaming}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                length = next((int(line.split(":", 1)[1]) for line in lines[1:]
                               if line.lower().startswith("content-length:")), 0)
                if length:
                    await reader.readexactly(length)
                if lines[0].startswith("GET /stats"):
                    body = json.dumps(self.stats()).encode()
                    if "reset=1" in lines[0]:
                        self.reset()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                    await writer.drain()
                    continue
                await self.answer(writer)
        writer.close()

    async def answer(self, writer: asyncio.StreamWriter) -> None:
        self.requests += 1
        if self.streaming >= self.capacity:
            self.refused += 1
            writer.write(_HEAD_429)
            await writer.drain()
            return
        self.streaming += 1
        self.max_streaming = max(self.max_streaming, self.streaming)
        open_ = True
        try:
            writer.write(_HEAD_200)
            started = time.monotonic()
            for i, event in enumerate(_EVENTS):
                await asyncio.sleep(max(0.0, started + self.duration * (i + 1) / CHUNKS
                                        - time.monotonic()))
                if i < len(_EVENTS) - 1:
                    writer.write(event)
                    continue
                self.streaming -= 1  # free before the end goes out (see the docstring)
                open_ = False
                writer.write(event + _END)
            await writer.drain()
        finally:
            if open_:  # the client went away mid-stream
                self.streaming -= 1


def serve(capacity: int, duration: float) -> None:
    """Serve on 127.0.0.1 (a free port, printed) until killed."""
    server = Server(capacity, duration)

    async def main() -> None:
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, backlog=4096)
        print(listener.sockets[0].getsockname()[1], flush=True)
        async with listener:
            await listener.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())


@contextlib.contextmanager
def server_process(capacity: int, duration: float) -> Iterator[str]:
    """The server in a child process; yields its base URL."""
    argv = [sys.executable, __file__, "--serve", "--capacity", str(capacity),
            "--duration", str(duration)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def stats(url: str, reset: bool = False) -> dict[str, int]:
    with urllib.request.urlopen(f"{url}/stats{'?reset=1' if reset else ''}") as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


# --- the client (a child process per measurement) ----------------------------------------------


def make_agent(url: str) -> ac.Agent:
    model = ac.Model("m-1", "M", "openai-completions", "openai", f"{url}/v1")
    return ac.Agent(model, api_key="k")


def child(url: str, runs: int, n: int, adaptive: bool) -> dict[str, Any]:
    """One batch; its wall time, and how many runs completed."""
    from agentcore.batch import run_batch

    started = time.perf_counter()
    results = list(run_batch(functools.partial(make_agent, url), [f"p{i}" for i in range(runs)],
                             max_concurrency=n, adaptive=adaptive))
    wall = time.perf_counter() - started
    errors = [r.error for r in results if r.error is not None]
    wrong = sum(1 for r in results if r.error is None and r.text != TEXT)
    return {"wall": wall, "completed": len(results) - len(errors) - wrong,
            "first_error": errors[0] if errors else None}


def measure_once(url: str, runs: int, n: int, adaptive: bool) -> dict[str, Any]:
    stats(url, reset=True)
    argv = [sys.executable, __file__, "--child", "on" if adaptive else "off", "--url", url,
            "--runs", str(runs), "--n", str(n)]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    measured = json.loads(out.strip().splitlines()[-1])
    measured.update(stats(url))
    return measured


def measure(runs: int, n: int, capacity: int, duration: float, repeat: int
            ) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    ideal = runs / capacity * duration
    seen: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    with server_process(capacity, duration) as url:
        for _ in range(repeat):
            for variant in seen:
                seen[variant].append(measure_once(url, runs, n, variant == "on"))
    rows = []
    for variant, results in seen.items():
        on = variant == "on"
        label = f"adaptive {variant}"
        completed = [float(r["completed"]) for r in results]
        refused = [float(r["refused"]) for r in results]
        share = [100 * r["refused"] / max(1, r["requests"]) for r in results]
        walls = [r["wall"] for r in results]
        ratio = [w / ideal for w in walls]
        rows += [
            _row(f"{label}: runs completed", completed, "runs",
                 f"= {runs}" if on else None,
                 statistics.median(completed) == runs if on else None),
            _row(f"{label}: 429 answers", refused, "reqs"),
            _row(f"{label}: 429s / requests", share, "%",
                 f"< {MAX_429_SHARE * 100:g}" if on else None,
                 statistics.median(share) < MAX_429_SHARE * 100 if on else None),
            _row(f"{label}: wall", walls, "s"),
            _row(f"{label}: wall / ideal ({ideal:g} s)", ratio, "x",
                 f"<= {MAX_RATIO:g}" if on else None,
                 statistics.median(ratio) <= MAX_RATIO if on else None),
            _row(f"{label}: most streams at once (server)",
                 [float(r["max_streaming"]) for r in results], "strm"),
        ]
    return rows, seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--quick", action="store_true", help=f"a smaller batch, once: {QUICK}")
    parser.add_argument("--runs", type=int, default=None, help=f"runs per batch ({RUNS})")
    parser.add_argument("--n", type=int, default=None, help=f"max_concurrency ({N})")
    parser.add_argument("--capacity", type=int, default=None,
                        help=f"streams the server serves at once ({CAPACITY})")
    parser.add_argument("--duration", type=float, default=None,
                        help=f"seconds one stream lasts ({DURATION_S})")
    parser.add_argument("--repeat", type=int, default=None,
                        help=f"batches per variant, the median shown ({REPEAT})")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=("on", "off"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else {"runs": RUNS, "n": N, "capacity": CAPACITY,
                                         "duration": DURATION_S, "repeat": REPEAT}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if min(args.runs, args.n, args.capacity, args.repeat) < 1 or args.duration <= 0:
        parser.error("--runs, --n, --capacity, --repeat and --duration must be positive")
    if args.serve:
        serve(args.capacity, args.duration)
        return 0
    if args.child is not None:
        print(json.dumps(child(args.url, args.runs, args.n, args.child == "on")))
        return 0
    started = time.perf_counter()
    rows, _ = measure(args.runs, args.n, args.capacity, args.duration, args.repeat)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}: {args.runs:,} runs, "
              f"max_concurrency={args.n}, server capacity {args.capacity} streams of "
              f"{args.duration:g} s; median of {args.repeat}; took "
              f"{time.perf_counter() - started:.1f} s")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
