"""`HttpClient.open` / `iter_events` over real sockets against the local scripted server."""

from __future__ import annotations

import email.utils
import json
import logging
import pathlib
import re
import threading
import time
from collections.abc import Iterator, Mapping

import paths
import pytest
import requests
from _internals import (
    HttpClient,
    HttpError,
    HttpRequest,
    RequestAborted,
    RequestsTransport,
    Response,
    RetryRefusal,
    ServerSentEvent,
    SSEDecoder,
    UnframedLines,
    Urllib3Transport,
    iter_events,
    iter_sse,
    redact,
)
from _internals import _client as _http
from sse_server import HOLD, SSEServer, free_port

from agentcore import (
    AbortController,
    Context,
    Model,
    StopReason,
    StreamOptions,
    UserMessage,
    complete,
)

FIXTURES = paths.FIXTURES
SSE_FIXTURES = sorted(FIXTURES.glob("**/*.sse"))
TEXT_FIXTURES = [FIXTURES / "openai_completions/text.sse", FIXTURES / "openai_responses/text.sse"]
WAIT_S = 5.0  # the timeout on every wait for another thread
KEY = "sk-test"
BODY = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


_CLIENT: list[HttpClient] = []


@pytest.fixture(autouse=True)
def http_client() -> Iterator[HttpClient]:
    """One client per test, used by `open_stream` and closed afterwards."""
    with HttpClient(Urllib3Transport(proxies={})) as client:
        _CLIENT[:] = [client]
        yield client
        _CLIENT.clear()


def open_stream(request: HttpRequest) -> Response:
    return _CLIENT[0].open(request)


def fixture_id(path: pathlib.Path) -> str:
    return str(path.relative_to(FIXTURES))


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def make_request(server: SSEServer, **kwargs) -> HttpRequest:
    kwargs.setdefault("secrets", (KEY,))
    return HttpRequest(
        url=f"{server.url}/chat/completions",
        body=json.dumps(BODY).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        **kwargs,
    )


def read_events(request: HttpRequest) -> list[ServerSentEvent]:
    return list(iter_events(open_stream(request), request.signal))


def failure(request: HttpRequest) -> HttpError:
    with pytest.raises(HttpError) as info:
        read_events(request)
    return info.value


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "random"])
@pytest.mark.parametrize("path", SSE_FIXTURES, ids=fixture_id)
def test_http_stream_gives_the_fixture_events(sse_server, path, chunking) -> None:
    body = path.read_bytes()
    sse_server.sse(body, chunking=chunking, seed=7)
    decoder = SSEDecoder()
    expected = decoder.feed(body) + decoder.close()
    if decoder.unframed:  # iter_events hands a raw tail (Gemini's error body) over at the end
        expected.append(UnframedLines("\n".join(decoder.unframed)))
    assert read_events(make_request(sse_server)) == expected


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "random"])
@pytest.mark.parametrize("path", TEXT_FIXTURES, ids=fixture_id)
def test_http_stream_with_crlf_framing_gives_the_same_events(sse_server, path, chunking) -> None:
    body = path.read_bytes()
    sse_server.sse(body.replace(b"\n", b"\r\n"), chunking=chunking, seed=3)
    assert read_events(make_request(sse_server)) == list(iter_sse([body]))


def test_http_request_is_sent_as_given(sse_server) -> None:
    sse_server.sse(b"data: [DONE]\n\n")
    assert read_events(make_request(sse_server)) == [ServerSentEvent(None, "[DONE]")]
    [seen] = sse_server.requests
    assert (seen.method, seen.path, seen.json) == ("POST", "/chat/completions", BODY)
    assert seen.header("authorization") == f"Bearer {KEY}"
    assert seen.header("content-type") == "application/json"


def test_http_events_arrive_before_the_body_ends(sse_server, run_in_thread) -> None:
    first = b'data: {"n":1}\n\n'
    gone = sse_server.slow_sse([first], interval_s=WAIT_S)
    request = make_request(sse_server, signal=AbortController().signal)
    events = iter_events(open_stream(request), request.signal)
    assert next(events) == ServerSentEvent(None, '{"n":1}')  # while the server still holds on
    events.close()
    assert gone.seen.wait(WAIT_S)


