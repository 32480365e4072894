"""The transports over real HTTP: the request as sent, and the reply's body read in bulk
(`Urllib3Response.chunks`, `_bodies`), by `Urllib3Transport` and by `RequestsTransport`.

A raw server on 127.0.0.1 records the bytes of each request as they come and writes byte-exact
answers (chunked, sized, up to the close, with trailers, extensions, bytes after the end, a
content coding) in the writes each test asks for, and counts connections: a body read to its
end leaves its connection for the next request; a body read in part, or followed by stray
bytes, does not. Timeouts, a cut from another thread, a dropped connection and a malformed size
end the read with `ReadError`.
"""

from __future__ import annotations

import contextlib
import gzip
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from _internals import (
    Outgoing,
    ReadError,
    RequestsTransport,
    ServerSentEvent,
    Transport,
    Urllib3Transport,
    _urllib3,
    iter_events,
)

WAIT_S = 5.0
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
EVENTS = [b"data: {\"n\": 1}\n\n", b"data: {\"n\": 2}\n\n", b"data: [DONE]\n\n"]
PAYLOAD = b"".join(EVENTS)


def frame(payload: bytes, extension: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(payload), extension, payload)


BODY = b"".join(map(frame, EVENTS)) + b"0\r\n\r\n"

Script = Callable[[socket.socket], bool]
"""Writes one answer on the connection; True keeps the connection for the next request."""


