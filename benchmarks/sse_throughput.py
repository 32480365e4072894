"""How fast a streamed OpenAI chat completion is consumed: agentcore, the openai SDK, a floor.

    python benchmarks/sse_throughput.py             # a table
    python benchmarks/sse_throughput.py --json      # one JSON object per line
    python benchmarks/sse_throughput.py --check     # exit 1 when a target is missed
    python benchmarks/sse_throughput.py --chunks N  # content chunks per response (20,000)
    python -m cProfile -s tottime benchmarks/sse_throughput.py --agentcore-only

A local HTTP/1.1 server runs in a separate process (this file with `--serve`) and answers every
POST with the same chunked event stream: a role chunk, CHUNKS content chunks of one short token
each (the JSON of real `gpt-4o-mini` chunks), a finish chunk, a usage chunk and `[DONE]`. The
client side, in this process, reads it to the end three ways: `agentcore.stream` (the full event
protocol), the official `openai` SDK (skipped when not installed) and `requests` + `iter_lines`
+ `json.loads` (the floor). See README.md beside this file for the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNKS = 20_000
RUNS = 5
TARGET_S = 0.2  # for CHUNKS chunks; scaled linearly for --chunks
TARGET_SDK_RATIO = 10.0
SERVER_START_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 120.0

API_KEY = "sk-bench-not-a-real-key"
MODEL_ID = "gpt-4o-mini"
TOKENS = (" the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", ",",
          " and", " then", " it", " runs", " away", ".")
PROMPT = [{"role": "user", "content": "Tell me a long story."}]
USAGE = {"prompt_tokens": 12, "completion_tokens": CHUNKS, "total_tokens": 12 + CHUNKS,
         "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
         "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                       "accepted_prediction_tokens": 0,
                                       "rejected_prediction_tokens": 0}}


def expected_text(chunks: int) -> str:
    """The text the response spells out: CHUNKS tokens taken in turn from TOKENS."""
    return "".join(TOKENS[i % len(TOKENS)] for i in range(chunks))


def build_events(chunks: int) -> list[bytes]:
    """Every SSE event of the response, each `data: <json>\\n\\n`, shaped like OpenAI's."""
    head = {"id": "chatcmpl-C7xPZk2d1QwYVmV6b3oRr8sT0aHqN", "object": "chat.completion.chunk",
            "created": 1756400000, "model": "gpt-4o-mini-2024-07-18",
            "service_tier": "default", "system_fingerprint": "fp_560af6e559"}

    def event(choices: list[Any], usage: Any = None, obfuscation: str = "k7f1Z") -> bytes:
        chunk = {**head, "choices": choices, "usage": usage, "obfuscation": obfuscation}
        return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"

    def choice(delta: dict[str, Any], finish: str | None = None) -> list[Any]:
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]

    events = [event(choice({"role": "assistant", "content": "", "refusal": None}))]
    pads = ("2Qx", "k7f1Z", "pA0sQ9", "R2")  # OpenAI pads chunks to hide token lengths
    events += [event(choice({"content": TOKENS[i % len(TOKENS)]}), obfuscation=pads[i % 4])
               for i in range(chunks)]
    events.append(event(choice({}, "stop")))
    usage = {**USAGE, "completion_tokens": chunks, "total_tokens": 12 + chunks}
    events.append(event([], usage, "f0"))
    events.append(b"data: [DONE]\n\n")
    return events


# --- the server (runs in its own process) -------------------------------------------------------