def test_http_retries_429_with_retry_after_zero(sse_server, backoffs) -> None:
    sse_server.status(429, fixture_bytes("openai_completions/http_429.json"), {"Retry-After": "0"})
    sse_server.sse(fixture_bytes("openai_completions/text.sse"))
    events = read_events(make_request(sse_server))
    assert events[-1] == ServerSentEvent(None, "[DONE]")
    assert len(sse_server.requests) == 2
    assert sse_server.requests[0] == sse_server.requests[1]
    assert backoffs == []  # the server's delay was used


def test_http_retries_503_with_backoff(sse_server, backoffs) -> None:
    sse_server.status(503, "upstream overloaded", {"Content-Type": "text/plain"})
    sse_server.sse(b"data: ok\n\n")
    assert read_events(make_request(sse_server)) == [ServerSentEvent(None, "ok")]
    assert len(sse_server.requests) == 2
    assert backoffs == [0]


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
def test_http_retryable_statuses(sse_server, backoffs, status) -> None:
    sse_server.status(status, "{}")
    sse_server.sse(b"data: ok\n\n")
    assert read_events(make_request(sse_server)) == [ServerSentEvent(None, "ok")]
    assert len(sse_server.requests) == 2


def test_http_backoff_grows_and_retries_stop_at_max_retries(sse_server, backoffs) -> None:
    body = fixture_bytes("openai_completions/http_500.json")
    for _ in range(4):
        sse_server.status(500, body)
    error = failure(make_request(sse_server))  # the default is 2 retries
    assert str(error) == f"500 {body.decode()}"
    assert error.status == 500
    assert error.refusal is None
    assert len(sse_server.requests) == 3
    assert backoffs == [0, 1]
    assert sse_server.pending() == 1


def test_http_backoff_values() -> None:
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        for _ in range(20):
            assert ceiling * 0.75 <= _http._backoff(attempt) <= ceiling


def test_http_retry_after_ms(sse_server, backoffs) -> None:
    sse_server.status(429, "{}", {"retry-after-ms": "10", "Retry-After": "999"})
    sse_server.sse(b"data: ok\n\n")
    assert read_events(make_request(sse_server)) == [ServerSentEvent(None, "ok")]
    assert len(sse_server.requests) == 2
    assert backoffs == []


def test_http_retry_after_http_date_in_the_past_retries_at_once(sse_server, backoffs) -> None:
    date = email.utils.formatdate(time.time() - 30, usegmt=True)
    sse_server.status(503, "{}", {"Retry-After": date})
    sse_server.sse(b"data: ok\n\n")
    assert read_events(make_request(sse_server)) == [ServerSentEvent(None, "ok")]
    assert len(sse_server.requests) == 2
    assert backoffs == []  # a delay of 0: retried with no backoff and no pause


def test_http_retry_after_http_date_is_read_as_a_delay(sse_server) -> None:
    date = email.utils.formatdate(time.time() + 3600, usegmt=True)
    sse_server.status(429, "{}", {"Retry-After": date})
    error = failure(make_request(sse_server))
    assert re.fullmatch(r"Server requested 360\ds retry delay \(max: 60s\)\. \{\}", str(error))
    assert len(sse_server.requests) == 1


def test_http_server_delay_above_the_cap_fails_at_once(sse_server) -> None:
    body = fixture_bytes("openai_completions/http_429.json").decode()
    sse_server.status(429, body, {"Retry-After": "120"})
    error = failure(make_request(sse_server, max_retry_delay_ms=1000))
    assert len(sse_server.requests) == 1  # not waited for, not retried
    assert str(error) == f"Server requested 120s retry delay (max: 1s). {body}"
    assert error.refusal == RetryRefusal(120.0, 1000)
    assert (error.status, error.body) == (429, body)
    assert error.headers["Retry-After"] == "120"
    assert len(sse_server.requests) == 1


def test_http_server_delay_in_ms_above_the_cap_fails_at_once(sse_server, backoffs) -> None:
    sse_server.status(503, b"")
    sse_server.status(503, b"", {"retry-after-ms": "2500"})
    error = failure(make_request(sse_server, max_retry_delay_ms=2000))
    assert str(error) == "Server requested 3s retry delay (max: 2s)."
    assert error.refusal == RetryRefusal(2.5, 2000)
    assert error.refusal.text == str(error)
    assert len(sse_server.requests) == 2
    assert backoffs == [0]


