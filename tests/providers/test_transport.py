"""The transport seam: a wire API with its own decoder and signer, and a transport per session.

Over real HTTP against the local scripted server: a test-only wire API whose replies come in a
binary framing (a 4-byte big-endian length, then that many bytes of JSON), as AWS event streams
do, and a signer that hashes the exact body bytes, as SigV4 does. Last, a test double transport
(like httpx's `MockTransport`) drives the request policy without sockets.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import paths
import pytest
import requests
from _internals import (
    FramingError,
    Outgoing,
    ReplyBuilder,
    WireApi,
    _http,
    _transport,
    http_status_text,
    stream_http_reply,
)
from sse_server import SSEServer

import agentcore as ac
from agentcore.providers import new_http_session

KEY = "sk-test-transport"
CONTEXT = ac.Context(None, [ac.UserMessage("hi")])
WAIT_S = 5.0
FIXTURES = paths.FIXTURES


# --- a wire API with a binary framing ------------------------------------------------------------


def frame(item: dict[str, Any]) -> bytes:
    data = json.dumps(item).encode()
    return len(data).to_bytes(4, "big") + data


REPLY = [{"type": "text", "text": "Hello"}, {"type": "text", "text": " binary"},
         {"type": "text", "text": " world"}, {"type": "stop"}]
BODY = b"".join(map(frame, REPLY))


class LengthPrefixed:
    """The test framing's decoder: frames may be split anywhere across reads."""

    def __init__(self, max_event_bytes: int) -> None:
        self.buffer = bytearray()
        self.limit = max_event_bytes

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self.buffer += chunk
        items = []
        while len(self.buffer) >= 4:
            size = int.from_bytes(self.buffer[:4], "big")
            if size > self.limit:
                raise FramingError(f"frame of {size} bytes exceeds max_event_bytes ({self.limit})")
            if len(self.buffer) < 4 + size:
                break
            items.append(json.loads(self.buffer[4 : 4 + size]))
            del self.buffer[: 4 + size]
        return items

    def end(self) -> list[dict[str, Any]]:
        if self.buffer:
            raise FramingError(f"the body ends inside a frame ({len(self.buffer)} bytes)")
        return []


def handle(builder: ReplyBuilder,
           items: Iterator[dict[str, Any]]) -> Iterator[ac.AssistantMessageEvent]:
    for item in items:
        if item["type"] == "text":
            yield from builder.text("text", item["text"])
        elif item["type"] == "stop":
            builder.stop_reason = ac.StopReason.STOP


def wire(sign: Callable[[Outgoing], Outgoing] | None = None) -> WireApi:
    return WireApi(
        url=lambda model: f"{model.base_url}/frames",
        headers=lambda model, key: {"Authorization": f"Bearer {key}",
                                    "Accept": "application/x-frames"},
        body=lambda model, context, options: {"model": model.id, "prompt": "hi"},
        handle=handle,
        http_error_text=lambda error: http_status_text(error, lambda payload: None),
        decode=LengthPrefixed,
        sign=sign,
    )


def model_for(server: SSEServer) -> ac.Model:
    return ac.Model("frames-1", "Frames", "test-frames", "test", server.url)


def reply_of(server: SSEServer, api: WireApi, **options: Any) -> ac.AssistantMessage:
    options.setdefault("api_key", KEY)
    return stream_http_reply(api, model_for(server), CONTEXT,
                             ac.StreamOptions(**options)).result()


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "random"])
@pytest.mark.parametrize("own_session", [False, True], ids=["per-call", "new_http_session"])
def test_transport_a_wire_api_with_a_binary_framing_streams_its_reply(
    sse_server: SSEServer, chunking: str, own_session: bool
) -> None:
    sse_server.sse(BODY, chunking=chunking, seed=5)
    session = new_http_session() if own_session else None
    try:
        stream = stream_http_reply(wire(), model_for(sse_server), CONTEXT, ac.StreamOptions(
            api_key=KEY, http_session=session, signal=ac.AbortController().signal))
        events = list(stream)
    finally:
        if session is not None:
            session.close()
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_delta",
                                        "text_delta", "text_end", "done"]
    reply = stream.result()
    assert (reply.stop_reason, reply.error_message) == (ac.StopReason.STOP, None)
    assert reply.content == [ac.TextContent("Hello binary world")]
    [sent] = sse_server.requests
    assert (sent.path, sent.json) == ("/frames", {"model": "frames-1", "prompt": "hi"})
    assert sent.header("Accept") == "application/x-frames"


