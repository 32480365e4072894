"""HTTP at the edges: abort latency in every phase of a request, and connection reuse.

    python benchmarks/http_edges.py             # a table
    python benchmarks/http_edges.py --json      # one JSON object per line
    python benchmarks/http_edges.py --check     # exit 1 when a target is missed

Every request goes through `agentcore.stream` on an OpenAI Chat Completions model to a server
on 127.0.0.1 in this process. *Abort*: the stream is read on the main thread while a timer thread
calls `abort()` once the request is in the phase measured; the time is from `abort()` to the
return of `stream.result()` (the `error` event, `stop_reason` `"aborted"`). The phases: connecting
(a listener whose accept queue is full), waiting for response headers (a server that reads the
request and never answers), reading the body (one event, then silence) and sleeping before a
retry (a 429 with `Retry-After: 30`). Requests use `timeout=TIMEOUT_S` and `max_retries=0`
(`max_retries=2` for the retry sleep), so that a tree whose abort cannot reach a phase still ends
a run, at about that timeout. *Connections*: 20 consecutive replies through one client
(`HttpClient(Urllib3Transport())`; in older trees `new_http_session()`, or a plain
`requests.Session`), counting the TCP connections the server accepted. See README.md beside
this file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RUNS = 5
REPLIES = 20
TIMEOUT_S = 3.0
TARGET_ABORT_MS = 100.0
TARGET_CONNECTIONS = 2
KEY = "sk-bench-not-a-real-key"
REPLY = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
         b'[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}\n\n'
         b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
         b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
         b"data: [DONE]\n\n")


class Server(ThreadingHTTPServer):
    """Answers POSTs as `mode` says; counts accepted connections and requests seen."""

    daemon_threads = True

    def __init__(self) -> None:
        self.mode = "reply"
        self.nodelay = True
        self.accepted = 0
        self.requested = threading.Event()
        self.stop = threading.Event()
        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def close(self) -> None:
        self.stop.set()
        self.shutdown()
        self.server_close()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: Server

    def setup(self) -> None:
        super().setup()
        if self.server.nodelay:  # as most servers do (Go, uvicorn, Node): no Nagle delay
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.accepted += 1

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requested.set()
        mode = self.server.mode
        if mode == "hang":  # never answer; hold the connection until the client goes
            self._wait_for_close()
            return
        if mode == "429":
            body = b'{"error": {"message": "slow down"}}'
            self.send_response(429)
            self.send_header("Retry-After", "30")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if mode == "silence":  # one event, then nothing
            self._chunk(REPLY.split(b"\n\n")[0] + b"\n\n")
            self.wfile.flush()
            self._wait_for_close()
            return
        self._chunk(REPLY)
        self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _wait_for_close(self) -> None:
        self.close_connection = True
        self.connection.settimeout(0.05)
        while not self.server.stop.is_set():
            try:
                if self.connection.recv(1) == b"":
                    return
            except TimeoutError:
                continue
            except OSError:
                return

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""


@contextlib.contextmanager
def never_accepts() -> Iterator[str]:
    """The base URL of a listener on 127.0.0.1 whose accept queue is full: connects hang."""
    listener = socket.socket()
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(16):
            filler = socket.socket()
            filler.settimeout(0.2)
            try:
                filler.connect(("127.0.0.1", port))
            except TimeoutError:
                filler.close()
                break
            fillers.append(filler)
        else:
            raise RuntimeError("could not fill the accept queue of a local listener")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def model_at(base_url: str) -> Any:
    import agentcore as ac

    return ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai", base_url)


def new_session() -> tuple[str, Any, str]:
    """The option, its value and its name: agentcore's own client where the tree has one, else
    its session, else a plain `requests.Session` (older trees, compared in the same run)."""
    try:
        from agentcore.providers import HttpClient, Urllib3Transport
    except ImportError:
        pass
    else:
        return "http_client", HttpClient(Urllib3Transport()), "HttpClient(Urllib3Transport())"
    try:
        from agentcore.providers import new_http_session
    except ImportError:
        import requests

        return "http_session", requests.Session(), "requests.Session()"
    return "http_session", new_http_session(), "new_http_session()"


def abort_latency(base_url: str, ready: Callable[[], bool], max_retries: int = 0) -> float:
    """Stream from `base_url`, abort once `ready()` holds; seconds from abort to the end."""
    import agentcore as ac

    controller = ac.AbortController()
    options = ac.StreamOptions(api_key=KEY, signal=controller.signal, timeout=TIMEOUT_S,
                               max_retries=max_retries)
    stream = ac.stream(model_at(base_url), ac.Context(None, [ac.UserMessage("hi")]), options)
    aborted_at: list[float] = []

    def abort_when_ready() -> None:
        tick = threading.Event()
        while not ready():
            tick.wait(0.002)
        aborted_at.append(time.perf_counter())
        controller.abort()

    timer = threading.Thread(target=abort_when_ready, daemon=True)
    timer.start()
    result = stream.result()
    ended = time.perf_counter()
    timer.join(TIMEOUT_S)
    if result.stop_reason != "aborted":
        raise RuntimeError(f"expected an aborted reply, got {result.stop_reason}: "
                           f"{result.error_message}")
    return ended - aborted_at[0]


def measure_aborts(server: Server, runs: int) -> dict[str, list[float]]:
    """Abort → end of `stream()` in each phase, `runs` times each, in seconds."""
    times: dict[str, list[float]] = {phase: [] for phase in
                                     ("connecting", "waiting for headers", "reading the body",
                                      "sleeping before a retry")}
    for _ in range(runs):
        with never_accepts() as url:
            started = time.perf_counter()

            def connecting(started: float = started) -> bool:
                return time.perf_counter() - started > 0.1  # well into the blocked connect

            times["connecting"].append(abort_latency(url, connecting))
        for phase, mode, retries in (("waiting for headers", "hang", 0),
                                     ("reading the body", "silence", 0),
                                     ("sleeping before a retry", "429", 2)):
            server.mode = mode
            server.requested.clear()
            times[phase].append(abort_latency(server.url, server.requested.is_set, retries))
    return times


def measure_connections(server: Server, runs: int,
                        nodelay: bool = True) -> tuple[list[float], list[float], str]:
    """TCP connections opened by REPLIES replies through one session, and per reply (ms)."""
    import agentcore as ac

    server.mode = "reply"
    server.nodelay = nodelay
    counts: list[float] = []
    per_reply: list[float] = []
    kind = ""
    context = ac.Context(None, [ac.UserMessage("hi")])
    for _ in range(runs):
        option, session, kind = new_session()
        before = server.accepted
        started = time.perf_counter()
        try:
            for _ in range(REPLIES):
                options = ac.StreamOptions(api_key=KEY, signal=ac.AbortController().signal,
                                           **{option: session})
                reply = ac.complete(model_at(server.url), context, options)
                if reply.stop_reason != "stop":
                    raise RuntimeError(f"reply failed: {reply.error_message}")
        finally:
            session.close()
        per_reply.append((time.perf_counter() - started) / REPLIES * 1000)
        counts.append(server.accepted - before)
    return counts, per_reply, kind


def _row(name: str, values: list[float], unit: str, target: str | None = None,
         ok: bool | None = None) -> dict[str, Any]:
    return {"name": name, "median": round(statistics.median(values), 4),
            "min": round(min(values), 4), "max": round(max(values), 4), "unit": unit,
            "runs": len(values), "target": target, "ok": ok}


def measure(runs: int = RUNS) -> tuple[list[dict[str, Any]], list[str]]:
    """Every measurement, the median (min, max) of `runs` after a warm-up; and notes."""
    server = Server()
    try:
        measure_connections(server, 1)  # warm-up: imports, the first connection
        counts, per_reply, kind = measure_connections(server, runs)
        nagle_counts, nagle_per_reply, _ = measure_connections(server, runs, nodelay=False)
        aborts = measure_aborts(server, runs)
    finally:
        server.close()
    rows = []
    for phase, seconds in aborts.items():
        ms = [s * 1000 for s in seconds]
        ok = statistics.median(ms) <= TARGET_ABORT_MS
        rows.append(_row(f"abort -> end of stream(), {phase}", ms, "ms",
                         f"<= {TARGET_ABORT_MS:g}", ok))
    ok = statistics.median(counts) <= TARGET_CONNECTIONS
    rows.append(_row(f"TCP connections for {REPLIES} replies, one session", counts, "n",
                     f"<= {TARGET_CONNECTIONS}", ok))
    rows.append(_row("time per reply (tiny reply, with a signal)", per_reply, "ms"))
    rows.append(_row(f"TCP connections for {REPLIES} replies, server without TCP_NODELAY",
                     nagle_counts, "n"))
    rows.append(_row("time per reply, server without TCP_NODELAY", nagle_per_reply, "ms"))
    notes = [f"session: {kind}; request timeout {TIMEOUT_S:g} s (a phase that abort cannot "
             f"reach ends at about that)"]
    return rows, notes


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'median':>9}  {'min':>9}  {'max':>9}  unit  target"]
    for r in rows:
        target = "" if r["target"] is None else f"{r['target']} ({'ok' if r['ok'] else 'MISSED'})"
        lines.append(f"{r['name']:<{width}}  {r['median']:>9.3f}  {r['min']:>9.3f}  "
                     f"{r['max']:>9.3f}  {r['unit']:<4}  {target}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per measurement")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be positive")
    started = time.perf_counter()
    rows, notes = measure(args.runs)
    notes.append(f"took {time.perf_counter() - started:.1f} s")
    if args.json:
        for row in rows:
            print(json.dumps(row))
        for note in notes:
            print(json.dumps({"note": note}))
    else:
        import agentcore as ac

        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, median of "
              f"{args.runs} runs after a warm-up")
        print(_table(rows))
        for note in notes:
            print(f"note: {note}")
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
