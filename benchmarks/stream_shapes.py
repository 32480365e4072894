"""Whether consuming a stream costs time linear in its bytes, whatever its shape (API §10).

    python benchmarks/stream_shapes.py            # a table
    python benchmarks/stream_shapes.py --json     # one JSON object per line
    python benchmarks/stream_shapes.py --check    # exit 1 when a target is missed

Three shapes of OpenAI Chat Completions stream, served over HTTP/1.1 by a separate process (this
file with `--serve`; the shape is in the URL path) and read to the end with `agentcore.stream`:

- a tool call whose argument JSON (a file being written, 16 KB and 256 KB) arrives in 16-byte
  deltas, with jiter's partial parser and with the pure-Python fallback;
- a text reply of 20,000 and 200,000 one-token chunks (`sse_throughput.py`'s chunks), beside the
  `requests` + `iter_lines` + `json.loads` floor;
- one 20 MB event (one text chunk), sent in 8 KiB HTTP chunks as a proxy might cut it.

See README.md beside this file for the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sse_throughput import (
    API_KEY,
    MODEL_ID,
    REQUEST_TIMEOUT_S,
    build_events,
    expected_text,
    floor_client,
    server_process,
)

RUNS = 5
ARG_SIZES_KB = (16, 256)
ARG_DELTA = 16
TEXT_CHUNKS = (20_000, 200_000)
EVENT_MB = 20
EVENT_PIECE = 8 * 1024
TARGET_ARGS_S = 0.5  # the largest argument, in total
TARGET_ARGS_RATIO = 1.3  # cost per delta, largest over smallest
TARGET_TEXT_FLOOR = 1.3  # the most chunks, agentcore over the floor
TARGET_TEXT_RATIO = 1.2  # cost per chunk, most chunks over fewest
TARGET_EVENT_S = 1.0


def arguments_text(size: int) -> str:
    """The argument JSON of a `write_file` call whose content is about `size` bytes of code."""
    line = 'def f(x):\n    return "caf\\u00e9 \\\\ " + x  # "quoted"\n'
    content = (line * (size // len(line) + 1))[:size]
    return json.dumps({"path": "src/app.py", "content": content, "mode": "overwrite"})


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1756400000,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


def args_events(size: int, delta: int) -> list[bytes]:
    """A tool call whose arguments arrive `delta` characters at a time; one HTTP chunk each."""
    text = arguments_text(size)
    head = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "write_file", "arguments": ""}}
    events = [_sse(_chunk({"role": "assistant", "content": None, "tool_calls": [head]}))]
    events += [_sse(_chunk({"tool_calls": [{"index": 0, "function": {
        "arguments": text[i : i + delta]}}]})) for i in range(0, len(text), delta)]
    events += [_sse(_chunk({}, "tool_calls")), b"data: [DONE]\n\n"]
    return events


def event_pieces(megabytes: int) -> list[bytes]:
    """One text chunk of `megabytes` MB, cut into `EVENT_PIECE`-byte HTTP chunks."""
    body = b"".join([_sse(_chunk({"role": "assistant", "content": "x" * (megabytes << 20)})),
                     _sse(_chunk({}, "stop")), b"data: [DONE]\n\n"])
    return [body[i : i + EVENT_PIECE] for i in range(0, len(body), EVENT_PIECE)]


@functools.cache
def _framed(path: str) -> bytes:
    """The chunked body for a URL path: `/args/<bytes>/<delta>`, `/text/<chunks>`, `/event/<MB>`."""
    kind, *numbers = path.strip("/").split("/")[:-2]  # drop `chat/completions`
    sizes = [int(n) for n in numbers if n.isdigit()]
    if kind == "args":
        pieces = args_events(sizes[0], sizes[1])
    elif kind == "text":
        pieces = build_events(sizes[0])
    elif kind == "event":
        pieces = event_pieces(sizes[0])
    else:
        raise ValueError(f"unknown shape {path!r}")
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def serve() -> None:
    """Serve every shape on 127.0.0.1, print the port, run until terminated."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = 64 * 1024

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = _framed(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            """Silence per-request log lines."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.1)


def _stream(base_url: str) -> Callable[[], Any]:
    """`agentcore.stream` read to the end; returns the `done` message (raises on `error`)."""
    import agentcore as ac

    model = ac.Model(MODEL_ID, "GPT-4o mini", "openai-completions", "openai",
                     base_url=f"{base_url}/v1")
    context = ac.Context(None, [ac.UserMessage("go")])
    options = ac.StreamOptions(api_key=API_KEY, timeout=REQUEST_TIMEOUT_S)

    def run() -> Any:
        final = None
        for event in ac.stream(model, context, options):
            final = event
        if not isinstance(final, ac.DoneEvent):
            raise RuntimeError(f"agentcore run failed: {final!r:.300}")
        return final.message

    return run


@contextlib.contextmanager
def _parser(name: str) -> Iterator[bool]:
    """Use partial parser `name` ("jiter" or "python"); yields False if it is not available."""
    try:
        from agentcore.providers import _partial_json as module
    except ImportError:
        module = None
    finder = getattr(module, "_jiter", None)
    if finder is None:  # the code before jiter: one parser, the old pure-Python one
        yield name == "python"
        return
    if name == "jiter":
        yield finder() is not None
        return
    module._jiter = lambda: None  # type: ignore[union-attr]
    try:
        yield True
    finally:
        module._jiter = finder  # type: ignore[union-attr]


def _timed(run: Callable[[], Any], check: Callable[[Any], bool]) -> float:
    start = time.perf_counter()
    result = run()
    wall = time.perf_counter() - start
    if not check(result):
        raise RuntimeError("wrong result")
    return wall


def _row(name: str, values: list[float], unit: str, target: str | None = None,
         ok: bool | None = None) -> dict[str, Any]:
    return {"name": name, "median": round(statistics.median(values), 6),
            "min": round(min(values), 6), "max": round(max(values), 6), "unit": unit,
            "runs": len(values), "target": target, "ok": ok}


def measure_args(url: str, runs: int, sizes_kb: tuple[int, ...]) -> list[dict[str, Any]]:
    """(a) A long tool-call argument in 16-byte deltas, with each partial parser."""
    rows = []
    for parser in ("jiter", "python"):
        with _parser(parser) as available:
            if not available:
                continue
            per_delta: dict[int, list[float]] = {}
            for kb in sizes_kb:
                text = arguments_text(kb * 1024)
                expected = json.loads(text)
                deltas = -(-len(text) // ARG_DELTA)
                run = _stream(f"{url}/args/{kb * 1024}/{ARG_DELTA}")

                def check(message: Any, expected: Any = expected) -> bool:
                    return message.content[0].arguments == expected  # type: ignore[no-any-return]

                _timed(run, check)
                walls = [_timed(run, check) for _ in range(runs)]
                per_delta[kb] = [w / deltas * 1e6 for w in walls]
                last = kb == max(sizes_kb)
                target = f"<= {TARGET_ARGS_S:g}" if last else None
                ok = statistics.median(walls) <= TARGET_ARGS_S if last else None
                rows.append(_row(f"args {kb} KB / {ARG_DELTA} B deltas, {parser}: wall", walls,
                                 "s", target, ok))
                rows.append(_row(f"args {kb} KB, {parser}: per delta", per_delta[kb], "µs"))
            small, large = min(sizes_kb), max(sizes_kb)
            if small != large:
                ratio = statistics.median(per_delta[large]) / statistics.median(per_delta[small])
                rows.append(_row(f"args {parser}: per delta {large} KB / {small} KB", [ratio],
                                 "x", f"<= {TARGET_ARGS_RATIO:g}", ratio <= TARGET_ARGS_RATIO))
    return rows


def measure_text(url: str, runs: int, counts: tuple[int, ...]) -> list[dict[str, Any]]:
    """(b) Text replies of many one-token chunks, beside the floor, interleaved run by run."""
    rows = []
    ours: dict[int, list[float]] = {}
    for chunks in counts:
        expected = expected_text(chunks)
        base = f"{url}/text/{chunks}"
        agentcore = _stream(base)
        floor = floor_client(base, chunks)

        def check(message: Any, expected: str = expected) -> bool:
            return message.text == expected  # type: ignore[no-any-return]

        def floor_check(text: str, expected: str = expected) -> bool:
            return text == expected

        _timed(agentcore, check)
        _timed(floor, floor_check)
        walls, floors = [], []
        for _ in range(runs):
            walls.append(_timed(agentcore, check))
            floors.append(_timed(floor, floor_check))
        ours[chunks] = [w / chunks * 1e6 for w in walls]
        rows.append(_row(f"text {chunks:,} chunks: agentcore wall", walls, "s"))
        rows.append(_row(f"text {chunks:,} chunks: floor wall", floors, "s"))
        over = [w / f for w, f in zip(walls, floors, strict=True)]
        last = chunks == max(counts)
        rows.append(_row(f"text {chunks:,} chunks: agentcore / floor", over, "x",
                         f"<= {TARGET_TEXT_FLOOR:g}" if last else None,
                         statistics.median(over) <= TARGET_TEXT_FLOOR if last else None))
        rows.append(_row(f"text {chunks:,} chunks: agentcore per chunk", ours[chunks], "µs"))
    few, many = min(counts), max(counts)
    if few != many:
        ratio = statistics.median(ours[many]) / statistics.median(ours[few])
        rows.append(_row(f"text: per chunk {many:,} / {few:,}", [ratio], "x",
                         f"<= {TARGET_TEXT_RATIO:g}", ratio <= TARGET_TEXT_RATIO))
    return rows


def measure_event(url: str, runs: int, megabytes: int) -> list[dict[str, Any]]:
    """(c) One event of `megabytes` MB in 8 KiB HTTP chunks."""
    run = _stream(f"{url}/event/{megabytes}")
    size = megabytes << 20

    def check(message: Any) -> bool:
        return len(message.text) == size  # type: ignore[no-any-return]

    _timed(run, check)
    walls = [_timed(run, check) for _ in range(runs)]
    return [_row(f"one {megabytes} MB event in {EVENT_PIECE // 1024} KiB reads: wall", walls,
                 "s", f"<= {TARGET_EVENT_S:g}",
                 statistics.median(walls) <= TARGET_EVENT_S)]


def measure(runs: int, only: set[str], sizes_kb: tuple[int, ...],
            counts: tuple[int, ...]) -> list[dict[str, Any]]:
    """Every measurement against one server process."""
    argv = [sys.executable, __file__, "--serve"]
    rows: list[dict[str, Any]] = []
    with server_process(0, argv) as url:
        if "args" in only:
            rows += measure_args(url, runs, sizes_kb)
        if "text" in only:
            rows += measure_text(url, max(1, runs - 2), counts)
        if "event" in only:
            rows += measure_event(url, runs, EVENT_MB)
    return rows


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


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(","))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per measurement")
    parser.add_argument("--only", default="args,text,event", help="which shapes to measure")
    parser.add_argument("--args-kb", type=_numbers, default=ARG_SIZES_KB,
                        help="argument sizes in KB, comma-separated (16,256)")
    parser.add_argument("--text-chunks", type=_numbers, default=TEXT_CHUNKS,
                        help="text chunk counts, comma-separated (20000,200000)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve()
        return 0
    if args.runs < 1:
        parser.error("--runs must be positive")
    rows = measure(args.runs, set(args.only.split(",")), args.args_kb, args.text_chunks)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        import agentcore as ac

        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, median of "
              f"{args.runs} runs after a warm-up ({max(1, args.runs - 2)} for text)")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
