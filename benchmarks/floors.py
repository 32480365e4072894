"""The floors of `concurrency.py`: its conversation with no agent library at all.

Two clients that do only what any streaming client must: send the two requests, read each
reply's Server-Sent Events as they arrive, `json.loads` each chunk, keep the text and the tool
call's arguments, answer the call. They are what the machine allows a thread-per-stream Python
client, measured beside agentcore in the same run:

- `requests_conversation`: `requests` (a new `Session`, as a new agent has one), `iter_lines`.
- `shared_requests_conversation`: the same through one `Session` for the whole process (the
  floor of API §29, issue 39): its pool keeps 10 connections and makes more as needed,
  dropping the extra ones once used, as any default `requests` client does.
- `socket_conversation`: a raw socket, HTTP/1.1 written by hand, the chunked body and the SSE
  lines cut by hand (one `recv` a wake, whatever it holds): the leanest such client there is,
  and one that handles nothing but this server's replies (no TLS, no redirects, no errors).

Both return the answer's text, which the caller checks as it checks agentcore's.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city right now.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
TIMEOUT_S = 540.0


class Ask:
    """One conversation's request: the model, the key, the messages, the tool's answer."""

    def __init__(self, base_url: str, model: str, api_key: str, system: str, prompt: str,
                 answer: Callable[[str], str]) -> None:
        self.base_url, self.model, self.api_key, self.answer = base_url, model, api_key, answer
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                               {"role": "user", "content": prompt}]

    def body(self) -> dict[str, Any]:
        return {"model": self.model, "messages": self.messages, "tools": [TOOL], "stream": True,
                "stream_options": {"include_usage": True}}

    def add_call(self, call_id: str, arguments: str) -> None:
        """Append the call and the tool's answer to it (what the second request sends)."""
        city = json.loads(arguments)["city"]
        self.messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "get_weather", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": call_id, "content": self.answer(city)}]


def _take(chunk: dict[str, Any], text: list[str], call: list[str]) -> None:
    """Keep a chunk's text, and its tool call's id (`call[0]`) and argument pieces."""
    for choice in chunk.get("choices") or ():
        delta = choice["delta"]
        if delta.get("content"):
            text.append(delta["content"])
        for entry in delta.get("tool_calls") or ():
            if entry.get("id"):
                call[0] = entry["id"]
            call.append(entry["function"].get("arguments") or "")


def requests_conversation(ask: Ask) -> str:
    """The conversation through `requests` and `json.loads`; the answer's text."""
    import requests

    with requests.Session() as session:
        return _converse(session, ask)


_shared: list[Any] = []


def shared_requests_conversation(ask: Ask) -> str:
    """`requests_conversation` on the process's one shared `Session` (made at first use)."""
    if not _shared:
        import requests

        _shared.append(requests.Session())
    return _converse(_shared[0], ask)


def _converse(session: Any, ask: Ask) -> str:
    """The two requests of a conversation on `session`; the answer's text."""
    url = f"{ask.base_url}/v1/chat/completions"
    headers = {"Authorization": f"Bearer {ask.api_key}"}
    text: list[str] = []
    for _ in range(2):
        call = [""]
        with session.post(url, json=ask.body(), headers=headers, stream=True,
                          timeout=TIMEOUT_S) as reply:
            reply.raise_for_status()
            for line in reply.iter_lines():
                if line.startswith(b"data: ") and line != b"data: [DONE]":
                    _take(json.loads(line[6:]), text, call)
        if len(call) == 1:
            break
        ask.add_call(call[0], "".join(call[1:]))
    return "".join(text)


def socket_conversation(ask: Ask) -> str:
    """The conversation over one raw socket, chunked encoding and SSE cut by hand."""
    parts = urlsplit(ask.base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    text: list[str] = []
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        for _ in range(2):
            body = json.dumps(ask.body()).encode()
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s:%d\r\n"
                         b"Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (
                             host.encode(), port, ask.api_key.encode(), len(body), body))
            call = [""]
            for event in _events(sock):
                for line in event.split(b"\n"):
                    if line.startswith(b"data: ") and line != b"data: [DONE]":
                        _take(json.loads(line[6:]), text, call)
            if len(call) == 1:
                break
            ask.add_call(call[0], "".join(call[1:]))
    return "".join(text)


def _events(sock: socket.socket) -> Any:
    """The SSE events (bytes, without their blank line) of one chunked reply on `sock`."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        buffer += _recv(sock)
    head, buffer = buffer.split(b"\r\n\r\n", 1)
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"unexpected answer {head[:80]!r}")
    sse = b""
    while True:
        while (end := buffer.find(b"\r\n")) >= 0:  # every whole chunk in the buffer
            size = int(buffer[:end].split(b";")[0], 16)
            if size == 0:  # the last chunk: this server sends no trailers
                while len(buffer) < end + 4:
                    buffer += _recv(sock)
                if sse:
                    yield from sse.split(b"\n\n")
                return
            if len(buffer) < end + size + 4:
                break
            sse += buffer[end + 2:end + 2 + size]
            buffer = buffer[end + size + 4:]
        *events, sse = sse.split(b"\n\n")
        yield from events
        buffer += _recv(sock)


def _recv(sock: socket.socket) -> bytes:
    data = sock.recv(65536)
    if not data:
        raise RuntimeError("the server closed the connection mid-reply")
    return data