def test_http_default_cap_is_sixty_seconds(sse_server) -> None:
    sse_server.status(429, "{}", {"Retry-After": "61"})
    error = failure(make_request(sse_server))
    assert str(error) == "Server requested 61s retry delay (max: 60s). {}"
    assert len(sse_server.requests) == 1


def test_http_max_retries_zero_means_no_retry(sse_server, backoffs) -> None:
    body = fixture_bytes("openai_completions/http_429.json").decode()
    sse_server.status(429, body, {"Retry-After": "0"})
    sse_server.sse(b"data: never\n\n")
    error = failure(make_request(sse_server, max_retries=0))
    assert str(error) == f"429 {body}"
    assert len(sse_server.requests) == 1
    assert backoffs == []


@pytest.mark.parametrize(
    "name", ["openai_completions/http_400.json", "openai_responses/http_400.json"]
)
def test_http_400_is_not_retried(sse_server, backoffs, name) -> None:
    body = fixture_bytes(name).decode()
    sse_server.status(400, body)
    sse_server.sse(b"data: never\n\n")
    error = failure(make_request(sse_server))
    assert str(error) == f"400 {body}"
    assert (error.status, error.body) == (400, body)
    assert error.headers["Content-Type"] == "application/json"
    assert len(sse_server.requests) == 1
    assert backoffs == []


def test_http_empty_error_body(sse_server) -> None:
    sse_server.status(404, b"")
    error = failure(make_request(sse_server))
    assert (error.status, error.body) == (404, "")
    assert str(error).startswith("404")


def test_http_x_should_retry_overrides_the_status(sse_server, backoffs) -> None:
    sse_server.status(503, "{}", {"x-should-retry": "false"})
    assert failure(make_request(sse_server)).status == 503
    assert len(sse_server.requests) == 1
    sse_server.status(400, "{}", {"x-should-retry": "true"})
    sse_server.sse(b"data: ok\n\n")
    assert read_events(make_request(sse_server)) == [ServerSentEvent(None, "ok")]
    assert len(sse_server.requests) == 3


def test_http_connection_refused_is_retried_then_fails(backoffs) -> None:
    url = f"http://127.0.0.1:{free_port()}/chat/completions"
    request = HttpRequest(url=url, body=b"{}", headers={})
    with pytest.raises(HttpError) as info:
        open_stream(request)
    assert str(info.value) == f"cannot connect to {url} (connection refused)"
    assert info.value.status is None
    assert backoffs == [0, 1]


def test_http_connection_refused_without_retries(backoffs) -> None:
    port = free_port()
    request = HttpRequest(url=f"http://127.0.0.1:{port}/x", body=b"{}", headers={},
                          max_retries=0)
    with pytest.raises(HttpError) as info:
        open_stream(request)
    assert str(info.value) == f"cannot connect to http://127.0.0.1:{port}/x (connection refused)"
    assert backoffs == []


def test_http_connection_error_names_the_url_without_its_secrets(backoffs) -> None:
    port = free_port()
    key = "sk-live-0123456789abcdef"
    request = HttpRequest(url=f"http://me:{key}@127.0.0.1:{port}/v1/x?key={key}&alt=sse",
                          body=b"{}", headers={}, max_retries=0, secrets=(key,))
    with pytest.raises(HttpError) as info:
        open_stream(request)
    assert str(info.value) == f"cannot connect to http://127.0.0.1:{port}/v1/x (connection refused)"


def test_http_connection_error_names_an_unknown_host(monkeypatch) -> None:
    import socket

    def unknown(*args: object, **kwargs: object) -> None:
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    request = HttpRequest(url="http://no-such-host.invalid/v1/x", body=b"{}", headers={},
                          max_retries=0)
    with pytest.raises(HttpError) as info:
        open_stream(request)
    assert str(info.value) == ("cannot connect to http://no-such-host.invalid/v1/x (unknown host "
                               "'no-such-host.invalid')")


def test_http_connect_timeout_says_how_long_it_waited(monkeypatch) -> None:
    def slow(*args: object, **kwargs: object) -> None:
        raise requests.ConnectTimeout("connect timed out")

    session = requests.Session()
    monkeypatch.setattr(session, "request", slow)
    request = HttpRequest(url="http://10.0.0.1/v1/x", body=b"{}", headers={}, timeout=3.0,
                          max_retries=0)
    with pytest.raises(HttpError) as info:
        HttpClient(RequestsTransport(session)).open(request)
    assert str(info.value) == "cannot connect to http://10.0.0.1/v1/x (no answer within 3 s)"