def test_transport_a_frame_over_max_event_bytes_ends_the_reply(sse_server: SSEServer) -> None:
    sse_server.sse(frame({"type": "text", "text": "x" * 200}))
    reply = reply_of(sse_server, wire(), max_event_bytes=100)
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message == "frame of 228 bytes exceeds max_event_bytes (100)"


def test_transport_a_body_cut_inside_a_frame_ends_the_reply(sse_server: SSEServer) -> None:
    sse_server.sse(BODY[:-3])
    reply = reply_of(sse_server, wire())
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.content == [ac.TextContent("Hello binary world")]
    assert reply.error_message == "the body ends inside a frame (17 bytes)"


def test_transport_an_unexpected_item_is_quoted_in_the_error(sse_server: SSEServer) -> None:
    sse_server.sse(frame({"kind": "text"}))
    reply = reply_of(sse_server, wire())
    assert reply.error_message == ("unexpected response from test (test-frames): KeyError: "
                                   "'type', in \"{'kind': 'text'}\"")


# --- a signer ------------------------------------------------------------------------------------


class Signer:
    """Signs as SigV4 does in spirit: a digest of the exact body bytes, and a credential."""

    def __init__(self, token: str = "session-token-0123456789") -> None:
        self.token = token
        self.seen: list[Outgoing] = []

    def __call__(self, request: Outgoing) -> Outgoing:
        self.seen.append(request)
        digest = hashlib.sha256(request.body).hexdigest()
        headers = {**request.headers, "X-Content-SHA256": digest,
                   "X-Attempt": str(len(self.seen)), "X-Security-Token": self.token}
        return Outgoing(request.url, headers, request.body)


def test_transport_a_signer_signs_the_exact_bytes_sent_on_every_attempt(
    sse_server: SSEServer, backoffs: list[int]
) -> None:
    sse_server.status(503, "{}")
    sse_server.sse(BODY)
    signer = Signer()

    def payload(body: Any, model: ac.Model) -> Any:
        return {**body, "extra": "é"}  # on_payload comes before the signature

    reply = reply_of(sse_server, wire(signer), on_payload=payload,
                     headers={"X-Team": "evals"})
    assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert len(signer.seen) == 2
    assert signer.seen[0] == signer.seen[1]  # the same request, signed anew
    assert signer.seen[0].headers["X-Team"] == "evals"
    assert signer.seen[0].url == f"{sse_server.url}/frames"
    for attempt, sent in enumerate(sse_server.requests, 1):
        assert sent.json == {"model": "frames-1", "prompt": "hi", "extra": "é"}
        assert sent.header("X-Content-SHA256") == hashlib.sha256(sent.body).hexdigest()
        assert sent.body == signer.seen[attempt - 1].body
        assert sent.header("X-Attempt") == str(attempt)
    assert backoffs == [0]


def test_transport_a_credential_the_signer_adds_is_redacted(sse_server: SSEServer) -> None:
    signer = Signer()
    sse_server.status(403, f"token {signer.token} is expired", {"Content-Type": "text/plain"})
    reply = reply_of(sse_server, wire(signer))
    assert reply.error_message == "403 token *** is expired"
    assert sse_server.requests[0].header("X-Security-Token") == signer.token


def test_transport_a_failing_signer_ends_the_reply(sse_server: SSEServer) -> None:
    def broken(request: Outgoing) -> Outgoing:
        raise RuntimeError("no credentials found")

    reply = reply_of(sse_server, wire(broken))
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message == "no credentials found"
    assert sse_server.requests == []


# --- one transport per session -------------------------------------------------------------------


