"""Shared rate limits (`agentcore/_http/_policy.py`), over real HTTP with a real provider.

A 429 naming a delay, seen by one run, pauses the new requests of every run in the process to the
same origin with the same key; the server's request timestamps show who really waited.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import paths
import pytest
import requests
from _internals import HttpClient, HttpError, HttpRequest, PauseKey, RequestsTransport, RetryPolicy
from _internals import _policy as _ratelimit
from sse_server import RecordedRequest, SSEServer

import agentcore as ac

TEXT = (paths.FIXTURES / "openai_completions/text.sse").read_bytes()
SLOW_DOWN = '{"error": {"message": "slow down"}}'
WAIT_S = 5.0  # the timeout on every wait for another thread
KEY = "sk-shared-limit-0123456789abcdef"
OTHER_KEY = "sk-another-limit-fedcba9876543210"
LOGGER = _ratelimit.__name__


@pytest.fixture(autouse=True)
def no_pauses() -> Iterator[None]:
    """Every test starts and ends with no pause in the process-wide registry."""
    _ratelimit.clear_pauses()
    yield
    _ratelimit.clear_pauses()


class LogEvents(logging.Handler):
    """Sets `paused` when a pause is logged and `waiting` when a request starts waiting one."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.paused = threading.Event()
        self.waiting = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text.startswith("rate limited by "):
            self.paused.set()
        elif text.startswith("waiting "):
            self.waiting.set()