def test_http_no_answer_times_out(sse_server) -> None:
    gone = sse_server.hang_headers(HOLD)  # the server never answers: only the timeout ends it
    error = failure(make_request(sse_server, timeout=0.3, max_retries=0))
    assert str(error) == "Request timed out."
    assert gone.seen.wait(WAIT_S)


def test_http_silence_mid_stream_times_out(sse_server) -> None:
    gone = sse_server.slow_sse([b"data: one\n\n"], interval_s=WAIT_S)
    request = make_request(sse_server, timeout=0.3)
    events: list[ServerSentEvent] = []
    with pytest.raises(HttpError, match=r"^Request timed out\.$"):
        events.extend(iter_events(open_stream(request), None))
    assert events == [ServerSentEvent(None, "one")]
    assert gone.seen.wait(WAIT_S)
    assert len(sse_server.requests) == 1  # never retried once output was streamed


def test_http_connection_lost_mid_stream(sse_server, backoffs) -> None:
    sse_server.sse(b"data: one\n\ndata: tw", cut=True)
    events: list[ServerSentEvent] = []
    with pytest.raises(HttpError, match=r"^Connection error\.$"):
        events.extend(iter_events(open_stream(make_request(sse_server)), None))
    assert events == [ServerSentEvent(None, "one")]
    assert len(sse_server.requests) == 1
    assert backoffs == []


def test_http_abort_mid_stream_closes_the_connection(sse_server, run_in_thread) -> None:
    gone = sse_server.slow_sse([b'data: {"n":1}\n\n'], interval_s=HOLD)  # never ends by itself
    controller = AbortController()
    request = make_request(sse_server, signal=controller.signal)
    first_event = threading.Event()
    aborted_at: list[float] = []

    def abort_after_first_event() -> None:
        if first_event.wait(WAIT_S):
            aborted_at.append(time.monotonic())
            controller.abort()

    def consume() -> None:
        for event in iter_events(open_stream(request), request.signal):
            events.append(event)
            first_event.set()

    run_in_thread(abort_after_first_event)
    events: list[ServerSentEvent] = []
    with pytest.raises(RequestAborted):
        consume()
    assert events == [ServerSentEvent(None, '{"n":1}')]
    assert gone.seen.wait(WAIT_S)
    assert gone.at is not None
    assert gone.at >= aborted_at[0]  # the client's close came after the abort


def test_http_abort_before_the_request_sends_nothing(sse_server) -> None:
    controller = AbortController()
    controller.abort()
    with pytest.raises(RequestAborted):
        open_stream(make_request(sse_server, signal=controller.signal))
    assert sse_server.requests == []


def test_http_abort_between_open_and_read(sse_server) -> None:
    sse_server.sse(fixture_bytes("openai_completions/text.sse"))
    controller = AbortController()
    request = make_request(sse_server, signal=controller.signal)
    response = open_stream(request)
    controller.abort()
    with pytest.raises(RequestAborted):
        list(iter_events(response, request.signal))


def test_http_abort_during_retry_sleep(sse_server, run_in_thread) -> None:
    controller = AbortController()
    responded = threading.Event()
    sse_server.status(429, "{}", {"Retry-After": "30"})
    sse_server.sse(b"data: never\n\n")
    request = make_request(sse_server, signal=controller.signal,
                           on_response=lambda status, headers: responded.set())

    def abort_when_sleeping() -> None:
        if responded.wait(WAIT_S):
            controller.abort()

    run_in_thread(abort_when_sleeping)
    with pytest.raises(RequestAborted):
        open_stream(request)
    assert len(sse_server.requests) == 1  # the abort, not the 30 s, ended the sleep
    assert sse_server.pending() == 1


def test_http_on_response_sees_every_status_and_headers(sse_server) -> None:
    seen: list[tuple[int, Mapping[str, str]]] = []
    sse_server.status(429, "{}", {"Retry-After": "0", "x-request-id": "req_123"})
    sse_server.sse(b"data: ok\n\n", headers={"openai-processing-ms": "42"})
    request = make_request(sse_server, on_response=lambda s, h: seen.append((s, h)))
    assert read_events(request) == [ServerSentEvent(None, "ok")]
    assert [status for status, _ in seen] == [429, 200]
    assert seen[0][1]["x-request-id"] == "req_123"
    assert seen[1][1]["Content-Type"] == "text/event-stream"
    assert seen[1][1]["openai-processing-ms"] == "42"


