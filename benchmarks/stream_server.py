"""A paced, OpenAI-compatible streaming chat-completions server for load benchmarks.

    python benchmarks/stream_server.py                  # prints its port, serves until SIGTERM
    python benchmarks/stream_server.py --first-token 0.3 --reply 0.7 --chunks 40

One asyncio event loop (stdlib only: `asyncio.start_server`, HTTP/1.1 with keep-alive and
chunked transfer-encoding) plays one tool call per conversation, in the Chat Completions SSE
wire format of `tests/fixtures/openai_completions/`:

- `POST /v1/chat/completions` whose messages hold no `tool` message, with `tools` offered:
  a streamed call of the first tool offered, arguments `{"city": CITY}` (CITY: the first city of
  `CITIES` named in the last user message, else the first of them), `finish_reason`
  `"tool_calls"`.
- the same with a `tool` message (the tool's result is back): a streamed text answer of CHUNKS
  content chunks (`expected_text(CHUNKS)` once joined), `finish_reason` `"stop"`.
- a final chunk with `usage` when the request asks `stream_options.include_usage`, then
  `data: [DONE]`. `"stream": false` gets the same reply as one `chat.completion` object at the
  time the stream would have ended.

Pacing (per request, from the moment its body has been read): the status line and headers at
once; the first token at FIRST_TOKEN_S; the rest of the reply's events spread evenly up to
REPLY_S, where the last one goes with the finish chunk, the usage chunk, `[DONE]` and the end
of the chunked body. Defaults 0.3 s and 0.7 s: the text answer's 40 chunks are 10.3 ms apart and
a conversation of two requests costs 1.4 s whatever the number of conversations at once.

Every timed write records how late it went out against its own schedule (`lateness`): the
evidence that the server kept up. Writes due within the same millisecond share one
`loop.call_at` callback (a slot), so a write may be up to 1 ms late by design, and the epoll
timeout's millisecond resolution adds up to another. The server asks for niceness -10
(`--nice`; root may): it stands in for a model API with machines of its own, and here shares
the CPUs with the client processes under test.

`GET /stats` returns the counters (connections accepted, connections that carried a chat
request, requests, replies by kind, connections and streams open at once, CPU seconds) and the
lateness percentiles as JSON; `GET /stats?reset=1` returns them and starts counting afresh. On
SIGTERM or SIGINT the server prints its last stats on stderr and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import resource
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

FIRST_TOKEN_S = 0.3
REPLY_S = 0.7
CHUNKS = 40
BACKLOG = 4096
SLOT_S = 0.001  # timed writes due within the same millisecond go out together
# The server stands in for a model API on machines of its own; on the benchmark's machine it
# shares the CPUs with the clients under test, so it asks to be scheduled first.
NICE = -10
MODEL = "gpt-4o-mini-2024-07-18"
CITIES = ("Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Delhi", "Quito", "Rome", "Seoul", "Sydney")
TOKENS = (" The", " weather", " there", " is", " sunny", ",", " 21", " °C", ",", " with",
          " a", " light", " breeze", " from", " the", " west", " and", " no", " rain", " expected",
          " before", " the", " evening", ";", " take", " sunglasses", " and", " perhaps", " a",
          " light", " jacket", " for", " later", ".", " Enjoy", " your", " day", " out", " there",
          "!")
# How OpenAI's tokenizer cuts `{"city":"Paris"}`: the tool call's argument deltas.
ARGUMENT_PIECES = ('{"', "city", '":"', "{city}", '"}')
USAGE_TOOL = {"prompt_tokens": 61, "completion_tokens": 16, "total_tokens": 77}
USAGE_TEXT = {"prompt_tokens": 92, "completion_tokens": CHUNKS, "total_tokens": 92 + CHUNKS}
DETAILS = {"prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
           "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                         "accepted_prediction_tokens": 0,
                                         "rejected_prediction_tokens": 0}}


def expected_text(chunks: int = CHUNKS) -> str:
    """The text answer once joined: `chunks` tokens taken in turn from TOKENS."""
    return "".join(TOKENS[i % len(TOKENS)] for i in range(chunks))


def _percentile(ordered: list[float], q: float) -> float:
    """The q-th percentile (0-100) of sorted values, nearest rank."""
    if not ordered:
        return 0.0
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


# --- wire format --------------------------------------------------------------------------------


def _frame(event: bytes) -> bytes:
    """One SSE event as one HTTP chunk."""
    return b"%x\r\n%s\r\n" % (len(event), event)


def _event(completion_id: str, choices: list[Any], usage: Any = None) -> bytes:
    chunk = {"id": completion_id, "object": "chat.completion.chunk", "created": 1756400010,
             "model": MODEL, "service_tier": "default", "system_fingerprint": "fp_560af6e559",
             "choices": choices, "usage": usage}
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def _choice(delta: dict[str, Any], finish: str | None = None) -> list[Any]:
    return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]


DONE = b"data: [DONE]\n\n"
END_OF_BODY = b"0\r\n\r\n"


class Reply:
    """One reply, pre-encoded: its SSE events, and its usage chunk, each framed as a chunk
    (and, in `sse`, all of them unframed)."""

    def __init__(self, completion_id: str, events: list[bytes], finish: str,
                 usage: dict[str, int], message: dict[str, Any]) -> None:
        finish_event = _event(completion_id, _choice({}, finish))
        usage_event = _event(completion_id, [], {**usage, **DETAILS})
        self.sse = [*events, finish_event, usage_event, DONE]
        """Every SSE event of the reply with usage, in order, unframed."""
        self.events = [_frame(e) for e in events]
        self.finish = _frame(finish_event)
        self.usage = _frame(usage_event)
        self.done = _frame(DONE) + END_OF_BODY
        whole = {"id": completion_id, "object": "chat.completion", "created": 1756400010,
                 "model": MODEL, "choices": [{"index": 0, "message": message, "logprobs": None,
                                              "finish_reason": finish}],
                 "usage": {**usage, **DETAILS}, "service_tier": "default",
                 "system_fingerprint": "fp_560af6e559"}
        self.json = json.dumps(whole, separators=(",", ":")).encode()

    def pieces(self, include_usage: bool, first_token: float, reply: float) -> list[
            tuple[float, bytes]]:
        """(seconds after the request, bytes) for every timed write of this reply.

        The first event goes at `first_token`, the last at `reply`, the others evenly between;
        the last one carries the finish chunk, the usage chunk if asked, `[DONE]` and the end
        of the body.
        """
        tail = self.finish + (self.usage if include_usage else b"") + self.done
        n = len(self.events)
        step = (reply - first_token) / (n - 1) if n > 1 else 0.0
        out = [(first_token + i * step, e) for i, e in enumerate(self.events)]
        out[-1] = (out[-1][0], out[-1][1] + tail)
        return out


def text_reply(chunks: int) -> Reply:
    """The answer once the tool result is back: `chunks` content chunks."""
    cid = "chatcmpl-C7xPZk2d1QwYVmV6b3oRr8sT0aHqN"
    tokens = [TOKENS[i % len(TOKENS)] for i in range(chunks)]
    # OpenAI's first chunk carries the role and an empty content; it goes with the first token.
    first = _event(cid, _choice({"role": "assistant", "content": "", "refusal": None}))
    events = [_event(cid, _choice({"content": t})) for t in tokens]
    events[0] = first + events[0]
    return Reply(cid, events, "stop", USAGE_TEXT,
                 {"role": "assistant", "content": "".join(tokens), "refusal": None})


def tool_reply(tool: str, city: str, call_id: str) -> Reply:
    """A call of `tool` with `{"city": city}`, its arguments in token-sized deltas."""
    cid = "chatcmpl-C7xQ1"
    head = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
        {"index": 0, "id": call_id, "type": "function",
         "function": {"name": tool, "arguments": ""}}]}
    pieces = [p.replace("{city}", city) for p in ARGUMENT_PIECES]
    events = [_event(cid, _choice(head))]
    events += [_event(cid, _choice({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}))
               for p in pieces]
    message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": tool, "arguments": "".join(pieces)}}]}
    return Reply(cid, events, "tool_calls", USAGE_TOOL, message)


# --- counters -----------------------------------------------------------------------------------


class Stats:
    """What the server did since it started or was last reset."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, streams: int = 0, open_connections: int = 0) -> None:
        """Count afresh; `streams` replies and `open_connections` connections are under way."""
        self.started = time.monotonic()
        self.cpu_started = time.process_time()
        self.accepted = 0
        self.chat_connections = 0
        self.requests = 0
        self.tool_replies = 0
        self.text_replies = 0
        self.unstreamed = 0
        self.bad_requests = 0
        self.broken = 0
        self.streams = streams
        self.peak_streams = streams
        self.peak_open = open_connections
        self.lateness: list[float] = []

    def report(self, open_connections: int) -> dict[str, Any]:
        late = sorted(self.lateness)
        return {
            "seconds": round(time.monotonic() - self.started, 3),
            "cpu_s": round(time.process_time() - self.cpu_started, 3),
            "connections_accepted": self.accepted,
            "connections_with_chat": self.chat_connections,
            "requests": self.requests,
            "tool_replies": self.tool_replies,
            "text_replies": self.text_replies,
            "unstreamed_replies": self.unstreamed,
            "bad_requests": self.bad_requests,
            "broken_replies": self.broken,
            "open_connections": open_connections,
            "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "peak_open_connections": self.peak_open,
            "peak_streams": self.peak_streams,
            "writes": len(late),
            "lateness_ms": {"p50": round(_percentile(late, 50) * 1e3, 3),
                            "p99": round(_percentile(late, 99) * 1e3, 3),
                            "max": round((late[-1] if late else 0.0) * 1e3, 3)},
        }