@pytest.fixture
def choices(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The transports chosen for sessions, in order (each choice counted)."""
    chosen: list[Any] = []
    choose = _transport._choose

    def counting(session: requests.Session) -> Any:
        chosen.append(choose(session))
        return chosen[-1]

    monkeypatch.setattr(_transport, "_choose", counting)
    return chosen


class CountingAdapter(requests.adapters.HTTPAdapter):
    """A plain adapter that counts what it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def send(self, request: Any, **kwargs: Any) -> Any:
        self.sent += 1
        return super().send(request, **kwargs)


def complete_with(server: SSEServer, session: requests.Session) -> ac.AssistantMessage:
    return stream_http_reply(wire(), model_for(server), CONTEXT, ac.StreamOptions(
        api_key=KEY, http_session=session, signal=ac.AbortController().signal)).result()


def test_transport_is_chosen_once_per_session(sse_server: SSEServer, choices: list[Any]) -> None:
    for _ in range(6):
        sse_server.sse(BODY)
    with new_http_session() as ours, requests.Session() as theirs:
        for session in (ours, theirs, ours, theirs):
            assert complete_with(sse_server, session).stop_reason == ac.StopReason.STOP
        assert choices == [_transport.THREADED]  # ours was recorded when it was made
        assert _transport.transport_of(ours) is _transport.WATCHED
        assert _transport.transport_of(theirs) is _transport.THREADED
        # Another adapter on our session: the next request chooses again, and goes through it
        adapter = CountingAdapter()
        ours.mount("http://127.0.0.1", adapter)
        for _ in range(2):
            assert complete_with(sse_server, ours).stop_reason == ac.StopReason.STOP
        assert choices == [_transport.THREADED, _transport.THREADED]
        assert adapter.sent == 2
    assert len(sse_server.requests) == 6


# --- a test double transport ---------------------------------------------------------------------


class MockResponse:
    """A `Response` holding its whole body."""

    def __init__(self, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None,
                 pieces: int = 1) -> None:
        self.status = status
        self.headers = dict(headers or {})
        step = max(1, -(-len(body) // pieces))
        self._pieces = [body[i : i + step] for i in range(0, len(body), step)]
        self.closed = False

    def chunks(self) -> Iterator[bytes]:
        yield from self._pieces

    def read(self, limit: int) -> bytes:
        return b"".join(self._pieces)[:limit]

    def set_read_timeout(self, seconds: float) -> None:
        pass

    def cut(self) -> None:
        self.close()

    def close(self) -> None:
        self.closed = True


class MockTransport:
    """Answers each attempt with the next of `replies` (a `MockResponse` or an exception)."""

    def __init__(self, replies: Sequence[MockResponse | Exception]) -> None:
        self.replies = list(replies)
        self.requests: list[Outgoing] = []
        self.lock = threading.Lock()

    def open(self, session: requests.Session, request: Outgoing, timeouts: tuple[float, float],
             signal: ac.AbortSignal | None) -> MockResponse:
        with self.lock:
            self.requests.append(request)
            reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_transport_double_drives_the_retry_policy(backoffs: list[int]) -> None:
    body = (FIXTURES / "openai_completions/http_500_validation.json").read_bytes()
    ok = MockResponse(200, BODY, pieces=len(BODY))
    mock = MockTransport([requests.ConnectionError("reset"), MockResponse(429, b"{}", {
        "Retry-After": "0"}), MockResponse(500, body), ok])
    model = ac.Model("frames-1", "Frames", "test-frames", "test", "http://mock.test")
    with requests.Session() as session:
        _transport.use_transport(session, mock)
        options = ac.StreamOptions(api_key=KEY, http_session=session, max_retries=5)
        reply = stream_http_reply(wire(Signer()), model, CONTEXT, options).result()
    assert reply.error_message == ("500 invalid request: messages.1.content: Input should be a "
                                   "valid string, got None (and 6 more validation errors)")
    assert len(mock.requests) == 3  # the validation error was not retried
    assert [r.headers["X-Attempt"] for r in mock.requests] == ["1", "2", "3"]
    assert backoffs == [0]  # after the reset; the 429 said how long to wait
    assert mock.replies == [ok]


def test_transport_double_streams_a_reply_read_in_pieces() -> None:
    mock = MockTransport([MockResponse(200, BODY, pieces=len(BODY))])
    model = ac.Model("frames-1", "Frames", "test-frames", "test", "http://mock.test")
    with requests.Session() as session:
        _transport.use_transport(session, mock)
        reply = stream_http_reply(wire(), model, CONTEXT,
                                  ac.StreamOptions(api_key=KEY, http_session=session)).result()
    assert reply.content == [ac.TextContent("Hello binary world")]
    [sent] = mock.requests
    assert json.loads(sent.body) == {"model": "frames-1", "prompt": "hi"}
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert _http.redact(repr(sent), (KEY,)) == repr(sent)  # no header or body in the repr