def assert_key_hidden(error: HttpError, key: str) -> None:
    for text in (str(error), repr(error), error.body, *map(str, error.args)):
        assert key not in text


def test_http_redacts_the_key_from_the_401_fixture(sse_server) -> None:
    body = fixture_bytes("openai_completions/http_401.json").decode()
    assert KEY in body
    sse_server.status(401, body)
    error = failure(make_request(sse_server))
    assert_key_hidden(error, KEY)
    assert str(error) == "401 " + body.replace(KEY, "***")
    assert "https://platform.openai.com/account/api-keys" in str(error)
    assert KEY not in repr(make_request(sse_server))


def test_http_redacts_given_secrets(sse_server) -> None:
    secret = "sk-mysecret123456"
    sse_server.status(403, json.dumps({"error": {"message": f"key {secret} is disabled"}}))
    error = failure(make_request(sse_server, secrets=(secret,)))
    assert error.status == 403
    assert_key_hidden(error, secret)
    assert "is disabled" in str(error)


def test_http_redacts_secrets_of_any_shape(sse_server) -> None:
    secret = "custom-token-0123456789"
    sse_server.status(401, f"bad token {secret}!", {"Content-Type": "text/plain"})
    error = failure(make_request(sse_server, secrets=(secret,)))
    assert str(error) == "401 bad token ***!"


def test_http_redacts_key_shaped_text_without_secrets(sse_server) -> None:
    sse_server.status(401, "Incorrect API key provided: sk-proj-AbCdEf0123456789xyz.")
    error = failure(make_request(sse_server, secrets=()))
    assert_key_hidden(error, "sk-proj-AbCdEf0123456789xyz")
    assert_key_hidden(error, "AbCdEf0123456789")


def test_http_redacts_the_body_in_the_retry_delay_message(sse_server) -> None:
    secret = "sk-mysecret123456"
    sse_server.status(429, f"slow down, {secret}", {"Retry-After": "600"})
    error = failure(make_request(sse_server, secrets=(secret,)))
    assert str(error).startswith("Server requested 600s retry delay (max: 60s). slow down, ")
    assert_key_hidden(error, secret)


def test_http_redact_function() -> None:
    assert redact("key=sk-abcdef123456 and AIzaSyA1234567890abc", ()) == (
        "key=sk-*** and AIz***"
    )
    assert redact("token abc", ("abc",)) == "token abc"  # too short to be a secret
    assert redact("token abcd", ("abcd",)) == "token ***"


# --- server hints that are no hints ------------------------------------------------------------

BAD_HINTS = ["garbage", "Wed, 99 Foo 2015 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "-5",
             "1e400", "nan", "inf", "1_0", "99999999999", "", "3, 3"]


@pytest.mark.parametrize("header", ["Retry-After", "retry-after-ms"])
@pytest.mark.parametrize("value", BAD_HINTS)
def test_http_a_bad_server_hint_falls_back_to_the_backoff(sse_server, backoffs, header,
                                                         value) -> None:
    sse_server.status(429, '{"error": "slow down"}', {header: value})
    sse_server.sse(b"data: ok\n\n")
    assert read_events(make_request(sse_server)) == [ServerSentEvent(None, "ok")]
    assert backoffs == [0]


@pytest.mark.parametrize("value", BAD_HINTS)
def test_http_a_bad_server_hint_keeps_the_error_text_when_retries_run_out(
    sse_server, backoffs, value
) -> None:
    body = fixture_bytes("openai_completions/http_429.json").decode()
    for _ in range(3):
        sse_server.status(429, body, {"Retry-After": value, "retry-after-ms": value})
    error = failure(make_request(sse_server))
    assert str(error) == f"429 {body}"
    assert (error.status, error.refusal) == (429, None)
    assert backoffs == [0, 1]