# --- the server ---------------------------------------------------------------------------------


class BadRequest(Exception):
    """A request this server does not serve: answered with 400 and the connection closed."""


class _Stream:
    """A reply under way: its timed writes (absolute loop times) and the next one's index."""

    __slots__ = ("done", "i", "pieces", "transport")

    def __init__(self, transport: asyncio.WriteTransport, pieces: list[tuple[float, bytes]],
                 done: asyncio.Future[bool]) -> None:
        self.transport = transport
        self.pieces = pieces
        self.i = 0
        self.done = done


class Server:
    """The HTTP/1.1 server: one coroutine per connection; timed writes grouped in 1 ms slots."""

    def __init__(self, loop: asyncio.AbstractEventLoop, first_token: float, reply: float,
                 chunks: int) -> None:
        self.loop = loop
        self.slots: dict[int, list[_Stream]] = {}
        self.first_token = first_token
        self.reply = reply
        self.stats = Stats()
        self.open = 0
        self.text = text_reply(chunks)
        self.calls = itertools.count(1)
        self.tool_cache: dict[tuple[str, str], Reply] = {}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.accepted += 1
        self.open += 1
        self.stats.peak_open = max(self.stats.peak_open, self.open)
        carried_chat = False
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
                    return
                try:
                    method, target, headers = _parse_head(head)
                    length = int(headers.get("content-length", "0"))
                    if "chunked" in headers.get("transfer-encoding", ""):
                        raise BadRequest("chunked request bodies are not served")
                except (BadRequest, ValueError) as exc:
                    self.stats.bad_requests += 1
                    _respond(writer, 400, str(exc).encode(), keep_alive=False)
                    return
                body = await reader.readexactly(length) if length else b""
                # The schedule starts once the whole request is in: a client may send its
                # headers and its body apart (urllib3 does), with a busy moment between.
                start = self.loop.time()
                keep_alive = headers.get("connection", "").lower() != "close"
                if method == "POST" and target.split("?")[0] == "/v1/chat/completions":
                    if not carried_chat:
                        carried_chat = True
                        self.stats.chat_connections += 1
                    if not await self.chat(writer, body, start, keep_alive):
                        return
                elif method == "GET" and target.split("?")[0] == "/stats":
                    report = self.stats.report(self.open)
                    if "reset=1" in target:
                        self.stats.reset(self.stats.streams, self.open)
                    _respond(writer, 200, json.dumps(report).encode(), keep_alive)
                else:
                    _respond(writer, 404, b"not found", keep_alive)
                if not keep_alive:
                    return
        except (asyncio.IncompleteReadError, OSError):
            return
        finally:
            self.open -= 1
            writer.close()

    async def chat(self, writer: asyncio.StreamWriter, body: bytes, start: float,
                   keep_alive: bool) -> bool:
        """Serve one chat request; False when the connection cannot be used again."""
        stats = self.stats
        try:
            request = json.loads(body)
            reply, streamed, include_usage = self.choose(request)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            stats.bad_requests += 1
            _respond(writer, 400, f"bad chat request: {exc!r}".encode(), keep_alive=False)
            return False
        stats.requests += 1
        done: asyncio.Future[bool] = self.loop.create_future()
        if not streamed:
            stats.unstreamed += 1
            self.loop.call_at(start + self.reply, self._whole, writer, reply, start + self.reply,
                         keep_alive, done)
            return await done
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                     b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
                     + (b"" if keep_alive else b"Connection: close\r\n") + b"\r\n")
        stats.streams += 1
        stats.peak_streams = max(stats.peak_streams, stats.streams)
        pieces = reply.pieces(include_usage, self.first_token, self.reply)
        stream = _Stream(writer.transport, [(start + t, data) for t, data in pieces], done)
        self._schedule(stream)
        return await done

    def choose(self, request: dict[str, Any]) -> tuple[Reply, bool, bool]:
        """The reply for this request, whether it streams, whether it ends with usage."""
        messages = request["messages"]
        streamed = bool(request.get("stream"))
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        tools = request.get("tools") or []
        if any(m.get("role") == "tool" for m in messages) or not tools:
            self.stats.text_replies += 1
            return self.text, streamed, include_usage
        self.stats.tool_replies += 1
        tool = tools[0]["function"]["name"]
        city = _city(messages)
        call_id = f"call_{next(self.calls):024d}"
        return tool_reply(tool, city, call_id), streamed, include_usage

    def _schedule(self, stream: _Stream) -> None:
        """Put `stream`'s next write in the slot of its time (SLOT_S wide, rounded up).

        One `call_at` per slot in use rather than one per write: with thousands of replies
        under way, most slots hold many writes, and the loop's timer heap stays small.
        """
        key = math.ceil(stream.pieces[stream.i][0] / SLOT_S)
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = []
            self.loop.call_at(key * SLOT_S, self._run_slot, key)
        slot.append(stream)

    def _run_slot(self, key: int) -> None:
        """Write every piece due in this slot, each timed against its own schedule."""
        stats = self.stats
        lateness = stats.lateness
        now = time.monotonic
        for stream in self.slots.pop(key):
            when, data = stream.pieces[stream.i]
            lateness.append(now() - when)
            if stream.transport.is_closing() or stream.done.done():  # gone, or shutting down
                stats.broken += 1
                stats.streams -= 1
                if not stream.done.done():
                    stream.done.set_result(False)
                continue
            stream.transport.write(data)
            stream.i += 1
            if stream.i == len(stream.pieces):
                stats.streams -= 1
                stream.done.set_result(True)
            else:
                self._schedule(stream)

    def _whole(self, writer: asyncio.StreamWriter, reply: Reply, when: float, keep_alive: bool,
               done: asyncio.Future[bool]) -> None:
        self.stats.lateness.append(self.loop.time() - when)
        if writer.transport.is_closing():
            done.set_result(False)
            return
        _respond(writer, 200, reply.json, keep_alive, b"application/json")
        done.set_result(True)


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"bad request line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], headers


