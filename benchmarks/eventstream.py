"""The Bedrock event-stream decoder against botocore's own `EventStreamBuffer`, in one run.

    python benchmarks/eventstream.py            # a table
    python benchmarks/eventstream.py --json     # one JSON object per measurement and line
    python benchmarks/eventstream.py --check    # exit 1 when a target is missed

The body is a `ConverseStream` reply as Bedrock sends it: `messageStart`, `EVENTS`
`contentBlockDelta` messages, `contentBlockStop`, `messageStop` and `metadata`, each with the
three string headers (`:event-type`, `:content-type`, `:message-type`) and a JSON payload of
about 60 bytes (a token of text and the `p` padding field Bedrock adds). It is built before the
clock starts and fed two ways: in 16 KiB reads (a client that lags behind the model) and one
frame per read (a live reply, one message per HTTP chunk). Each run decodes the whole body with
`agentcore.providers._wire._eventstream.EventStreamDecoder` (`feed` every read, then `end`) and with
`botocore.eventstream.EventStreamBuffer` (`add_data` every read, then iterate its messages);
both verify both CRC-32s of every message and decode its headers. The two alternate run by run,
so that a noisy moment hits them alike; every figure is the median of `RUNS` runs after a
warm-up run, and the ratio (ours / botocore, lower is better) is taken per run. Before timing,
the script checks that both give the same headers and payloads. See README.md beside this file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import sys
import time
from collections.abc import Callable
from typing import Any
from zlib import crc32

from run_log import _row, _table  # the rows and table as run_log.py prints them

import agentcore as ac
from agentcore.providers._wire._eventstream import EventStreamDecoder

RUNS = 7
EVENTS = 20_000
READ_BYTES = 16 * 1024
TARGET_RATIO = 1.5  # ours / botocore, from issue 23
WORDS = (" the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", ".")


def _frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One event message with Bedrock's three string headers (all of type 7, string)."""
    block = b"".join(
        bytes([len(name)]) + name + b"\x07" + struct.pack(">H", len(value)) + value
        for name, value in ((b":event-type", event_type.encode()),
                            (b":content-type", b"application/json"),
                            (b":message-type", b"event")))
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = struct.pack(">II", 16 + len(block) + len(body), len(block))
    message = head + struct.pack(">I", crc32(head)) + block + body
    return message + struct.pack(">I", crc32(message))


def converse_stream(events: int) -> list[bytes]:
    """The frames of a `ConverseStream` reply with `events` text deltas."""
    pad = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    frames = [_frame("messageStart", {"role": "assistant", "p": pad[:20]})]
    for i in range(events):
        word = WORDS[i % len(WORDS)]
        frames.append(_frame("contentBlockDelta", {
            "contentBlockIndex": 0, "delta": {"text": word}, "p": pad[:12 - len(word)]}))
    frames += [_frame("contentBlockStop", {"contentBlockIndex": 0, "p": pad[:8]}),
               _frame("messageStop", {"stopReason": "end_turn", "p": pad[:16]}),
               _frame("metadata", {"usage": {"inputTokens": 12, "outputTokens": events,
                                             "totalTokens": events + 12},
                                   "metrics": {"latencyMs": 3250}, "p": pad[:10]})]
    return frames


def reads(frames: list[bytes], how: str) -> list[bytes]:
    """The body cut into the reads a client makes: 16 KiB each, or one frame each."""
    if how == "frame":
        return frames
    body = b"".join(frames)
    return [body[i:i + READ_BYTES] for i in range(0, len(body), READ_BYTES)]


def decode_ours(chunks: list[bytes]) -> list[tuple[dict[str, Any], bytes]]:
    """Every message of the body, decoded by agentcore."""
    decoder = EventStreamDecoder(1 << 20)
    out = [(m.headers, m.payload) for chunk in chunks for m in decoder.feed(chunk)]
    return out + [(m.headers, m.payload) for m in decoder.end()]


def decode_botocore(chunks: list[bytes]) -> list[tuple[dict[str, Any], bytes]]:
    """Every message of the body, decoded by botocore."""
    from botocore.eventstream import EventStreamBuffer

    buffer, out = EventStreamBuffer(), []
    for chunk in chunks:
        buffer.add_data(chunk)
        out.extend((m.headers, m.payload) for m in buffer)
    return out


def time_ours(chunks: list[bytes]) -> tuple[float, int]:
    """(seconds, messages) for decoding `chunks` with agentcore's decoder."""
    start = time.perf_counter()
    decoder = EventStreamDecoder(1 << 20)
    feed, count = decoder.feed, 0
    for chunk in chunks:
        for message in feed(chunk):
            message.headers, message.payload  # noqa: B018 (what a consumer reads)
            count += 1
    count += len(decoder.end())
    return time.perf_counter() - start, count


def time_botocore(chunks: list[bytes]) -> tuple[float, int]:
    """(seconds, messages) for decoding `chunks` with botocore's `EventStreamBuffer`."""
    from botocore.eventstream import EventStreamBuffer

    start = time.perf_counter()
    buffer = EventStreamBuffer()
    add, count = buffer.add_data, 0
    for chunk in chunks:
        add(chunk)
        for message in buffer:
            message.headers, message.payload  # noqa: B018
            count += 1
    return time.perf_counter() - start, count


def measure(runs: int, events: int) -> list[dict[str, Any]]:
    """Both decoders on both chunkings, alternating run by run after one warm-up round."""
    frames = converse_stream(events)
    rows: list[dict[str, Any]] = []
    for how, label in (("16k", "16 KiB reads"), ("frame", "one frame per read")):
        chunks = reads(frames, how)
        if decode_ours(chunks) != decode_botocore(chunks):
            raise SystemExit(f"the decoders disagree on {label}")
        decoders: dict[str, Callable[[list[bytes]], tuple[float, int]]] = {
            "agentcore": time_ours, "botocore": time_botocore}
        walls: dict[str, list[float]] = {name: [] for name in decoders}
        for round_ in range(runs + 1):
            for name, decode in decoders.items():
                wall, count = decode(chunks)
                if count != len(frames):
                    raise SystemExit(f"{name} decoded {count} of {len(frames)} messages")
                if round_:
                    walls[name].append(wall)
        for name in decoders:
            rows.append(_row(f"{name}, {label}: per message",
                             [w / len(frames) * 1e6 for w in walls[name]], "µs"))
            rows.append(_row(f"{name}, {label}: wall", [w * 1e3 for w in walls[name]], "ms"))
        ratio = [a / b for a, b in zip(walls["agentcore"], walls["botocore"], strict=True)]
        median = statistics.median(ratio)
        rows.append(_row(f"agentcore / botocore, {label} (time)", ratio, "x",
                         f"<= {TARGET_RATIO}", median <= TARGET_RATIO))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per decoder")
    parser.add_argument("--events", type=int, default=EVENTS,
                        help="contentBlockDelta messages in the body")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.events < 1:
        parser.error("--runs and --events must be positive")
    try:
        import botocore
    except ImportError:
        parser.error("botocore is not installed (pip install -e '.[bedrock]')")
    started = time.perf_counter()
    rows = measure(args.runs, args.events)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"agentcore {ac.__version__}, botocore {botocore.__version__}, Python "
              f"{sys.version.split()[0]}, median of {args.runs} runs after a warm-up, "
              f"{args.events:,} deltas a body; took {time.perf_counter() - started:.1f} s")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
