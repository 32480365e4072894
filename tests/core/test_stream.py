"""EventStream and AssistantMessageEventStream: ordering, ending, failing, threads, lazy sources."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator

import pytest
from _internals import ABORTED_TEXT

from agentcore import (
    AbortController,
    AbortError,
    AssistantMessage,
    AssistantMessageEventStream,
    DoneEvent,
    ErrorEvent,
    EventStream,
    StartEvent,
    StopReason,
    TextContent,
    TextDeltaEvent,
    TextStartEvent,
)

WAIT_S = 10.0


def _message(text: str = "hi", stop_reason: StopReason = StopReason.STOP) -> AssistantMessage:
    error = "it broke" if stop_reason in (StopReason.ERROR, StopReason.ABORTED) else None
    return AssistantMessage(
        [TextContent(text)], "test-api", "test", "m1", stop_reason=stop_reason,
        error_message=error, timestamp=1,
    )


def _start_thread(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_event_stream_push_end_then_iterate_and_result():
    stream: EventStream[int, str] = EventStream()
    for i in range(3):
        stream.push(i)
    stream.end("finished")

    assert stream.done()
    assert list(stream) == [0, 1, 2]
    assert stream.result() == "finished"


def test_event_stream_result_without_iterating_leaves_events_unread():
    stream: EventStream[str, int] = EventStream()
    stream.push("a")
    stream.push("b")
    stream.end(7)

    assert stream.result(timeout=WAIT_S) == 7
    assert list(stream) == ["a", "b"]


def test_event_stream_end_without_result_gives_none():
    stream: EventStream[int, None] = EventStream()
    stream.end()

    assert list(stream) == []
    assert stream.result(timeout=WAIT_S) is None


def test_event_stream_done_is_false_until_ended():
    stream: EventStream[int, int] = EventStream()
    stream.push(1)
    assert not stream.done()
    stream.end(0)
    assert stream.done()


def test_event_stream_iteration_blocks_until_the_producer_ends():
    stream: EventStream[int, str] = EventStream()
    consumer_started = threading.Event()
    received: list[int] = []

    def produce() -> None:
        assert consumer_started.wait(WAIT_S)
        stream.push(1)
        stream.push(2)
        stream.end("r")

    producer = _start_thread(produce)
    consumer_started.set()
    received.extend(stream)
    producer.join(WAIT_S)

    assert received == [1, 2]
    assert stream.result(timeout=WAIT_S) == "r"


def test_event_stream_result_blocks_until_another_thread_ends_it():
    stream: EventStream[int, str] = EventStream()
    waiting = threading.Event()

    def produce() -> None:
        assert waiting.wait(WAIT_S)
        stream.end("late")

    producer = _start_thread(produce)
    waiting.set()
    assert stream.result(timeout=WAIT_S) == "late"
    producer.join(WAIT_S)


def test_event_stream_fail_reraises_after_the_last_event():
    stream: EventStream[int, str] = EventStream()
    error = ValueError("producer broke")
    stream.push(1)
    stream.push(2)
    stream.fail(error)

    events = iter(stream)
    assert [next(events), next(events)] == [1, 2]
    with pytest.raises(ValueError, match="producer broke") as info:
        next(events)
    assert info.value is error


def test_event_stream_fail_is_raised_by_result():
    stream: EventStream[int, str] = EventStream()
    error = RuntimeError("boom")
    stream.fail(error)

    with pytest.raises(RuntimeError) as info:
        stream.result(timeout=WAIT_S)
    assert info.value is error
    assert stream.done()


def test_event_stream_fail_rejects_a_non_exception():
    stream: EventStream[int, str] = EventStream()
    with pytest.raises(TypeError, match="'exc'"):
        stream.fail("not an exception")  # type: ignore[arg-type]
    assert not stream.done()


def test_event_stream_pushes_after_end_are_ignored():
    stream: EventStream[int, str] = EventStream()
    stream.push(1)
    stream.end("first")
    stream.push(2)
    stream.end("second")
    stream.fail(RuntimeError("too late"))

    assert list(stream) == [1]
    assert stream.result() == "first"


def test_event_stream_end_after_fail_is_ignored():
    stream: EventStream[int, str] = EventStream()
    stream.fail(KeyError("k"))
    stream.push(1)
    stream.end("ignored")

    with pytest.raises(KeyError):
        list(stream)
    with pytest.raises(KeyError):
        stream.result()


def test_event_stream_result_times_out():
    stream: EventStream[int, str] = EventStream()
    stream.push(1)
    with pytest.raises(TimeoutError):
        stream.result(timeout=0.05)
    assert not stream.done()


def test_event_stream_producer_thread_delivers_10000_events_in_order():
    count = 10_000
    stream: EventStream[int, int] = EventStream()

    def produce() -> None:
        for i in range(count):
            stream.push(i)
        stream.end(count)

    producer = _start_thread(produce)
    received = list(stream)
    producer.join(WAIT_S)

    assert received == list(range(count))
    assert stream.result(timeout=WAIT_S) == count


def test_event_stream_many_producers_lose_nothing_and_keep_each_order():
    producers, per_producer = 4, 2_500
    stream: EventStream[tuple[int, int], None] = EventStream()
    go = threading.Barrier(producers)
    finished = threading.Semaphore(0)

    def produce(p: int) -> None:
        go.wait(WAIT_S)
        for i in range(per_producer):
            stream.push((p, i))
        finished.release()

    threads = [_start_thread(produce, p) for p in range(producers)]

    def close_when_all_done() -> None:
        for _ in range(producers):
            assert finished.acquire(timeout=WAIT_S)
        stream.end()

    closer = _start_thread(close_when_all_done)
    received = list(stream)
    for thread in [*threads, closer]:
        thread.join(WAIT_S)

    assert len(received) == producers * per_producer
    for p in range(producers):
        assert [i for q, i in received if q == p] == list(range(per_producer))


def test_event_stream_push_never_blocks_without_a_consumer():
    stream: EventStream[int, None] = EventStream()
    pushed_all = threading.Event()

    def produce() -> None:
        for i in range(100_000):
            stream.push(i)
        stream.end()
        pushed_all.set()

    producer = _start_thread(produce)
    assert pushed_all.wait(WAIT_S)
    producer.join(WAIT_S)
    assert sum(1 for _ in stream) == 100_000


def test_assistant_message_event_stream_takes_no_arguments():
    with pytest.raises(TypeError):
        AssistantMessageEventStream(1)  # type: ignore[call-arg]


def test_assistant_message_event_stream_ends_itself_at_done():
    final = _message("hello")
    partial = AssistantMessage([], "test-api", "test", "m1", timestamp=1)
    events = [
        StartEvent(partial),
        TextStartEvent(0, partial),
        TextDeltaEvent(0, "hello", final),
        DoneEvent(StopReason.STOP, final),
    ]
    stream = AssistantMessageEventStream()
    for event in events:
        stream.push(event)

    assert stream.done()
    assert stream.result(timeout=WAIT_S) == final
    stream.push(TextDeltaEvent(0, "ignored", final))
    stream.end(_message("ignored"))
    assert list(stream) == events
    assert stream.result() == final


@pytest.mark.parametrize("reason", [StopReason.ERROR, StopReason.ABORTED])
def test_assistant_message_event_stream_ends_itself_at_error(reason):
    failed = _message("partial", stop_reason=reason)
    stream = AssistantMessageEventStream()
    stream.push(ErrorEvent(reason, failed))
    stream.push(DoneEvent(StopReason.STOP, _message("ignored")))

    assert stream.done()
    assert list(stream) == [ErrorEvent(reason, failed)]
    assert stream.result(timeout=WAIT_S) == failed


def test_assistant_message_event_stream_consumer_sees_terminal_event_from_a_thread():
    final = _message("done")
    stream = AssistantMessageEventStream()
    consumer_started = threading.Event()

    def produce() -> None:
        assert consumer_started.wait(WAIT_S)
        stream.push(StartEvent(AssistantMessage([], "test-api", "test", "m1", timestamp=1)))
        stream.push(DoneEvent(StopReason.STOP, final))

    producer = _start_thread(produce)
    consumer_started.set()
    types = [event.type for event in stream]
    producer.join(WAIT_S)

    assert types == ["start", "done"]
    assert stream.result(timeout=WAIT_S) == final


def test_event_stream_from_iterator_runs_lazily_on_the_consumer_thread():
    log: list[tuple[str, int]] = []
    threads: set[int] = set()

    def events() -> Iterator[int]:
        for i in range(3):
            threads.add(threading.get_ident())
            log.append(("produced", i))
            yield i

    stream: EventStream[int, None] = EventStream.from_iterator(events())
    assert log == []

    for event in stream:
        log.append(("consumed", event))

    assert log == [
        ("produced", 0), ("consumed", 0),
        ("produced", 1), ("consumed", 1),
        ("produced", 2), ("consumed", 2),
    ]
    assert threads == {threading.get_ident()}


def test_event_stream_from_iterator_on_a_worker_thread_runs_there():
    producer_threads: set[int] = set()
    consumer_thread: list[int] = []

    def events() -> Iterator[int]:
        producer_threads.add(threading.get_ident())
        yield 1

    stream: EventStream[int, None] = EventStream.from_iterator(events())

    def consume() -> None:
        consumer_thread.append(threading.get_ident())
        assert list(stream) == [1]

    worker = _start_thread(consume)
    worker.join(WAIT_S)
    assert not worker.is_alive()
    assert producer_threads == set(consumer_thread)
    assert consumer_thread != [threading.get_ident()]


def test_event_stream_from_iterator_generator_return_value_is_the_result():
    def events() -> Iterator[str]:
        yield "a"
        yield "b"
        return "the result"

    stream: EventStream[str, str] = EventStream.from_iterator(events())
    assert list(stream) == ["a", "b"]
    assert stream.result(timeout=WAIT_S) == "the result"


def test_event_stream_from_iterator_result_without_iterating_buffers_the_events():
    def events() -> Iterator[int]:
        yield from range(5)
        return "end"

    stream: EventStream[int, str] = EventStream.from_iterator(events())
    assert stream.result(timeout=WAIT_S) == "end"
    assert list(stream) == [0, 1, 2, 3, 4]


def test_event_stream_from_iterator_plain_iterable_ends_with_none():
    stream: EventStream[int, None] = EventStream.from_iterator([1, 2, 3])
    assert list(stream) == [1, 2, 3]
    assert stream.result(timeout=WAIT_S) is None


def test_event_stream_from_iterator_generator_exception_fails_the_stream():
    error = LookupError("source broke")

    def events() -> Iterator[int]:
        yield 1
        raise error

    stream: EventStream[int, None] = EventStream.from_iterator(events())
    received = iter(stream)
    assert next(received) == 1
    with pytest.raises(LookupError) as info:
        next(received)
    assert info.value is error
    with pytest.raises(LookupError):
        stream.result(timeout=WAIT_S)


def test_event_stream_from_iterator_exception_is_raised_by_result():
    def events() -> Iterator[int]:
        yield 1
        raise ValueError("late failure")

    stream: EventStream[int, None] = EventStream.from_iterator(events())
    with pytest.raises(ValueError, match="late failure"):
        stream.result(timeout=WAIT_S)


def test_assistant_message_event_stream_from_iterator_stops_at_terminal_and_closes_source():
    final = _message("ok")
    closed = threading.Event()
    after_terminal: list[str] = []

    def events() -> Iterator[object]:
        try:
            yield StartEvent(AssistantMessage([], "test-api", "test", "m1", timestamp=1))
            yield DoneEvent(StopReason.STOP, final)
            after_terminal.append("resumed")
            yield TextDeltaEvent(0, "never", final)
        finally:
            closed.set()

    stream = AssistantMessageEventStream.from_iterator(events())
    assert [event.type for event in stream] == ["start", "done"]
    assert stream.result(timeout=WAIT_S) == final
    assert closed.is_set()
    assert after_terminal == []


# --- the two kinds of stream ------------------------------------------------------------------


def test_event_stream_both_kinds_are_event_streams():
    pushed = AssistantMessageEventStream()
    pulled = AssistantMessageEventStream.from_iterator(iter([]))

    assert type(pushed) is AssistantMessageEventStream
    assert type(pulled) is AssistantMessageEventStream
    assert isinstance(pulled, EventStream)
    assert isinstance(EventStream.from_iterator([1]), EventStream)


def test_event_stream_from_iterator_accepts_events_pushed_by_another_thread():
    release = threading.Event()

    def events() -> Iterator[int]:
        yield 1
        assert release.wait(WAIT_S)
        yield 3

    stream: EventStream[int, None] = EventStream.from_iterator(events())
    received = iter(stream)
    assert next(received) == 1
    pusher = _start_thread(stream.push, 2)
    pusher.join(WAIT_S)
    release.set()

    assert list(received) == [2, 3]


def test_event_stream_from_iterator_end_from_outside_closes_an_idle_source():
    closed = threading.Event()

    def events() -> Iterator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed.set()

    stream: EventStream[int, str] = EventStream.from_iterator(events())
    received = iter(stream)
    assert next(received) == 1
    stream.end("stopped")

    assert closed.is_set()
    assert list(received) == []
    assert stream.result(timeout=WAIT_S) == "stopped"


def test_event_stream_from_iterator_result_times_out_while_another_thread_pulls():
    pulling, release = threading.Event(), threading.Event()

    def events() -> Iterator[int]:
        pulling.set()
        assert release.wait(WAIT_S)
        yield 1
        return "late"

    stream: EventStream[int, str] = EventStream.from_iterator(events())
    received: list[int] = []
    consumer = _start_thread(lambda: received.extend(stream))
    assert pulling.wait(WAIT_S)
    with pytest.raises(TimeoutError):
        stream.result(timeout=0.01)
    release.set()
    consumer.join(WAIT_S)

    assert not consumer.is_alive()
    assert received == [1]
    assert stream.result(timeout=WAIT_S) == "late"


def test_assistant_message_event_stream_racing_terminal_pushes_keep_the_first():
    finals = [_message(f"reply {i}") for i in range(8)]
    stream = AssistantMessageEventStream()
    go = threading.Barrier(len(finals))

    def produce(message: AssistantMessage) -> None:
        go.wait(WAIT_S)
        stream.push(DoneEvent(StopReason.STOP, message))

    threads = [_start_thread(produce, message) for message in finals]
    for thread in threads:
        thread.join(WAIT_S)

    events = list(stream)
    assert len(events) == 1
    assert stream.result(timeout=WAIT_S) == events[0].message


# --- iter_until -------------------------------------------------------------------------------


def test_event_stream_iter_until_yields_every_event_and_leaves_the_result():
    stream: EventStream[int, str] = EventStream()
    for i in range(3):
        stream.push(i)
    stream.end("r")

    assert list(stream.iter_until(AbortController().signal, 0.0)) == [0, 1, 2]
    assert stream.result(timeout=WAIT_S) == "r"


def test_event_stream_iter_until_reraises_the_producer_failure():
    error = KeyError("gone")
    stream: EventStream[int, None] = EventStream()
    stream.push(1)
    stream.fail(error)

    events = stream.iter_until(AbortController().signal, WAIT_S)
    assert next(events) == 1
    with pytest.raises(KeyError) as info:
        next(events)
    assert info.value is error


def test_event_stream_iter_until_gives_up_on_a_producer_that_ignores_the_abort():
    controller = AbortController()
    stream: EventStream[int, None] = EventStream()
    stream.push(1)
    events = stream.iter_until(controller.signal, 0.01)
    assert next(events) == 1
    controller.abort()

    with pytest.raises(AbortError, match=f"^{ABORTED_TEXT}$"):
        next(events)
    assert not stream.done()


def test_event_stream_iter_until_is_woken_by_an_abort_from_another_thread():
    controller = AbortController()
    stream: EventStream[int, None] = EventStream()
    stream.push(1)
    first_read = threading.Event()

    def abort_after_first_event() -> None:
        assert first_read.wait(WAIT_S)
        controller.abort()

    aborter = _start_thread(abort_after_first_event)
    events = stream.iter_until(controller.signal, 0.0)
    assert next(events) == 1
    first_read.set()
    with pytest.raises(AbortError):
        next(events)  # blocks with no timeout until the abort wakes it
    aborter.join(WAIT_S)
    assert not aborter.is_alive()


@pytest.mark.parametrize("grace_s", [WAIT_S, math.inf])
def test_event_stream_iter_until_takes_the_events_of_a_producer_ending_within_the_grace(grace_s):
    controller = AbortController()
    stream: EventStream[str, str] = EventStream()
    stream.push("before")

    def finish_on_abort() -> None:
        assert controller.signal.wait(WAIT_S)
        stream.push("after")
        stream.end("ended")

    producer = _start_thread(finish_on_abort)
    received = []
    for event in stream.iter_until(controller.signal, grace_s):
        received.append(event)
        controller.abort()
    producer.join(WAIT_S)

    assert received == ["before", "after"]
    assert stream.result(timeout=WAIT_S) == "ended"


def test_event_stream_iter_until_drains_an_ended_stream_despite_an_earlier_abort():
    controller = AbortController()
    controller.abort()
    stream: EventStream[int, str] = EventStream()
    stream.push(1)
    stream.push(2)
    stream.end("r")

    assert list(stream.iter_until(controller.signal, 0.0)) == [1, 2]


def test_event_stream_iter_until_gives_up_on_a_source_that_ignores_the_abort_and_closes_it():
    controller = AbortController()
    closed = threading.Event()

    def chatty() -> Iterator[int]:
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.set()

    stream: EventStream[int, None] = EventStream.from_iterator(chatty())
    events = stream.iter_until(controller.signal, 0.0)
    assert next(events) == 0
    controller.abort()

    with pytest.raises(AbortError):
        next(events)
    assert closed.is_set()


def test_event_stream_iter_until_closes_the_source_when_the_consumer_stops_early():
    closed = threading.Event()

    def events() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            closed.set()

    stream: EventStream[int, None] = EventStream.from_iterator(events())
    received = stream.iter_until(AbortController().signal, WAIT_S)
    assert next(received) == 0
    assert not closed.is_set()
    received.close()

    assert closed.is_set()


def test_event_stream_iter_until_closes_the_source_when_it_raises():
    closed = threading.Event()

    class Source:
        def __iter__(self) -> Source:
            return self

        def __next__(self) -> int:
            raise OSError("connection reset")

        def close(self) -> None:
            closed.set()

    stream: EventStream[int, None] = EventStream.from_iterator(Source())
    with pytest.raises(OSError, match="connection reset"):
        list(stream.iter_until(AbortController().signal, WAIT_S))
    assert closed.is_set()


def test_event_stream_iteration_after_iter_until_skips_its_leftover_wake_up():
    controller = AbortController()
    stream: EventStream[int, str] = EventStream()
    stream.push(1)
    events = stream.iter_until(controller.signal, WAIT_S)
    assert next(events) == 1
    controller.abort()  # wakes the stream, but this consumer leaves before reading again
    events.close()
    consumer_started = threading.Event()

    def produce() -> None:
        assert consumer_started.wait(WAIT_S)
        stream.push(2)
        stream.end("r")

    producer = _start_thread(produce)
    consumer_started.set()
    assert list(stream) == [2]
    producer.join(WAIT_S)


@pytest.mark.parametrize(
    ("signal", "grace_s", "error"),
    [
        ("not a signal", 1.0, TypeError),
        (None, True, TypeError),
        (None, "1", TypeError),
        (None, -0.5, ValueError),
        (None, float("nan"), ValueError),
    ],
)
def test_event_stream_iter_until_rejects_bad_arguments_at_once(signal, grace_s, error):
    stream: EventStream[int, None] = EventStream()
    with pytest.raises(error, match="iter_until"):
        stream.iter_until(signal or AbortController().signal, grace_s)


# --- the pushed feed's parking (issue 26): a waiter parks on a lock of its own -------------------


@pytest.fixture
def parked(monkeypatch: pytest.MonkeyPatch) -> threading.Semaphore:
    """Released once each time a thread parks to wait on a pushed stream."""
    from _internals import QueueFeed

    parks = threading.Semaphore(0)
    park = QueueFeed._park

    def counting(self: QueueFeed[object]) -> threading.Lock:
        waiter = park(self)
        parks.release()
        return waiter

    monkeypatch.setattr(QueueFeed, "_park", counting)
    return parks


def test_event_stream_result_waits_past_pushes_that_do_not_end_it(
        parked: threading.Semaphore) -> None:
    stream: EventStream[int, str] = EventStream()
    got: list[str] = []
    waiter = _start_thread(lambda: got.append(stream.result(timeout=WAIT_S)))
    for i in range(3):
        assert parked.acquire(timeout=WAIT_S)  # parked: this push wakes it, it parks again
        stream.push(i)
    assert parked.acquire(timeout=WAIT_S)
    stream.end("done")
    waiter.join(WAIT_S)
    assert got == ["done"]
    assert list(stream) == [0, 1, 2]


def test_event_stream_a_push_wakes_the_consumer_and_a_result_waiter_alike(
        parked: threading.Semaphore) -> None:
    stream: EventStream[int, str] = EventStream()
    seen: list[int] = []
    results: list[str] = []
    consumer = _start_thread(lambda: seen.extend(stream))
    waiter = _start_thread(lambda: results.append(stream.result(timeout=WAIT_S)))
    assert parked.acquire(timeout=WAIT_S)
    assert parked.acquire(timeout=WAIT_S)  # both wait, each on its own lock
    stream.push(1)
    stream.push(2)
    stream.end("end")
    consumer.join(WAIT_S)
    waiter.join(WAIT_S)
    assert seen == [1, 2]
    assert results == ["end"]


def test_event_stream_a_timed_out_wait_leaves_no_waiter_behind() -> None:
    stream: EventStream[int, str] = EventStream()
    with pytest.raises(TimeoutError):
        stream.result(timeout=0.01)
    assert stream._feed._waiters == []  # type: ignore[attr-defined]
    stream.push(1)
    stream.end("ok")
    assert list(stream) == [1]
    assert stream.result(timeout=0) == "ok"


@pytest.mark.parametrize("pulled", [False, True])
def test_assistant_message_event_stream_ends_at_a_subclass_of_done(pulled: bool) -> None:
    class LateDone(DoneEvent):
        pass

    final = _message("bye")
    events = [StartEvent(_message("")), LateDone(StopReason.STOP, final), StartEvent(final)]
    if pulled:
        stream = AssistantMessageEventStream.from_iterator(iter(events))
    else:
        stream = AssistantMessageEventStream()
        for event in events:
            stream.push(event)
    assert list(stream) == events[:2]  # the stream ended at the subclass's event
    assert stream.result(timeout=0) == final