def serve(chunks: int) -> None:
    """Serve the stream on 127.0.0.1, print the port, run until terminated."""
    events = build_events(chunks)
    # One HTTP chunk per SSE event, as OpenAI sends them; written through a 64 KiB buffer so
    # that the server's syscalls do not limit the client.
    framed = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = 64 * 1024

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(framed)
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            """Silence per-request log lines."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.1)


@contextlib.contextmanager
def server_process(chunks: int, argv: list[str] | None = None) -> Iterator[str]:
    """Start `serve` in a child process; yield its base URL (`http://127.0.0.1:PORT`).

    `argv` replaces the child's command line: any server that prints its port on its first line
    of stdout and runs until terminated.
    """
    if argv is None:
        argv = [sys.executable, __file__, "--serve", "--chunks", str(chunks)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], SERVER_START_TIMEOUT_S)
        line = proc.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            raise RuntimeError(f"the server process did not report its port (got {line!r})")
        yield f"http://127.0.0.1:{int(line)}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# --- the clients (this process) -----------------------------------------------------------------


def agentcore_client(base_url: str, chunks: int) -> Callable[[], str]:
    """`agentcore.stream(...)` iterated to the end: every event of the protocol is built."""
    import agentcore as ac

    model = ac.Model(MODEL_ID, "GPT-4o mini", "openai-completions", "openai",
                     base_url=f"{base_url}/v1")
    context = ac.Context(None, [ac.UserMessage(PROMPT[0]["content"])])
    options = ac.StreamOptions(api_key=API_KEY, timeout=REQUEST_TIMEOUT_S)

    def run() -> str:
        events = 0
        final = None
        for event in ac.stream(model, context, options):
            events += 1
            if isinstance(event, (ac.DoneEvent, ac.ErrorEvent)):
                final = event
        if not isinstance(final, ac.DoneEvent):
            raise RuntimeError(f"agentcore run failed: {final!r:.300}")
        message = final.message
        if message.usage.output != chunks:
            raise RuntimeError(f"agentcore: usage {message.usage!r}")
        # start, text_start, one text_delta per chunk, text_end, done
        if events != chunks + 4:
            raise RuntimeError(f"agentcore: {events} events for {chunks} chunks")
        return message.text

    return run


def sdk_client(base_url: str, chunks: int) -> Callable[[], str] | None:
    """The official `openai` SDK, streaming with usage; None when it is not installed."""
    try:
        from openai import OpenAI
    except ImportError:
        return None
    client = OpenAI(base_url=f"{base_url}/v1", api_key=API_KEY, timeout=REQUEST_TIMEOUT_S,
                    max_retries=0)

    def run() -> str:
        parts: list[str] = []
        usage = None
        stream = client.chat.completions.create(
            model=MODEL_ID, messages=PROMPT,  # type: ignore[arg-type]
            stream=True, stream_options={"include_usage": True},
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
            if chunk.usage is not None:
                usage = chunk.usage
        if usage is None or usage.completion_tokens != chunks:
            raise RuntimeError(f"openai SDK: usage {usage!r}")
        return "".join(parts)

    return run


def floor_client(base_url: str, chunks: int) -> Callable[[], str]:
    """`requests.post(stream=True)` + `iter_lines()` + `json.loads` of every data line."""
    import requests

    session = requests.Session()
    url = f"{base_url}/v1/chat/completions"
    body = {"model": MODEL_ID, "messages": PROMPT, "stream": True,
            "stream_options": {"include_usage": True}}
    headers = {"Authorization": f"Bearer {API_KEY}", "Accept": "text/event-stream"}

    def run() -> str:
        parts: list[str] = []
        with session.post(url, json=body, headers=headers, stream=True,
                          timeout=REQUEST_TIMEOUT_S) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith(b"data: "):
                    continue
                data = line[6:]
                if data == b"[DONE]":
                    break
                chunk = json.loads(data)
                choices = chunk["choices"]
                if choices and choices[0]["delta"].get("content"):
                    parts.append(choices[0]["delta"]["content"])
        return "".join(parts)

    return run


# --- measuring ----------------------------------------------------------------------------------


def _time(run: Callable[[], str], expected: str) -> float:
    start = time.perf_counter()
    text = run()
    wall = time.perf_counter() - start
    if text != expected:
        raise RuntimeError(f"wrong text: {len(text)} characters, expected {len(expected)}")
    return wall


def _row(name: str, values: list[float], unit: str, target: str | None = None,
         ok: bool | None = None) -> dict[str, Any]:
    return {"name": name, "median": round(statistics.median(values), 4),
            "min": round(min(values), 4), "max": round(max(values), 4), "unit": unit,
            "runs": len(values), "target": target, "ok": ok}


AGENTCORE, SDK, FLOOR = ("agentcore.stream", "openai SDK",
                          "requests + iter_lines + json.loads (floor)")


def profile_agentcore(chunks: int = CHUNKS, runs: int = RUNS) -> None:
    """Only the agentcore client, `runs` times after a warm-up: for `python -m cProfile`."""
    expected = expected_text(chunks)
    with server_process(chunks) as base_url:
        run = agentcore_client(base_url, chunks)
        for _ in range(runs + 1):
            _time(run, expected)


def measure(chunks: int = CHUNKS, runs: int = RUNS) -> tuple[list[dict[str, Any]], list[str]]:
    """The measurements, each the median (min, max) of `runs` after a warm-up; and notes."""
    notes: list[str] = []
    expected = expected_text(chunks)
    with server_process(chunks) as base_url:
        clients: dict[str, Callable[[], str]] = {
            AGENTCORE: agentcore_client(base_url, chunks),
            FLOOR: floor_client(base_url, chunks),
        }
        sdk = sdk_client(base_url, chunks)
        if sdk is None:
            notes.append("openai SDK not installed (pip install -e '.[bench]'): skipped")
        else:
            clients[SDK] = sdk
        for run in clients.values():  # warm-up: imports, connections, caches
            _time(run, expected)
        times: dict[str, list[float]] = {name: [] for name in clients}
        for _ in range(runs):  # interleaved, so that a noisy moment hits every client alike
            for name, run in clients.items():
                times[name].append(_time(run, expected))
    ours = times[AGENTCORE]
    target_s = TARGET_S * chunks / CHUNKS  # 0.2 s for 20,000 chunks: 10 µs a chunk
    median = statistics.median(ours)
    rows = [_row(f"{AGENTCORE}: wall", ours, "s", f"<= {target_s:g}", median <= target_s)]
    for name in (SDK, FLOOR):
        if name in times:
            rows.append(_row(f"{name}: wall", times[name], "s"))
    for name in (AGENTCORE, SDK, FLOOR):
        if name in times:
            rows.append(_row(f"{name}: chunks/s", [chunks / t for t in times[name]], "1/s"))
    if SDK in times:
        ratios = [s / a for s, a in zip(times[SDK], ours, strict=True)]
        ok = statistics.median(ratios) >= TARGET_SDK_RATIO
        rows.append(_row(f"{SDK} / agentcore (time)", ratios, "x",
                         f">= {TARGET_SDK_RATIO:g}", ok))
    over_floor = [a / f for a, f in zip(ours, times[FLOOR], strict=True)]
    rows.append(_row("agentcore / floor (time)", over_floor, "x"))
    return rows, notes


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3f}"


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'median':>10}  {'min':>10}  {'max':>10}  unit  target"]
    for r in rows:
        target = "" if r["target"] is None else f"{r['target']} ({'ok' if r['ok'] else 'MISSED'})"
        lines.append(f"{r['name']:<{width}}  {_fmt(r['median']):>10}  {_fmt(r['min']):>10}  "
                     f"{_fmt(r['max']):>10}  {r['unit']:<4}  {target}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--chunks", type=int, default=CHUNKS, help="content chunks per response")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per client")
    parser.add_argument("--agentcore-only", action="store_true",
                        help="run only the agentcore client, no table (e.g. under cProfile)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.chunks < 1 or args.runs < 1:
        parser.error("--chunks and --runs must be positive")
    if args.serve:
        serve(args.chunks)
        return 0
    if args.agentcore_only:
        profile_agentcore(args.chunks, args.runs)
        return 0
    rows, notes = measure(args.chunks, args.runs)
    if args.json:
        for row in rows:
            print(json.dumps(row))
        for note in notes:
            print(json.dumps({"note": note}))
    else:
        import agentcore as ac

        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, {args.chunks:,} "
              f"chunks per response, median of {args.runs} runs after a warm-up")
        print(_table(rows))
        for note in notes:
            print(f"note: {note}")
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