def test_http_server_delay_parsing() -> None:
    from _internals import MAX_HINT_S, server_delay

    assert server_delay({"Retry-After": "2"}) == 2.0
    assert server_delay({"retry-after": " 1.5 "}) == 1.5
    assert server_delay({"retry-after-ms": "250"}) == 0.25
    assert server_delay({"retry-after-ms": "nan", "Retry-After": "3"}) == 3.0
    assert server_delay({"Retry-After": str(int(MAX_HINT_S))}) == MAX_HINT_S
    assert server_delay({"Retry-After": str(int(MAX_HINT_S) + 1)}) is None
    assert server_delay({"Retry-After": "Sun, 06 Nov 1994 08:49:37 GMT"}) == 0.0
    assert server_delay({"Retry-After": "Sun, 06 Nov 1994 08:49:37 -0000"}) == 0.0
    date = email.utils.formatdate(time.time() + 100, usegmt=True)
    delay = server_delay({"Retry-After": date})
    assert delay is not None
    assert 95 < delay <= 100
    for value in BAD_HINTS:
        assert server_delay({"Retry-After": value, "retry-after-ms": value}) is None, value


def test_http_backoff_is_capped_by_the_max_retry_delay() -> None:
    from _internals import RetryPolicy

    assert RetryPolicy(2, 1000).capped(8.0) == 1.0
    assert RetryPolicy(2, 1000).capped(0.4) == 0.4
    assert RetryPolicy(2, 0).capped(8.0) == 8.0  # 0: no cap


def test_http_a_bad_hint_through_a_provider_keeps_the_429_text(sse_server, backoffs) -> None:
    body = fixture_bytes("openai_completions/http_429.json").decode()
    for _ in range(3):
        sse_server.status(429, body, {"Retry-After": "1e400"})
    model = Model("gpt-4o-mini", "M", "openai-completions", "openai", f"{sse_server.url}/v1")
    reply = complete(model, Context(None, [UserMessage("hi")]), StreamOptions(api_key=KEY))
    message = json.loads(body)["error"]["message"]
    assert reply.error_message == f"429 {message}"
    assert len(sse_server.requests) == 3


# --- replies of an unexpected shape ------------------------------------------------------------

SHAPES = [
    ("openai-completions", "openai", "/v1", 'data: {"choices": 5}',
     "TypeError: 'int' object is not subscriptable, in '{\"choices\": 5}'"),
    ("openai-completions", "openai", "/v1", 'data: {"choices": [{"index": 0, "delta": 5}]}',
     "AttributeError: 'int' object has no attribute 'get', in "
     "'{\"choices\": [{\"index\": 0, \"delta\": 5}]}'"),
    ("openai-responses", "openai", "/v1",
     'data: {"type": "response.output_text.delta", "delta": 5}', "TypeError: "),
    ("anthropic-messages", "anthropic", "",
     'event: message_delta\ndata: {"type": "message_delta", "delta": 5}', "AttributeError: "),
    ("google-generative-ai", "google", "/v1beta", 'data: {"candidates": 3}', "TypeError: "),
    ("google-vertex", "google-vertex", "/v1", 'data: {"candidates": 3}', "TypeError: "),
]


@pytest.mark.parametrize(("api", "provider", "suffix", "event", "what"), SHAPES,
                         ids=[f"{s[0]}-{i}" for i, s in enumerate(SHAPES)])
def test_http_an_unexpected_shape_is_named_with_an_excerpt(sse_server, caplog, api, provider,
                                                          suffix, event, what) -> None:
    caplog.set_level(logging.DEBUG)
    sse_server.sse(event.encode() + b"\n\n")
    model = Model("m", "M", api, provider, sse_server.url + suffix)
    reply = complete(model, Context(None, [UserMessage("hi")]), StreamOptions(api_key=KEY))
    assert reply.stop_reason == StopReason.ERROR
    assert reply.error_message.startswith(f"unexpected response from {provider} ({api}): {what}")
    assert any("Traceback" in r.getMessage() for r in caplog.records)


def test_http_an_unexpected_shape_excerpt_is_short_and_redacted(sse_server) -> None:
    key = "plain-key-0123456789"
    payload = json.dumps({"echo": key, "choices": 5, "pad": "-" * 500})
    sse_server.sse(f"data: {payload}\n\n".encode())
    model = Model("m", "M", "openai-completions", "openai", f"{sse_server.url}/v1")
    reply = complete(model, Context(None, [UserMessage("hi")]), StreamOptions(api_key=key))
    assert reply.error_message is not None
    assert len(reply.error_message) < 300
    assert reply.error_message.endswith("...'")
    assert '\'{"echo": "***", "choices": 5' in reply.error_message
    assert key not in reply.error_message


