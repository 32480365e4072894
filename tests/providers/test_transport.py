"""The wire seam and the client a request goes through: a wire API with its own decoder and
signer, `http_client` and `http_session`, and `MockTransport`.

Against the scripted server: a test-only wire API whose replies come in a binary framing (a
4-byte big-endian length, then that many bytes of JSON), as AWS event streams do, through each
way of choosing a client over real HTTP (its errors on `mock_server`, no socket), and a signer
that hashes the exact body bytes, as SigV4 does, checked against what arrived over real HTTP.
Last, `MockTransport` (like httpx's) drives the request policy without sockets, and a transport
that raises.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import paths
import pytest
from _internals import (
    FramingError,
    HttpClient,
    Outgoing,
    ReplyBuilder,
    Urllib3Transport,
    WireApi,
    http_status_text,
    redact,
    stream_http_reply,
)
from mock_server import MockServer, ScriptedServer
from sse_server import SSEServer

import agentcore as ac
from agentcore.providers import new_http_session
from agentcore.testing import MockTransport

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


def model_for(server: ScriptedServer) -> ac.Model:
    return ac.Model("frames-1", "Frames", "test-frames", "test", server.url)


def reply_of(server: ScriptedServer, api: WireApi, **options: Any) -> ac.AssistantMessage:
    options.setdefault("api_key", KEY)
    return stream_http_reply(api, model_for(server), CONTEXT,
                             ac.StreamOptions(**options)).result()


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "random"])
@pytest.mark.parametrize("through", ["shared", "http_client", "http_session"])
def test_transport_a_wire_api_with_a_binary_framing_streams_its_reply(
    sse_server: SSEServer, chunking: str, through: str
) -> None:
    sse_server.sse(BODY, chunking=chunking, seed=5)
    with HttpClient(Urllib3Transport(proxies={})) as client, new_http_session() as session:
        chosen: dict[str, Any] = {"http_client": {"http_client": client},
                                  "http_session": {"http_session": session}}.get(through, {})
        stream = stream_http_reply(wire(), model_for(sse_server), CONTEXT, ac.StreamOptions(
            api_key=KEY, signal=ac.AbortController().signal, **chosen))
        events = list(stream)
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_delta",
                                        "text_delta", "text_end", "done"]
    reply = stream.result()
    assert (reply.stop_reason, reply.error_message) == (ac.StopReason.STOP, None)
    assert reply.content == [ac.TextContent("Hello binary world")]
    [sent] = sse_server.requests
    assert (sent.path, sent.json) == ("/frames", {"model": "frames-1", "prompt": "hi"})
    assert sent.header("Accept") == "application/x-frames"


def test_transport_a_frame_over_max_event_bytes_ends_the_reply(mock_server: MockServer) -> None:
    mock_server.sse(frame({"type": "text", "text": "x" * 200}))
    reply = reply_of(mock_server, wire(), max_event_bytes=100)
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message == "frame of 228 bytes exceeds max_event_bytes (100)"


def test_transport_a_body_cut_inside_a_frame_ends_the_reply(mock_server: MockServer) -> None:
    mock_server.sse(BODY[:-3])
    reply = reply_of(mock_server, wire())
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.content == [ac.TextContent("Hello binary world")]
    assert reply.error_message == "the body ends inside a frame (17 bytes)"


def test_transport_an_unexpected_item_is_quoted_in_the_error(mock_server: MockServer) -> None:
    mock_server.sse(frame({"kind": "text"}))
    reply = reply_of(mock_server, wire())
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


def test_transport_a_credential_the_signer_adds_is_redacted(mock_server: MockServer) -> None:
    signer = Signer()
    mock_server.status(403, f"token {signer.token} is expired", {"Content-Type": "text/plain"})
    reply = reply_of(mock_server, wire(signer))
    assert reply.error_message == "403 token *** is expired"
    assert mock_server.requests[0].header("X-Security-Token") == signer.token


def test_transport_a_failing_signer_ends_the_reply(mock_server: MockServer) -> None:
    def broken(request: Outgoing) -> Outgoing:
        raise RuntimeError("no credentials found")

    reply = reply_of(mock_server, wire(broken))
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message == "no credentials found"
    assert mock_server.requests == []


# --- MockTransport: the policy without sockets ---------------------------------------------------


def replies(*answers: Any) -> Callable[[Outgoing], Any]:
    """A handler giving each attempt the next answer: (status, headers, body) or an exception."""
    queue = list(answers)

    def answer(request: Outgoing) -> Any:
        reply = queue.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    return answer


def mock_reply(mock: MockTransport, api: WireApi | None = None,
               **options: Any) -> ac.AssistantMessage:
    model = ac.Model("frames-1", "Frames", "test-frames", "test", "http://mock.test")
    options.setdefault("api_key", KEY)
    return stream_http_reply(api or wire(), model, CONTEXT, ac.StreamOptions(
        http_client=HttpClient(mock), **options)).result()


def test_transport_mock_drives_the_retry_policy(backoffs: list[int]) -> None:
    body = (FIXTURES / "openai_completions/http_500_validation.json").read_bytes()
    mock = MockTransport(replies(ConnectionResetError("reset"), (429, {"Retry-After": "0"}, b"{}"),
                                 (500, {}, body), (200, {}, BODY)))
    reply = mock_reply(mock, wire(Signer()), max_retries=5)
    assert reply.error_message == ("500 invalid request: messages.1.content: Input should be a "
                                   "valid string, got None (and 6 more validation errors)")
    assert len(mock.requests) == 3  # the validation error was not retried
    assert [r.headers["X-Attempt"] for r in mock.requests] == ["1", "2", "3"]
    assert backoffs == [0]  # after the reset; the 429 said how long to wait


def test_transport_mock_streams_a_reply_given_in_pieces() -> None:
    pieces = [BODY[i : i + 1] for i in range(len(BODY))]
    mock = MockTransport(replies((200, {"Content-Type": "application/x-frames"}, pieces)))
    reply = mock_reply(mock)
    assert reply.content == [ac.TextContent("Hello binary world")]
    [sent] = mock.requests
    assert (sent.method, sent.url) == ("POST", "http://mock.test/frames")
    assert json.loads(sent.body) == {"model": "frames-1", "prompt": "hi"}
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert redact(repr(sent), (KEY,)) == repr(sent)  # no header or body in the repr


def test_transport_mock_a_connection_lost_mid_body_is_a_connection_error() -> None:
    def broken() -> Iterator[bytes]:
        yield BODY[:10]
        raise ConnectionResetError("reset by peer")

    reply = mock_reply(MockTransport(replies((200, {}, broken()))))
    assert (reply.stop_reason, reply.error_message) == (ac.StopReason.ERROR, "Connection error.")


@pytest.mark.parametrize(("answer", "expected"), [
    ("not a tuple", "a MockTransport handler must return (status, headers, body), got "
                    "'not a tuple'"),
    ((99, {}, b""), "a MockTransport reply's status must be an int from 100 to 599, got 99"),
    ((200, [], b""), "a MockTransport reply's headers must be a mapping, got []"),
    ((200, {}, "text"), "a MockTransport reply's body must be bytes or an iterable of bytes, "
                        "got str"),
    ((200, {}, [b"ok", "text"]), "a MockTransport reply's body chunks must be bytes, got str"),
])
def test_transport_mock_a_bad_reply_names_what_is_wrong(answer: Any, expected: str) -> None:
    reply = mock_reply(MockTransport(lambda request: answer))
    assert reply.stop_reason == ac.StopReason.ERROR
    assert expected in (reply.error_message or "")


def test_transport_mock_rejects_a_handler_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="'handler' must be callable, got int"):
        MockTransport(5)  # type: ignore[arg-type]


def test_transport_a_transport_that_raises_ends_the_run_naming_the_exception(
    backoffs: list[int],
) -> None:
    """Not a connection error: never retried, and the run's error says what was raised."""

    class Broken:
        opened = 0

        def open(self, request: Outgoing, timeouts: Any, signal: Any) -> Any:
            Broken.opened += 1
            raise RuntimeError("the transport broke")

        def close(self) -> None:
            pass

    model = ac.Model("frames-1", "Frames", "test-frames", "test", "http://mock.test")
    reply = stream_http_reply(wire(), model, CONTEXT, ac.StreamOptions(
        api_key=KEY, http_client=HttpClient(Broken()))).result()
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message == ("the HTTP transport failed (a bug, not the connection): "
                                   "RuntimeError: the transport broke")
    assert (Broken.opened, backoffs) == (1, [])


