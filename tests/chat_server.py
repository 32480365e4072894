"""A local OpenAI-compatible chat server that answers by what the prompt says, for batch tests.

`POST /v1/chat/completions` streams chat-completion chunks in OpenAI's wire format. The answer
depends on the last user message and the declared tools:

- `fail...`: HTTP 400 with an OpenAI error body (the run ends with an error);
- `weather <city>`, with no tool result yet: a `get_weather` tool call for `<city>`; once the
  request carries the tool result: `"weather: <result>"`;
- a request declaring `final_result`: a call of it, `{"response": <text>}` when the schema
  wraps the value, else `{"name": <text>, "population": <len(text)>}`; a request with a
  `json_schema` `response_format`: the same JSON as its text;
- anything else: `"echo: <text>"` in a few chunks, `delay_s` apart.

It counts connections and requests and the most streams ever open at once, keeps the bodies
it was sent (`bodies`), and runs in a thread
of the test process or (`python tests/chat_server.py`) on its own, printing its port.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prompt_shutdown import PromptShutdown

_WAIT_S = 10.0


class ChatServer(PromptShutdown, ThreadingHTTPServer):
    """The server on 127.0.0.1, on a free port, from construction until `close()`."""

    daemon_threads = False
    block_on_close = True
    request_queue_size = 256

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.accepted = 0
        self.requests = 0
        self.streaming = 0
        self.max_streaming = 0
        self.prompts: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self.stopping = threading.Event()  # set by close(): paced streams end at once
        self.connections: set[socket.socket] = set()
        super().__init__(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.serve_forever, name="chat-server")
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving, cut open connections (so that no handler waits out a client's idle
        keep-alive connection or its pacing) and join every thread."""
        self.stopping.set()
        self.shutdown()
        with self.lock:
            for sock in self.connections:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self.server_close()
        self.thread.join(_WAIT_S)


def quick(server: ChatServer) -> ChatServer:
    """`server`, dropping a connection idle for 1 s instead of 10 s.

    So that closing it does not wait that long for the handler of a connection a client keeps
    open: a worker process keeps the session its batches share (and its connections) for its
    whole life, and an aborted request can leave its connection open until the garbage
    collector runs.
    """
    handler: Any = server.RequestHandlerClass
    server.RequestHandlerClass = type("QuickHandler", (handler,), {"timeout": 1.0})
    return server


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "m-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _usage(prompt: int, completion: int) -> bytes:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "m-1", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _tool_call(name: str, arguments: dict[str, Any]) -> list[bytes]:
    call = {"index": 0, "id": f"call_{name}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}
    return [_chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
            _chunk({}, "tool_calls"), _usage(10, 5)]


def answer(request: dict[str, Any]) -> list[bytes] | None:
    """The chunks answering `request`, or None for the 400 of a `fail` prompt."""
    messages = request["messages"]
    users = [m for m in messages if m.get("role") == "user"]
    text = _text_of(users[-1]) if users else ""
    tools = {t["function"]["name"]: t["function"] for t in request.get("tools") or []}
    last = messages[-1]
    if text.startswith("fail"):
        return None
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if "final_result" in tools or schema is not None:
        schema = schema or tools["final_result"]["parameters"]
        wrapped = "response" in schema.get("properties", {})
        arguments = {"response": text} if wrapped else {"name": text, "population": len(text)}
        if "final_result" in tools:
            return _tool_call("final_result", arguments)
        return _text(json.dumps(arguments))
    if text.startswith("weather ") and last.get("role") == "user":
        return _tool_call("get_weather", {"city": text.removeprefix("weather ")})
    return _text(f"weather: {_text_of(last)}" if last.get("role") == "tool" else f"echo: {text}")


def _text(reply: str) -> list[bytes]:
    """`reply` streamed in chunks of 4 characters."""
    pieces = [reply[i:i + 4] for i in range(0, len(reply), 4)]
    return ([_chunk({"role": "assistant", "content": ""})]
            + [_chunk({"content": piece}) for piece in pieces]
            + [_chunk({}, "stop"), _usage(10, len(pieces))])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    server: ChatServer

    def setup(self) -> None:
        super().setup()
        # each chunk goes at once, not after the client's delayed ACK (~40 ms)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.lock:
            self.server.accepted += 1
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        chunks = answer(request)
        with self.server.lock:
            self.server.requests += 1
            users = [m for m in request["messages"] if m.get("role") == "user"]
            self.server.prompts.append(_text_of(users[-1]) if users else "")
            self.server.bodies.append(request)
        if chunks is None:
            body = json.dumps({"error": {"message": "bad prompt", "type": "invalid_request_error"}
                               }).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        with self.server.lock:
            self.server.streaming += 1
            self.server.max_streaming = max(self.server.max_streaming, self.server.streaming)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pieces = [*chunks, b"data: [DONE]\n\n"]
            for n, piece in enumerate(pieces, 1):
                if self.server.delay_s and self.server.stopping.wait(self.server.delay_s):
                    raise ConnectionAbortedError("the server is closing")
                # The last event and the body's end go in one write, as real servers send
                # them: apart, a loaded machine may delay the end past the client's drain
                # window, and the connection is then closed instead of kept
                end = b"0\r\n\r\n" if n == len(pieces) else b""
                self.wfile.write(b"%x\r\n%s\r\n%s" % (len(piece), piece, end))
                self.wfile.flush()
        except OSError:  # the client went away (an aborted run)
            self.close_connection = True
        finally:
            with self.server.lock:
                self.server.streaming -= 1


if __name__ == "__main__":
    server = ChatServer(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0)
    sys.stdout.write(f"{server.url}\n")
    sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()
    server.close()