# --- a server error that says the request was invalid ------------------------------------------

VALIDATION_FIXTURES = ["openai_completions/http_500_validation.json",
                       "openai_completions/http_500_validation_list.json"]
VALIDATION_GIST = ("invalid request: messages.1.content: Input should be a valid string, got None "
                   "(and 6 more validation errors)")
SERVER_ERRORS = {
    "openai": fixture_bytes("openai_completions/http_500.json").decode(),
    "llama-cpp-python": '{"error":{"message":"llama_decode returned -3","type":'
                        '"internal_server_error","param":null,"code":null}}',
    "response-validation": json.dumps({"error": {"message": (
        "1 validation error:\n  {'type': 'missing', 'loc': ('response', "
        "'CreateChatCompletionResponse', 'choices', 0, 'message', 'refusal'), 'msg': "
        "'Field required', 'input': {'role': 'assistant', 'content': 'Hi'}}\n\n  File "
        "\"/srv/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions"),
        "type": "internal_server_error", "param": None, "code": None}}),
    "validation-words": '{"error":{"message":"2 validation errors: the cache was corrupt",'
                        '"type":"server_error"}}',
    "other-dicts": json.dumps({"error": {"message": "[{'loc': ('worker', 3), 'msg': 'x'}]"}}),
    "not-json": "[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]",
}


@pytest.mark.parametrize("name", VALIDATION_FIXTURES)
def test_http_a_500_validation_error_is_not_retried(sse_server, backoffs, name) -> None:
    body = fixture_bytes(name).decode()
    sse_server.status(500, body)
    sse_server.sse(b"data: never\n\n")
    error = failure(make_request(sse_server))
    assert str(error) == f"500 {body}"
    assert (error.status, error.body, error.invalid) == (500, body, VALIDATION_GIST)
    assert len(sse_server.requests) == 1
    assert backoffs == []


@pytest.mark.parametrize("name", list(SERVER_ERRORS))
def test_http_a_500_server_error_is_still_retried(sse_server, backoffs, name) -> None:
    body = SERVER_ERRORS[name]
    for _ in range(3):
        sse_server.status(500, body)
    error = failure(make_request(sse_server))
    assert (error.status, error.body, error.invalid) == (500, body, None)
    assert len(sse_server.requests) == 3
    assert backoffs == [0, 1]


def test_http_a_500_validation_error_is_retried_when_the_server_says_so(sse_server,
                                                                        backoffs) -> None:
    sse_server.status(500, fixture_bytes(VALIDATION_FIXTURES[0]), {"x-should-retry": "true"})
    sse_server.sse(b"data: ok\n\n")
    assert read_events(make_request(sse_server)) == [ServerSentEvent(None, "ok")]
    assert len(sse_server.requests) == 2


@pytest.mark.parametrize("name", VALIDATION_FIXTURES)
def test_http_a_500_validation_error_ends_the_run_readably(sse_server, backoffs, name) -> None:
    sse_server.status(500, fixture_bytes(name))
    model = Model("qwen2.5-7b-instruct", "Q", "openai-completions", "llama-cpp",
                  f"{sse_server.url}/v1")
    reply = complete(model, Context(None, [UserMessage("hi")]), StreamOptions(api_key=KEY))
    assert reply.stop_reason == StopReason.ERROR
    assert reply.error_message == f"500 {VALIDATION_GIST}"
    assert len(sse_server.requests) == 1


# --- the process's client -------------------------------------------------------------------------


def test_http_the_default_client_is_one_per_process() -> None:
    from _internals import default_client

    assert default_client() is default_client()
    assert isinstance(default_client().transport, Urllib3Transport)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_http_a_forked_child_makes_its_own_default_client() -> None:
    """Sockets never cross a fork: the child's requests do not use the parent's pool."""
    import os

    from _internals import default_client

    inherited = default_client()  # held here: the child's copy of it stays alive too
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether its client is a new one, and leave at once
        try:
            os.write(write, b"new" if default_client() is not inherited else b"same")
        finally:
            os._exit(0)
    os.close(write)
    try:
        answer = os.read(read, 16)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert answer == b"new"
    assert default_client() is inherited
