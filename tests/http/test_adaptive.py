"""Adaptive concurrency's rule (`AdaptiveLimits`), driven directly, and its transport.

The rule (API §24, `agentcore/_http/_adaptive.py`): a key starts at `min(N, 8)` slots; an
accepted answer to a request sent with at least half the limit in use adds 1 until the first
overload, then `1/limit` (`1/(4 * limit)` while `floor(limit)` is the level that last
overloaded); an overload answer sets `max(1, 0.9 * min(limit, accepted replies open))`, once
per generation. Every test here is deterministic: tickets are taken and answered in a fixed
order, and the one test with threads waits for each to be queued before going on.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest
from _internals import (
    AdaptiveLimits,
    AdaptiveTransport,
    HttpClient,
    HttpRequest,
    MockTransport,
    Outgoing,
    RequestAborted,
    Response,
    TransportError,
    key_of,
)

from agentcore import AbortController

KEY = "https://api.example.com:443 sk-1"  # any hashable stands for a key
URL = "https://api.example.com/v1/chat/completions"
WAIT_S = 5.0


def take(limits: AdaptiveLimits, count: int) -> list[object]:
    """`count` tickets of KEY, taken at once (there must be free slots)."""
    return [limits.acquire(KEY) for _ in range(count)]


def overloaded_at(accepted: int, max_concurrency: int = 50) -> AdaptiveLimits:
    """Limits whose key overloaded once, with `accepted` replies open, and then emptied.

    Its limit is then `0.9 * accepted`, and the level that overloaded `accepted`.
    """
    limits = AdaptiveLimits(max_concurrency)
    tickets = []
    while len(tickets) < accepted:  # slow start makes room as the answers come
        assert limits.in_flight(KEY) < int(limits.limit(KEY))
        tickets.append(limits.acquire(KEY))
        limits.answered(tickets[-1], 200)
    tickets.append(limits.acquire(KEY))
    limits.answered(tickets[-1], 429)
    for ticket in tickets:
        limits.release(ticket)
    return limits


def grow(limits: AdaptiveLimits, answers: int) -> list[float]:
    """The limit after each of `answers` accepted answers, each sent with the limit full."""
    seen = []
    for _ in range(answers):
        tickets = take(limits, int(limits.limit(KEY)))
        limits.answered(tickets[-1], 200)  # the last one taken: the limit was in full use
        for ticket in tickets:
            limits.release(ticket)
        seen.append(round(limits.limit(KEY), 4))
    return seen


# --- the rule ----------------------------------------------------------------------------------


def test_a_key_starts_at_eight_slots_or_max_concurrency() -> None:
    assert AdaptiveLimits(200).limit(KEY) == 8.0
    assert AdaptiveLimits(3).limit(KEY) == 3.0
    limits = AdaptiveLimits(3)
    take(limits, 3)
    assert limits.in_flight(KEY) == 3


def test_slow_start_adds_one_per_accepted_answer_sent_with_half_the_limit_in_use() -> None:
    limits = AdaptiveLimits(200)
    tickets = take(limits, 8)
    for ticket in tickets:
        limits.answered(ticket, 200)
    # tickets 4 to 8 were sent with at least 4 of the 8 slots in use; 1 to 3 were not
    assert limits.limit(KEY) == 13.0
    tickets += take(limits, 5)  # the 5 new slots, at once
    assert limits.in_flight(KEY) == 13


def test_a_key_that_does_not_use_its_limit_does_not_grow() -> None:
    limits = AdaptiveLimits(200)
    for _ in range(50):  # one request at a time
        [ticket] = take(limits, 1)
        limits.answered(ticket, 200)
        limits.release(ticket)
    assert limits.limit(KEY) == 8.0


def test_an_overload_sets_nine_tenths_of_the_replies_open_once_per_generation() -> None:
    limits = AdaptiveLimits(200)
    tickets = take(limits, 8)
    for ticket in tickets[:3]:  # sent with fewer than 4 in use: no growth
        limits.answered(ticket, 200)
    limits.answered(tickets[7], 429)
    assert limits.limit(KEY) == pytest.approx(2.7)  # 0.9 * min(8, 3 accepted replies open)
    limits.answered(tickets[6], 503)  # sent before that decrease: answered for already
    limits.answered(tickets[5], 529)
    assert limits.limit(KEY) == pytest.approx(2.7)
    for ticket in tickets:
        limits.release(ticket)
    [later] = take(limits, 1)  # sent after the decrease, with no accepted reply open
    limits.answered(later, 429)
    assert limits.limit(KEY) == 1.0  # never below 1


def test_an_overload_with_few_requests_in_flight_takes_the_limit_as_the_level() -> None:
    limits = AdaptiveLimits(200)
    tickets = take(limits, 8)
    for ticket in tickets[:7]:
        limits.answered(ticket, 200)
    assert limits.limit(KEY) == 12.0  # tickets 4 to 7 grew it
    limits.answered(tickets[7], 429)
    assert limits.limit(KEY) == pytest.approx(6.3)  # 0.9 * min(12, 7)


def test_after_an_overload_each_accepted_answer_adds_one_over_the_limit() -> None:
    limits = overloaded_at(accepted=10, max_concurrency=50)
    assert limits.limit(KEY) == 9.0
    # 9 -> 9 + 1/9 ...; from 10 (the level that overloaded) four times slower; from 11 again
    # 1/limit
    assert grow(limits, 3) == [9.1111, 9.2209, 9.3293]
    seen = grow(limits, 60)
    crossing = next(i for i, value in enumerate(seen) if value >= 10)
    assert seen[crossing + 1] - seen[crossing] == pytest.approx(1 / (4 * seen[crossing]),
                                                                abs=1e-3)
    after = next(i for i, value in enumerate(seen) if value >= 11)
    assert seen[after + 1] - seen[after] == pytest.approx(1 / seen[after], abs=1e-3)
    assert after - crossing > 4 * 10 - 5  # about 4 rounds of 10 answers to pass the level


def test_the_limit_never_passes_max_concurrency() -> None:
    limits = AdaptiveLimits(10)
    for _ in range(3):
        tickets = take(limits, int(limits.limit(KEY)))
        for ticket in tickets:
            limits.answered(ticket, 200)
        for ticket in tickets:
            limits.release(ticket)
    assert limits.limit(KEY) == 10.0


@pytest.mark.parametrize("status", [400, 401, 404, 500, 502, 504])
def test_other_answers_change_nothing(status: int) -> None:
    limits = AdaptiveLimits(200)
    tickets = take(limits, 8)
    for ticket in tickets:
        limits.answered(ticket, status)
    assert limits.limit(KEY) == 8.0
    for ticket in tickets:
        limits.release(ticket)
    assert limits.in_flight(KEY) == 0


def test_keys_are_independent() -> None:
    limits = AdaptiveLimits(200)
    tickets = take(limits, 8)
    limits.answered(tickets[0], 429)
    assert limits.limit(KEY) == 1.0
    assert limits.limit("another key") == 8.0
    limits.acquire("another key")
    assert limits.in_flight("another key") == 1


def test_release_frees_a_slot_once() -> None:
    limits = AdaptiveLimits(200)
    first, second = take(limits, 2)
    limits.release(first)
    limits.release(first)
    assert limits.in_flight(KEY) == 1
    limits.release(second)
    assert limits.in_flight(KEY) == 0


@pytest.mark.parametrize("max_concurrency", [0, -1, True, 2.0, "8"])
def test_max_concurrency_must_be_a_positive_int(max_concurrency: object) -> None:
    with pytest.raises(ValueError, match="'max_concurrency' must be an int of at least 1"):
        AdaptiveLimits(max_concurrency)  # type: ignore[arg-type]


# --- waiting -----------------------------------------------------------------------------------


@pytest.fixture
def threads() -> Iterator[list[threading.Thread]]:
    started: list[threading.Thread] = []
    yield started
    for thread in started:
        thread.join(WAIT_S)
        assert not thread.is_alive()


def _wait_for(condition: object) -> None:
    tick = threading.Event()
    for _ in range(int(WAIT_S / 0.005)):
        if condition():  # type: ignore[operator]
            return
        tick.wait(0.005)
    raise AssertionError("the condition never held")


def test_waiting_requests_get_slots_in_order_and_an_abort_leaves_the_queue(
        threads: list[threading.Thread]) -> None:
    limits = AdaptiveLimits(1)
    [held] = take(limits, 1)
    order: list[str] = []
    aborted: list[BaseException] = []
    controller = AbortController()

    def wait(name: str) -> None:
        try:
            ticket = limits.acquire(KEY, controller.signal if name == "b" else None)
        except RequestAborted as exc:
            aborted.append(exc)
            return
        order.append(name)
        limits.release(ticket)

    for number, name in enumerate("abc", 1):
        threads.append(threading.Thread(target=wait, args=(name,)))
        threads[-1].start()
        _wait_for(lambda number=number: limits.waiting(KEY) == number)
    controller.abort()
    threads[1].join(WAIT_S)
    assert len(aborted) == 1
    assert limits.waiting(KEY) == 2
    assert order == []
    limits.release(held)
    for thread in threads:
        thread.join(WAIT_S)
    assert order == ["a", "c"]
    assert limits.in_flight(KEY) == 0


def test_an_aborted_signal_raises_before_taking_a_slot() -> None:
    limits = AdaptiveLimits(8)
    controller = AbortController()
    controller.abort()
    with pytest.raises(RequestAborted):
        limits.acquire(KEY, controller.signal)
    assert limits.in_flight(KEY) == 0


# --- the transport -----------------------------------------------------------------------------


class Inner:
    """A transport answering `status` with a two-chunk body, counting `close()` calls."""

    def __init__(self, status: int = 200) -> None:
        self.mock = MockTransport(lambda request: (self.status, {}, [b"a", b"b"]))
        self.status = status
        self.closed = 0

    def open(self, request: Outgoing, timeouts: tuple[float, float], signal: object
             ) -> Response:
        return self.mock.open(request, timeouts, None)

    def close(self) -> None:
        self.closed += 1


def outgoing(key: str = "sk-1", url: str = URL) -> Outgoing:
    return Outgoing(url, {"Authorization": f"Bearer {key}"}, b"{}")


def test_a_response_holds_its_slot_until_closed_once() -> None:
    limits = AdaptiveLimits(8)
    transport = AdaptiveTransport(Inner(), limits)
    key = key_of(outgoing())
    first = transport.open(outgoing(), (1.0, 1.0), None)
    second = transport.open(outgoing(), (1.0, 1.0), None)
    assert limits.in_flight(key) == 2
    assert b"".join(first.chunks()) == b"ab"
    first.set_read_timeout(1.0)
    first.close()
    first.close()
    assert limits.in_flight(key) == 1
    second.cut()  # cutting is no close: the reading thread closes next
    assert limits.in_flight(key) == 1
    second.close()
    assert limits.in_flight(key) == 0


def test_the_answer_status_adapts_the_limit() -> None:
    inner = Inner(429)
    limits = AdaptiveLimits(8)
    transport = AdaptiveTransport(inner, limits)
    response = transport.open(outgoing(), (1.0, 1.0), None)
    assert response.status == 429
    assert response.read(100) == b"ab"
    response.close()
    assert limits.limit(key_of(outgoing())) == 1.0


def test_a_failed_open_frees_its_slot_and_close_leaves_the_inner_transport_open() -> None:
    def refuse(request: Outgoing) -> tuple[int, dict[str, str], bytes]:
        raise ConnectionRefusedError("refused")

    limits = AdaptiveLimits(8)
    transport = AdaptiveTransport(MockTransport(refuse), limits)
    with pytest.raises(TransportError):
        transport.open(outgoing(), (1.0, 1.0), None)
    assert limits.in_flight(key_of(outgoing())) == 0
    inner = Inner()
    AdaptiveTransport(inner, limits).close()
    assert inner.closed == 0


def test_a_response_dropped_without_close_gives_its_slot_back() -> None:
    limits = AdaptiveLimits(1)
    transport = AdaptiveTransport(Inner(), limits)
    response = transport.open(outgoing(), (1.0, 1.0), None)
    del response
    gc.collect()
    again = transport.open(outgoing(), (1.0, 1.0), None)  # would wait forever for the slot
    again.close()
    assert limits.in_flight(key_of(outgoing())) == 0


def test_retries_through_a_client_take_a_slot_each_and_adapt(backoffs: list[int]) -> None:
    statuses = [429, 503, 200]
    mock = MockTransport(lambda request: (statuses.pop(0), {}, b"data: {}\n\n"))
    limits = AdaptiveLimits(8)
    client = HttpClient(AdaptiveTransport(mock, limits))
    response = client.open(HttpRequest(URL, b"{}", {"Authorization": "Bearer sk-1"}))
    key = key_of(outgoing())
    assert limits.in_flight(key) == 1
    response.close()
    assert limits.in_flight(key) == 0
    assert len(mock.requests) == 3
    assert backoffs == [0, 1]
    # the 429 took it to 1, the 503 (sent after that decrease) kept it there, the 200 added 1/1
    assert limits.limit(key) == 2.0


def test_the_key_is_the_origin_and_the_credentials_without_a_sigv4_signature() -> None:
    assert key_of(outgoing()) == key_of(outgoing(url="https://api.example.com:443/other"))
    assert key_of(outgoing()) != key_of(outgoing(key="sk-2"))
    assert key_of(outgoing()) != key_of(outgoing(url="https://eu.example.com/v1"))
    assert "sk-1" not in repr(key_of(outgoing()))

    def signed(signature: str, access_key: str = "AKIDEXAMPLE") -> Outgoing:
        auth = (f"AWS4-HMAC-SHA256 Credential={access_key}/20260101/us-east-1/bedrock/"
                f"aws4_request, SignedHeaders=host;x-amz-date, Signature={signature}")
        return Outgoing(URL, {"authorization": auth}, b"{}")

    assert key_of(signed("aa11")) == key_of(signed("bb22"))
    assert key_of(signed("aa11")) != key_of(signed("aa11", "AKIDOTHER"))