def test_transport_an_agent_runs_on_a_mock_transport() -> None:
    """The pattern of `agentcore.testing`'s docstring: an Agent, a real wire API, no socket."""
    body = (FIXTURES / "openai_completions/text.sse").read_bytes()
    mock = MockTransport(lambda request: (200, {"Content-Type": "text/event-stream"}, body))
    model = ac.Model("gpt-test", "GPT", "openai-completions", "openai", "https://api.test/v1")
    with ac.Agent(model, api_key=KEY, http_client=HttpClient(mock)) as agent:
        run = agent.prompt("hi")
        assert run.result(WAIT_S)[-1].stop_reason == ac.StopReason.STOP
    [sent] = mock.requests
    assert sent.url == "https://api.test/v1/chat/completions"
    assert json.loads(sent.body)["messages"][-1] == {"role": "user", "content": "hi"}


@pytest.mark.parametrize(("value", "message"), [
    ("a client", "'http_client' must be an agentcore.providers.HttpClient or None, got "
                 "'a client' (str)"),
    (5, "'http_client' must be an agentcore.providers.HttpClient or None, got 5 (int)"),
    (MockTransport(lambda request: (200, {}, b"")),
     "'http_client' must be an agentcore.providers.HttpClient or None (a transport goes "
     "inside one: HttpClient(transport)), got MockTransport("),
])
def test_transport_http_client_is_checked(value: Any, message: str) -> None:
    with pytest.raises(TypeError) as info:
        ac.StreamOptions(http_client=value)
    assert message in str(info.value)
    with pytest.raises(TypeError, match="'transport' must be a Transport"):
        HttpClient("urllib3")  # type: ignore[arg-type]


def test_transport_an_attribute_error_reading_the_body_is_a_bug_not_a_connection_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A version mismatch or a bug in a transport reads as what it is: named, with its
    traceback in the log at ERROR (never "Connection error.")."""

    def body() -> Iterator[bytes]:
        yield BODY[:10]
        raise AttributeError("'NoneType' object has no attribute 'recv_into'")

    caplog.set_level(logging.ERROR, logger="agentcore")
    reply = mock_reply(MockTransport(replies((200, {}, body()))))
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message == (
        "the HTTP transport failed (a bug, not the connection): AttributeError: 'NoneType' "
        "object has no attribute 'recv_into'")
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "Traceback" in record.getMessage()
    assert "recv_into" in record.getMessage()