@pytest.fixture
def log_events() -> Iterator[LogEvents]:
    """The rate-limit logger's records, as events a test can wait for."""
    logger = logging.getLogger(LOGGER)
    handler, level = LogEvents(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def ask(server: SSEServer, text: str = "hi", key: str = KEY, **options: Any) -> ac.AssistantMessage:
    """One `openai-completions` request to `server`, to the end."""
    model = ac.Model("gpt-4o-mini", "test model", "openai-completions", "openai", server.url)
    context = ac.Context("You are terse.", [ac.UserMessage(text)])
    return ac.complete(model, context, ac.StreamOptions(api_key=key, **options))


def in_thread(start: Callable[[Callable[[], None]], None],
              fn: Callable[[], ac.AssistantMessage]) -> tuple[list[ac.AssistantMessage],
                                                             threading.Event]:
    """Run `fn` on a helper thread; its result lands in the list, then the event is set."""
    result: list[ac.AssistantMessage] = []
    done = threading.Event()

    def run() -> None:
        try:
            result.append(fn())
        finally:
            done.set()

    start(run)
    return result, done


def saying(requests: list[RecordedRequest], text: str) -> RecordedRequest:
    """The one request among `requests` whose body says `text`."""
    [found] = [r for r in requests if text in r.body.decode()]
    return found


def test_rate_limits_a_429_pauses_the_next_request_of_another_run(
        sse_server, run_in_thread, log_events) -> None:
    sse_server.status(429, SLOW_DOWN, {"retry-after-ms": "800"})
    sse_server.sse(TEXT)
    sse_server.sse(TEXT)
    first, first_done = in_thread(run_in_thread, lambda: ask(sse_server, "alpha"))
    assert log_events.paused.wait(WAIT_S)
    started = time.monotonic()
    second = ask(sse_server, "bravo")
    assert first_done.wait(WAIT_S)
    assert (first[0].stop_reason, second.stop_reason) == (ac.StopReason.STOP, ac.StopReason.STOP)
    limited, *later = sse_server.requests
    assert limited.at < started < limited.at + 0.8  # the second run started during the pause
    assert len(later) == 2
    assert saying(later, "bravo").at - limited.at >= 0.8
    assert saying(later, "alpha").at - limited.at >= 0.8  # its own retry, as before


@pytest.mark.parametrize("other", ["key", "origin"])
def test_rate_limits_another_key_or_origin_is_not_paused(sse_server, other) -> None:
    sse_server.status(429, SLOW_DOWN, {"retry-after-ms": "30000"})
    assert ask(sse_server, max_retries=0).error_message == "429 slow down"
    server = SSEServer() if other == "origin" else sse_server
    try:
        server.sse(TEXT)
        started = time.monotonic()
        reply = ask(server, key=OTHER_KEY if other == "key" else KEY)
        elapsed = time.monotonic() - started
    finally:
        if server is not sse_server:
            server.close()
    assert reply.stop_reason == ac.StopReason.STOP
    assert elapsed < WAIT_S
    refused = ask(sse_server, max_retry_delay_ms=1000)  # the same key and origin still are
    assert refused.error_message.startswith("Server requested 30s retry delay (max: 1s).")


def test_rate_limits_abort_during_the_shared_wait_returns_at_once(
        sse_server, run_in_thread, log_events) -> None:
    sse_server.status(429, SLOW_DOWN, {"retry-after-ms": "30000"})
    ask(sse_server, max_retries=0)
    controller = ac.AbortController()
    waiting, done = in_thread(run_in_thread, lambda: ask(sse_server, signal=controller.signal))
    assert log_events.waiting.wait(WAIT_S)
    controller.abort()
    assert done.wait(WAIT_S)  # long before the 30 s pause ends: the abort ended the wait
    assert waiting[0].stop_reason == ac.StopReason.ABORTED
    assert len(sse_server.requests) == 1


def test_rate_limits_a_later_shorter_delay_never_shortens_the_pause(
        sse_server, run_in_thread, caplog) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    sse_server.status(429, SLOW_DOWN, {"retry-after-ms": "50"})  # for the run held below
    sse_server.status(429, SLOW_DOWN, {"retry-after-ms": "600"})
    sse_server.sse(TEXT)
    answered, release = threading.Event(), threading.Event()

    def hold(status: int, headers: object) -> None:
        answered.set()
        release.wait(WAIT_S)

    late, late_done = in_thread(
        run_in_thread, lambda: ask(sse_server, "short", max_retries=0, on_response=hold))
    assert answered.wait(WAIT_S)
    assert ask(sse_server, "long", max_retries=0).error_message == "429 slow down"
    release.set()  # the 50 ms delay is seen after the 600 ms one
    assert late_done.wait(WAIT_S)
    assert late[0].error_message == "429 slow down"
    assert ask(sse_server, "after").stop_reason == ac.StopReason.STOP
    assert saying(sse_server.requests, "after").at - saying(sse_server.requests, "long").at >= 0.6
    assert [r.getMessage() for r in caplog.records] == [
        f"rate limited by {sse_server.url}: pausing requests for 0.6 s"]


def test_rate_limits_log_the_origin_never_the_key(sse_server, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="agentcore")
    sse_server.status(429, SLOW_DOWN, {"retry-after-ms": "1500"})
    sse_server.status(429, SLOW_DOWN, {"retry-after-ms": "0"})
    sse_server.sse(TEXT)
    assert ask(sse_server, max_retries=0).error_message == "429 slow down"
    refused = ask(sse_server, max_retry_delay_ms=1000)
    _ratelimit.clear_pauses()
    assert ask(sse_server).stop_reason == ac.StopReason.STOP  # a delay of 0 pauses no one
    assert f"rate limited by {sse_server.url}: pausing requests for 1.5 s" in caplog.messages
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    key = PauseKey.of(f"{sse_server.url}/chat/completions", (KEY,), {})
    assert repr(key) == f"PauseKey(origin={sse_server.url!r})"
    texts = [refused.error_message or "", repr(key)]
    texts += [f"{r.getMessage()} {r.args!r} {r.__dict__!r}" for r in caplog.records]
    for text in texts:
        assert KEY not in text
        assert KEY[3:15] not in text
        assert digest[:16] not in text


@pytest.mark.parametrize(("hint", "first", "second", "expected"), [
    ({"retry-after-ms": "5000"}, {"max_retries": 0}, {"max_retry_delay_ms": 1000},
     "Server requested 5s retry delay (max: 1s). 429 status code (no body)"),
    ({"Retry-After": "120"}, {}, {},  # the first run refused it: the pause is set all the same
     "Server requested 120s retry delay (max: 60s). 429 status code (no body)"),
])
def test_rate_limits_a_pause_longer_than_the_cap_fails_at_once(sse_server, log_events, hint,
                                                                first, second, expected) -> None:
    sse_server.status(429, SLOW_DOWN, hint)
    sse_server.sse(TEXT)
    ask(sse_server, **first)
    reply = ask(sse_server, **second)
    assert reply.error_message == expected
    assert not log_events.waiting.is_set()  # refused before it began to wait
    assert len(sse_server.requests) == 1


def test_rate_limits_the_refusal_is_the_http_error_of_the_429(sse_server) -> None:
    sse_server.status(429, SLOW_DOWN, {"retry-after-ms": "5000"})
    ask(sse_server, max_retries=0)
    with requests.Session() as session:
        request = HttpRequest(f"{sse_server.url}/chat/completions", b"{}",
                              {"Authorization": f"Bearer {KEY}"}, max_retry_delay_ms=1000,
                              secrets=(KEY,))
        with pytest.raises(HttpError) as info:
            HttpClient(RequestsTransport(session)).open(request)
    error = info.value
    assert str(error) == "Server requested 5s retry delay (max: 1s)."
    assert (error.status, error.body, error.headers) == (429, "", {})
    assert error.refusal is not None
    assert error.refusal.max_ms == 1000
    assert 4.0 < error.refusal.asked_s <= 5.0


@pytest.mark.parametrize(("status", "headers", "pauses"), [
    (429, {"retry-after-ms": "30000"}, True),
    (429, {"Retry-After": "30", "x-should-retry": "false"}, True),
    (503, {"retry-after-ms": "30000"}, True),
    (400, {"retry-after-ms": "30000", "x-should-retry": "true"}, True),
    (400, {"retry-after-ms": "30000"}, False),
    (429, {}, False),
    (429, {"Retry-After": "soon"}, False),
])
def test_rate_limits_which_answers_pause(sse_server, status, headers, pauses) -> None:
    sse_server.status(status, SLOW_DOWN, headers)
    ask(sse_server, max_retries=0)
    assert _ratelimit.paused() is pauses


def test_rate_limits_cost_nothing_without_a_pause(sse_server, monkeypatch) -> None:
    """No key is derived while nothing is paused, and the checks a request makes take no lock
    (held here by the test: a check that took it would never return). What they cost in time
    is benchmarks/rate_limits.py's to measure (under 1 µs each)."""
    def no_key(self: HttpRequest) -> PauseKey:
        raise AssertionError("a request derived its key with nothing paused")

    monkeypatch.setattr(HttpRequest, "pause_key", no_key)
    sse_server.sse(TEXT)
    assert ask(sse_server).stop_reason == ac.StopReason.STOP
    key = PauseKey.of("https://api.example.com/v1", (KEY,), {})
    _ratelimit.pause(PauseKey.of("https://api.example.com/v1", (OTHER_KEY,), {}), 30)
    answers: list[object] = []
    checked = threading.Event()

    def check() -> None:
        answers.append(_ratelimit.paused())
        answers.append(_ratelimit.wait(key, None, RetryPolicy()))  # another key's pause
        checked.set()

    with _ratelimit._REGISTRY._lock:
        checker = threading.Thread(target=check, name="test-checker")
        checker.start()
        returned = checked.wait(WAIT_S)
    checker.join(WAIT_S)
    assert returned, "a check waited for the registry's lock"
    assert answers == [True, None]


def test_rate_limits_pause_key_is_the_origin_and_a_digest_of_the_credentials() -> None:
    url = "https://api.example.com/v1/chat/completions"
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    assert PauseKey.of(url, (KEY,), {"Authorization": "Bearer x"}) == PauseKey(
        "https://api.example.com:443", digest)
    assert PauseKey.of(url, (), {"X-Api-Key": KEY, "Accept": "*/*"}) == PauseKey(
        "https://api.example.com:443", digest)
    assert PauseKey.of(url, (), {"x-goog-api-key": KEY}).digest == digest
    assert PauseKey.of(url, (OTHER_KEY,), {}) != PauseKey.of(url, (KEY,), {})
    assert PauseKey.of(url, (), {}) == PauseKey.of(url + "?x=1", (), {})
    assert [_ratelimit.origin_of(u) for u in [
        "HTTPS://User:pw@API.Example.com/v1?key=abc", "http://127.0.0.1:8080/v1",
        "http://[::1]/v1", "http://localhost:80",
    ]] == ["https://api.example.com:443", "http://127.0.0.1:8080", "http://[::1]:80",
           "http://localhost:80"]


def test_rate_limits_expired_pauses_are_dropped_when_one_is_added() -> None:
    first = PauseKey.of("http://first.test", (KEY,), {})
    second = PauseKey.of("http://second.test", (KEY,), {})
    _ratelimit.pause(first, 0.05)
    assert _ratelimit.paused()
    assert _ratelimit.wait(first, None, RetryPolicy()) is None  # waits the pause out
    assert _ratelimit.remaining(first) == 0.0
    assert not _ratelimit.paused()
    _ratelimit.pause(second, 30)
    assert set(_ratelimit._REGISTRY.pauses) == {second}
    _ratelimit.pause(second, 1)
    assert 29 < _ratelimit.remaining(second) <= 30