class RawServer:
    """Answers each request with the next script; counts the connections it accepts."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1/x"
        self.scripts: deque[Script] = deque()
        self.received: list[tuple[bytes, bytes]] = []  # per request: (its first read, all of it)
        self.accepted = 0
        self.gone = threading.Event()  # set when the client closed a connection a script held
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.peers: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, name="raw-server")]
        self.threads[0].start()

    def answer(self, *writes: bytes, then: str = "keep") -> None:
        """Queue an answer of `writes` (each sent alone); `then` keep, close or hold the
        connection (hold: until the client closes it, which sets `gone`)."""

        def script(peer: socket.socket) -> bool:
            for data in writes:
                peer.sendall(data)
            if then == "hold":
                with contextlib.suppress(OSError):
                    while peer.recv(65536):
                        pass
                    self.gone.set()
            return then == "keep"

        self.scripts.append(script)

    def _accept(self) -> None:
        while True:
            try:
                peer, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                self.peers.append(peer)
                thread = threading.Thread(target=self._serve, args=(peer,),
                                          name="raw-server-connection")
                self.threads.append(thread)
            thread.start()

    def _serve(self, peer: socket.socket) -> None:
        peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer.settimeout(WAIT_S)
        buffer = b""
        try:
            while True:
                first = buffer
                while b"\r\n\r\n" not in buffer:
                    data = peer.recv(1024 * 1024)
                    if not data:
                        return
                    first = first or data
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(buffer) < length:
                    buffer += peer.recv(1024 * 1024)
                self.received.append((first, head + b"\r\n\r\n" + buffer[:length]))
                buffer = buffer[length:]
                if not self.scripts.popleft()(peer):
                    return
        except OSError:
            return
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            peer.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self.listener.close()
        with self.lock:
            for peer in self.peers:
                with contextlib.suppress(OSError):
                    peer.shutdown(socket.SHUT_RDWR)
            threads = list(self.threads)
        for thread in threads:
            thread.join(WAIT_S)
            assert not thread.is_alive()
        assert not self.errors, self.errors


@pytest.fixture
def server() -> Iterator[RawServer]:
    raw = RawServer()
    try:
        yield raw
    finally:
        raw.close()


@contextlib.contextmanager
def urllib3_transport() -> Iterator[Urllib3Transport]:
    transport = Urllib3Transport(proxies={})
    try:
        yield transport
    finally:
        transport.close()


@pytest.fixture(params=["Urllib3Transport", "RequestsTransport"])
def transport(request: pytest.FixtureRequest) -> Iterator[Transport]:
    """Both transports: agentcore's own over urllib3, and a caller's `requests.Session`."""
    if request.param == "Urllib3Transport":
        with urllib3_transport() as made:
            yield made
    else:
        with requests.Session() as session:
            session.trust_env = False
            yield RequestsTransport(session)


def open_reply(transport: Transport, server: RawServer, read_timeout: float = WAIT_S,
               body: bytes = b"{}") -> Any:
    return transport.open(Outgoing(server.url, {"Content-Type": "application/json"}, body),
                          (WAIT_S, read_timeout), None)


def body_of(transport: Transport, server: RawServer) -> list[bytes]:
    response = open_reply(transport, server)
    try:
        return list(response.chunks())
    finally:
        response.close()


# --- the request ----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [2, 30_000, 200_000, _urllib3._JOINED_BODY_LIMIT + 1])
def test_transport_http_the_head_and_a_body_go_out_together(
    server: RawServer, transport: Transport, size: int
) -> None:
    body = bytes(range(256)) * (size // 256) + b"{}"
    server.answer(HEAD + BODY)
    response = open_reply(transport, server, body=body)
    response.close()
    [(first, whole)] = server.received
    head, sent = whole.split(b"\r\n\r\n", 1)
    assert sent == body
    assert b"\r\ncontent-length: %d\r\n" % len(body) in head.lower() + b"\r\n"
    if size <= 30_000 and isinstance(transport, Urllib3Transport):
        assert first == whole  # one send, one segment: the first read has it all


def test_transport_http_a_request_without_a_body_goes_out(server: RawServer) -> None:
    server.answer(HEAD + BODY)
    with urllib3_transport() as transport:
        response = open_reply(transport, server, body=b"")
        assert b"".join(response.chunks()) == PAYLOAD
    [(_, whole)] = server.received
    assert whole.startswith(b"POST /v1/x HTTP/1.1\r\n")
    assert b"Content-Length: 0\r\n" in whole
    assert whole.endswith(b"\r\n\r\n")


def test_transport_http_the_transport_owns_its_pool(server: RawServer) -> None:
    with urllib3_transport() as transport:
        for _ in range(3):
            server.answer(HEAD + BODY)
            assert body_of(transport, server) == [PAYLOAD]
        assert server.accepted == 1
        transport.close()  # the kept connection closes; a later request opens another
        server.answer(HEAD + BODY)
        assert body_of(transport, server) == [PAYLOAD]
    assert server.accepted == 2


# --- what comes -----------------------------------------------------------------------------------


def test_transport_http_every_chunk_of_one_read_comes_at_once(
    server: RawServer, transport: Transport
) -> None:
    server.answer(HEAD + BODY)  # the body arrives with the headers, in http.client's buffer
    server.answer(HEAD, BODY)
    assert body_of(transport, server) == [PAYLOAD]
    assert b"".join(body_of(transport, server)) == PAYLOAD


@pytest.mark.parametrize("write", ["one-byte", "one-piece-a-chunk"])
def test_transport_http_any_split_gives_the_payload(server: RawServer, write: str) -> None:
    if write == "one-byte":
        server.answer(HEAD, *(BODY[i:i + 1] for i in range(len(BODY))))
    else:
        server.answer(HEAD, *map(frame, EVENTS), b"0\r\n\r\n")
    with urllib3_transport() as transport:
        assert b"".join(body_of(transport, server)) == PAYLOAD


def test_transport_http_the_sse_decoder_takes_several_events_a_feed(server: RawServer) -> None:
    server.answer(HEAD + BODY)
    with urllib3_transport() as transport:
        events = list(iter_events(open_reply(transport, server), None))
    assert events == [ServerSentEvent(None, '{"n": 1}'), ServerSentEvent(None, '{"n": 2}'),
                      ServerSentEvent(None, "[DONE]")]


def test_transport_http_a_huge_chunk_comes_in_pieces(server: RawServer) -> None:
    huge = b"data: " + b"z" * (1024 * 1024) + b"\n\n"
    server.answer(HEAD, frame(huge) + b"0\r\n\r\n")
    with urllib3_transport() as transport:
        pieces = body_of(transport, server)
    assert b"".join(pieces) == huge
    assert max(map(len, pieces)) <= _urllib3._READ_SIZE


def test_transport_http_a_content_coding_is_undone(server: RawServer) -> None:
    packed = gzip.compress(PAYLOAD)
    server.answer(HEAD.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"),
                  frame(packed[:10]) + frame(packed[10:]) + b"0\r\n\r\n")
    server.answer(HEAD + BODY)
    with urllib3_transport() as transport:
        assert b"".join(body_of(transport, server)) == PAYLOAD
        assert body_of(transport, server) == [PAYLOAD]
    assert server.accepted == 1


# --- keep-alive -----------------------------------------------------------------------------------


BODIES = {
    "chunked": HEAD + BODY,
    "trailers-and-extensions": HEAD + frame(PAYLOAD, b";a=b") + b"0\r\nX-Sum: 1\r\n\r\n",
    "sized": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(PAYLOAD), PAYLOAD),
    "sized-empty": b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
}


@pytest.mark.parametrize("answer", list(BODIES))
def test_transport_http_a_body_read_to_its_end_leaves_its_connection_for_the_next(
    server: RawServer, transport: Transport, answer: str
) -> None:
    for _ in range(3):
        server.answer(BODIES[answer])
    for _ in range(3):
        assert b"".join(body_of(transport, server)) == (b"" if answer == "sized-empty" else PAYLOAD)
    assert server.accepted == 1


@pytest.mark.parametrize("answer", [*BODIES, "up-to-the-close"])
def test_transport_http_every_plain_2xx_body_is_read_in_bulk(
    server: RawServer, transport: Transport, answer: str
) -> None:
    """Chunked, sized, empty or up to the close: the socket is read directly, not by urllib3."""
    closing = answer == "up-to-the-close"
    server.answer(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + PAYLOAD if closing
                  else BODIES[answer], then="close" if closing else "keep")
    response = open_reply(transport, server)
    try:
        assert _urllib3._bulk_body(response.raw) is not None
        body = b"".join(response.chunks())
    finally:
        response.close()
    assert body == (b"" if answer == "sized-empty" else PAYLOAD)


def test_transport_http_a_body_read_in_part_closes_its_connection(
    server: RawServer, transport: Transport
) -> None:
    server.answer(HEAD, frame(EVENTS[0]), then="hold")
    server.answer(HEAD + BODY)
    response = open_reply(transport, server)
    assert next(response.chunks()) == EVENTS[0]
    response.close()
    assert server.gone.wait(WAIT_S)
    assert body_of(transport, server) == [PAYLOAD]
    assert server.accepted == 2


@pytest.mark.parametrize("answer", [HEAD + BODY + b"HTTP/1.1 200 OK\r\n",
                                    HEAD + frame(PAYLOAD) + b"0\r\nX-Cut: 1"],
                         ids=["bytes-after-the-end", "closed-in-the-trailers"])
def test_transport_http_a_connection_in_doubt_is_not_reused(
    server: RawServer, answer: bytes
) -> None:
    server.answer(answer, then="keep" if answer.endswith(b"\r\n") else "close")
    server.answer(HEAD + BODY)
    with urllib3_transport() as transport:
        assert b"".join(body_of(transport, server)) == PAYLOAD
        assert body_of(transport, server) == [PAYLOAD]
    assert server.accepted == 2


def test_transport_http_a_body_up_to_the_close_is_whole(server: RawServer) -> None:
    server.answer(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", PAYLOAD, then="close")
    server.answer(HEAD + BODY)
    with urllib3_transport() as transport:
        assert b"".join(body_of(transport, server)) == PAYLOAD
        assert body_of(transport, server) == [PAYLOAD]
    assert server.accepted == 2


# --- what fails -----------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [
    HEAD + b"100\r\nabc",  # dropped inside a chunk
    HEAD + b"zz\r\nabc\r\n",  # not a size
    b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\nabc",  # dropped inside a sized body
], ids=["dropped-mid-chunk", "malformed-size", "dropped-mid-sized"])
def test_transport_http_a_broken_body_is_a_read_error(
    server: RawServer, transport: Transport, answer: bytes
) -> None:
    server.answer(answer, then="close")
    server.answer(HEAD + BODY)
    response = open_reply(transport, server)
    with pytest.raises(ReadError) as info:
        b"".join(response.chunks())
    response.close()
    assert (str(info.value), info.value.timed_out) == ("Connection error.", False)
    assert body_of(transport, server) == [PAYLOAD]  # on a new connection
    assert server.accepted == 2


def test_transport_http_silence_past_the_read_timeout_is_a_timeout(
    server: RawServer, transport: Transport
) -> None:
    server.answer(HEAD, frame(EVENTS[0]), then="hold")
    response = open_reply(transport, server, read_timeout=0.2)
    chunks = response.chunks()
    assert next(chunks) == EVENTS[0]
    started = time.monotonic()
    with pytest.raises(ReadError) as info:
        next(chunks)
    assert time.monotonic() - started >= 0.15
    assert (str(info.value), info.value.timed_out) == ("Request timed out.", True)
    response.close()
    assert server.gone.wait(WAIT_S)


def test_transport_http_a_cut_wakes_a_blocked_read(
    server: RawServer, transport: Transport,
    run_in_thread: Callable[[Callable[[], None]], None],
) -> None:
    server.answer(HEAD, frame(EVENTS[0]), then="hold")
    response = open_reply(transport, server, read_timeout=3600.0)  # only the cut ends the read
    first, ended = threading.Event(), threading.Event()
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            for _ in response.chunks():
                first.set()
        except BaseException as exc:
            outcome.append(exc)
        ended.set()

    run_in_thread(read)
    assert first.wait(WAIT_S)
    response.cut()
    assert ended.wait(WAIT_S)
    assert [type(e) for e in outcome] == [ReadError]
    assert server.gone.wait(WAIT_S)


# --- the version gate -----------------------------------------------------------------------------


def test_transport_http_private_names_are_used_only_on_tested_versions(
    server: RawServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the gate (another urllib3), every body is read through urllib3's public API."""
    monkeypatch.setattr(_urllib3, "_privates_ok", lambda: False)
    bulk: list[Any] = []
    monkeypatch.setattr(_urllib3, "_bulk_body", lambda raw: bulk.append(raw))
    for answer in BODIES.values():
        server.answer(answer)
    with urllib3_transport() as transport:
        for answer in BODIES:
            assert b"".join(body_of(transport, server)) == (
                b"" if answer == "sized-empty" else PAYLOAD)
    assert bulk == []
    assert server.accepted == 1  # keep-alive holds through the public path too