def _respond(writer: asyncio.StreamWriter, status: int, body: bytes, keep_alive: bool,
             content_type: bytes = b"application/json") -> None:
    reason = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}[status]
    writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n%s"
                 % (status, reason, content_type, len(body),
                    b"" if keep_alive else b"Connection: close\r\n", body))


def _city(messages: list[dict[str, Any]]) -> str:
    """The first of CITIES named in the last user message (CITIES[0] if none)."""
    text = ""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            break
    return next((c for c in CITIES if c in text), CITIES[0])


def raise_open_files_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit; return the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def somaxconn() -> int | None:
    """The kernel's cap on a listen backlog (Linux), None where unknown."""
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


async def serve(port: int, first_token: float, reply: float, chunks: int,
                announce: Callable[[int], None]) -> dict[str, Any]:
    """Serve on 127.0.0.1:`port` until SIGTERM or SIGINT; return the last stats."""
    loop = asyncio.get_running_loop()
    server = Server(loop, first_token, reply, chunks)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=BACKLOG,
                                          family=socket.AF_INET, reuse_address=True)
    stop = loop.create_future()

    def on_signal() -> None:
        if not stop.done():
            stop.set_result(None)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    announce(listener.sockets[0].getsockname()[1])
    async with listener:
        await stop
    return server.stats.report(server.open)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--first-token", type=float, default=FIRST_TOKEN_S,
                        help="seconds from a request to its first token")
    parser.add_argument("--reply", type=float, default=REPLY_S,
                        help="seconds from a request to the end of its reply")
    parser.add_argument("--chunks", type=int, default=CHUNKS,
                        help="content chunks of the text answer")
    parser.add_argument("--nice", type=int, default=NICE,
                        help="scheduling niceness to ask for (default %(default)s; 0: leave it)")
    args = parser.parse_args(argv)
    if not 0 <= args.first_token <= args.reply or args.chunks < 1:
        parser.error("need 0 <= --first-token <= --reply and --chunks >= 1")
    if args.nice:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, args.nice)
        except OSError as exc:  # lowering niceness takes root (CAP_SYS_NICE)
            print(f"stream_server: could not set niceness {args.nice}: {exc}", file=sys.stderr)
    limit = raise_open_files_limit()
    cap = somaxconn()
    if limit < 2 * BACKLOG or (cap is not None and cap < BACKLOG):
        print(f"stream_server: open files limit {limit}, somaxconn {cap}: fewer than "
              f"{BACKLOG} connections at once may be refused or delayed", file=sys.stderr)

    def announce(port: int) -> None:
        print(port, flush=True)

    last = asyncio.run(serve(args.port, args.first_token, args.reply, args.chunks, announce))
    print(json.dumps({"stream_server": os.getpid(), **last}), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