def test_transport_http_an_attribute_error_in_the_read_path_is_a_bug(
    server: RawServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version mismatch or a bug reads as what it is, never as "Connection error."."""

    def broken(raw: Any) -> Any:
        raise AttributeError("'HTTPResponse' object has no attribute 'chunk_left'")

    monkeypatch.setattr(_urllib3, "_bulk_body", broken)
    server.answer(HEAD + BODY)
    with urllib3_transport() as transport:
        response = open_reply(transport, server)
        with pytest.raises(AttributeError, match="chunk_left"):
            next(response.chunks())
        response.close()


# --- construction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"pool_size": 0}, ValueError, "'pool_size' must be an int of at least 1, got 0"),
    ({"pool_size": True}, ValueError, "'pool_size' must be an int of at least 1, got True"),
    ({"proxies": "http://proxy:3128"}, TypeError, "'proxies' must be a mapping"),
    ({"ca_certs": 5}, TypeError, "'ca_certs' must be a path or None, got 5"),
])
def test_transport_http_bad_arguments_are_named(kwargs: dict[str, Any], error: type,
                                                message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        Urllib3Transport(**kwargs)


def test_transport_http_certificates_come_from_the_environment_as_with_requests(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import certifi

    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    assert _urllib3._environment_ca_certs() == certifi.where()
    monkeypatch.setenv("CURL_CA_BUNDLE", str(tmp_path / "curl.pem"))
    assert _urllib3._environment_ca_certs() == str(tmp_path / "curl.pem")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "requests.pem"))
    assert _urllib3._environment_ca_certs() == str(tmp_path / "requests.pem")


def test_transport_http_a_proxy_is_chosen_per_url(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = Urllib3Transport(proxies={"https": "http://proxy.test:3128",
                                          "no": "localhost,.internal.test"})
    assert transport._proxy_for("https://api.openai.com/v1") == "http://proxy.test:3128"
    assert transport._proxy_for("http://api.openai.com/v1") is None  # no proxy for http
    assert transport._proxy_for("https://llm.internal.test/v1") is None
    assert transport._proxy_for("https://localhost:8080/v1") is None
    assert repr(transport) == "Urllib3Transport(pool_size=10, proxied)"
