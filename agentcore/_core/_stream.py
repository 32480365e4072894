"""Thread-safe event streams with a final result.

A producer `push`es events and finishes with `end(result)` or `fail(exc)`; one consumer
iterates the events and/or calls `result()`. Pushing never blocks. A stream may instead be
fed lazily by an iterator (`from_iterator`), which then runs on the consumer's thread: no extra
thread, and a slow consumer never lets events pile up.

`EventStream` is a facade over one of two feeds behind one small interface (`_Feed`):
`_QueueFeed` queues pushed events, `_PullFeed` pulls them from a source when asked.
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    Generic,
    Literal,
    Protocol,
    TypeVar,
    cast,
    final,
)

from ._abort import AbortSignal
from ._errors import ABORTED_TEXT, AbortError
from ._events import AssistantMessageEvent, DoneEvent, ErrorEvent
from ._messages import AssistantMessage

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["AssistantMessageEventStream", "EventStream"]

E = TypeVar("E")
R = TypeVar("R")

_Ends = Callable[[Any], Any]
"""Given an event, the result it ends its stream with, or None when it does not end it."""
_Ending = tuple[tuple[type, ...], _Ends]
"""How a stream ends itself: the classes of the events that may end it, and `_Ends` for those.

A feed gives `_Ends` only the events of those classes: every other event costs one isinstance."""


def _never(_: object) -> None:
    """The `_Ends` of a stream that never ends itself (never called: no class may end it)."""


_NEVER_ENDS: _Ending = ((), _never)


class _Mark(enum.Enum):
    """What a feed's `get` returns instead of an event."""

    END = enum.auto()  # the stream has ended and every event has been read
    NOTHING = enum.auto()  # woken by `wake()`, or `timeout` passed, before any event came


_END: Final = _Mark.END
_NOTHING: Final = _Mark.NOTHING


class _Feed(Protocol[E]):
    """Where a stream's events come from; holds the stream's state and does its blocking."""

    @property
    def done(self) -> bool: ...

    @property
    def exc(self) -> BaseException | None: ...

    def push(self, event: E) -> None: ...

    def finish(self, result: Any, exc: BaseException | None) -> None: ...

    def get(self, timeout: float | None) -> E | _Mark: ...

    def result(self, timeout: float | None) -> Any: ...

    def wake(self) -> None: ...

    def close(self) -> None: ...


@final
class _QueueFeed(Generic[E]):
    """Events pushed by any thread, queued until the consumer reads them.

    All state is written under `_lock`, a plain lock held only for a few operations. A thread
    that must wait (the consumer in `get`, anyone in `result`) parks on a lock of its own,
    listed in `_waiters`, which the next `push`, end or `wake` releases: a push nobody waits
    for costs no notification, and a stream costs no `threading.Condition`. The consumer reads
    `done` and `_items` without the lock: it alone removes items, and `done`, once true, never
    changes again, so reading `done` before `_items` never misses an event.
    """

    __slots__ = ("_end_types", "_ends", "_items", "_lock", "_result", "_waiters", "_woken", "done",
                 "exc")

    def __init__(self, ending: _Ending | None) -> None:
        self._lock = threading.Lock()
        self._items: deque[E] = deque()
        self._end_types, self._ends = ending or _NEVER_ENDS
        self._result: Any = None
        self._waiters: list[threading.Lock] = []  # each held, released to wake its owner
        self._woken = False
        self.done = False
        self.exc: BaseException | None = None

    def push(self, event: E) -> None:
        with self._lock:
            if self.done:
                return
            self._items.append(event)
            if isinstance(event, self._end_types):
                result = self._ends(event)
                if result is not None:
                    self._result, self.done = result, True
            if not self._waiters:
                return
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.release()

    def finish(self, result: Any, exc: BaseException | None) -> None:
        with self._lock:
            if self.done:
                return
            self._result, self.exc, self.done = result, exc, True
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.release()

    def get(self, timeout: float | None) -> E | _Mark:
        done, items = self.done, self._items  # `done` first: see the class docstring
        if items:
            return items.popleft()
        if done:
            return _END
        while True:
            with self._lock:
                if items:
                    return items.popleft()
                if self.done:
                    return _END
                if self._woken:
                    self._woken = False  # one `_NOTHING` per `wake()`
                    return _NOTHING
                waiter = self._park()
            if not self._wait(waiter, timeout) and not items and not self.done:
                return _NOTHING

    def result(self, timeout: float | None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if self.done:
                    break
                waiter = self._park()
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._wait(waiter, left) and not self.done:
                raise TimeoutError(f"stream did not end within {timeout} s")
        if self.exc is not None:
            raise self.exc
        return self._result

    def wake(self) -> None:
        # A flag, not only a release: the consumer may be about to wait, not waiting yet.
        with self._lock:
            self._woken = True
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.release()

    def close(self) -> None:
        """Nothing to release: the producer owns whatever feeds the queue."""

    def _park(self) -> threading.Lock:
        """A new held lock, listed to be released by the next change; the caller holds `_lock`."""
        waiter = threading.Lock()
        waiter.acquire()
        self._waiters.append(waiter)
        return waiter

    def _wait(self, waiter: threading.Lock, timeout: float | None) -> bool:
        """Block until `waiter` is released or `timeout` passes; whether it was released."""
        if waiter.acquire(True, -1 if timeout is None else min(timeout, threading.TIMEOUT_MAX)):
            return True
        with self._lock:
            if waiter in self._waiters:  # nobody released it: take it off the list
                self._waiters.remove(waiter)
                return False
        return True  # released between the timeout and the lock: a change did come


@final
class _PullFeed(Generic[E]):
    """Events pulled from a source iterator by whichever thread asks for the next one.

    Two locks with separate jobs. `_pull_lock` serialises every use of `_source` (pulling,
    closing) and is the only lock on the hot path. `_lock` guards the state (`_items`,
    `_result`, `done`, `exc`) and is held only briefly, so `push`, `end` and `fail` from other
    threads never wait for a pull in progress. The hot path reads `_items` and `done` without
    `_lock`: a stale read only defers a pushed event, or the end, to the next `get`.
    """

    __slots__ = ("_end_types", "_ends", "_items", "_lock", "_pull_lock", "_result", "_source",
                 "done", "exc")

    def __init__(self, source: Iterator[E], ending: _Ending | None) -> None:
        self._source = source
        self._end_types, self._ends = ending or _NEVER_ENDS
        self._pull_lock = threading.Lock()
        self._lock = threading.Lock()
        self._items: deque[E] = deque()  # pulled ahead by `result()` or pushed by a thread
        self._result: Any = None
        self.done = False
        self.exc: BaseException | None = None

    def push(self, event: E) -> None:
        with self._lock:
            if self.done:
                return
            self._items.append(event)
            if not isinstance(event, self._end_types):
                return
            result = self._ends(event)
            if result is None:
                return
            self._result, self.done = result, True
        self._close_if_idle()

    def finish(self, result: Any, exc: BaseException | None) -> None:
        if self._record_end(result, exc):
            self._close_if_idle()

    def get(self, timeout: float | None) -> E | _Mark:
        """The next event, handed straight from the source to the consumer: no queue, one lock.

        `timeout` is ignored: a source blocked in `next` can only be interrupted by itself.
        """
        with self._pull_lock:
            if not self._items and not self.done:
                event: E | Literal[_Mark.END]
                try:  # `_pull`, its common case inline: this runs for every streamed event
                    pulled = next(self._source)
                except BaseException as exc:
                    event = self._pull_failed(exc)
                else:
                    if not self.done and not isinstance(pulled, self._end_types):
                        return pulled
                    event = self._pulled_last(pulled)
                if event is not _END:
                    return event
            with self._lock:
                return self._items.popleft() if self._items else _END

    def result(self, timeout: float | None) -> Any:
        """Pull the source to its end, buffering events past unread ones; return the result.

        `timeout` bounds the wait for another thread's pull, not a source blocked in `next`.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done:
            wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._pull_lock.acquire(timeout=wait):
                raise TimeoutError(f"stream did not end within {timeout} s")
            try:
                event = self._pull()
                if event is not _END:
                    with self._lock:
                        self._items.append(event)
            finally:
                self._pull_lock.release()
        if self.exc is not None:
            raise self.exc
        return self._result

    def wake(self) -> None:
        """Nothing to wake: the consumer only ever blocks inside the source itself."""

    def close(self) -> None:
        with self._pull_lock:
            self._close_source()

    def _pull(self) -> E | Literal[_Mark.END]:
        """One event from the source, or `_END` once the stream has ended; holds `_pull_lock`."""
        try:
            event = next(self._source)
        except BaseException as exc:
            return self._pull_failed(exc)
        if self.done or isinstance(event, self._end_types):
            return self._pulled_last(event)
        return event

    def _pull_failed(self, exc: BaseException) -> Literal[_Mark.END]:
        """End the stream with what the source's `next` raised (its return value or error)."""
        if isinstance(exc, StopIteration):
            self._record_end(exc.value, None)
        else:  # KeyboardInterrupt too: raised to the consumer after all
            self._record_end(None, exc)
        self._close_source()
        return _END

    def _pulled_last(self, event: E) -> E | Literal[_Mark.END]:
        """`event`, pulled after the stream ended or of a class that may end it; `_END` if late."""
        if self.done:  # ended meanwhile by another thread: a late event, ignored
            self._close_source()
            return _END
        result = self._ends(event)
        if result is not None:
            self._record_end(result, None)
            self._close_source()
        return event

    def _record_end(self, result: Any, exc: BaseException | None) -> bool:
        with self._lock:
            if self.done:
                return False
            self._result, self.exc, self.done = result, exc, True
            return True

    def _close_if_idle(self) -> None:
        """Close the source now unless a pull is in progress (that pull then closes it)."""
        if self._pull_lock.acquire(blocking=False):
            try:
                self._close_source()
            finally:
                self._pull_lock.release()

    def _close_source(self) -> None:
        """Close the source (say, the HTTP response) once; the caller holds `_pull_lock`."""
        source, self._source = self._source, iter(())
        close = getattr(source, "close", None)
        if close is not None:
            close()


class EventStream(Generic[E, R]):
    """A one-consumer, many-producer stream of events ending in a result.

    Thread-safety: `push`, `end` and `fail` may be called from any thread; iteration and
    `result` block the consumer's thread. Once ended, further pushes are ignored.
    """

    _ending: ClassVar[_Ending | None] = None
    """For a stream that ends itself at some event: which events may, and the result they give."""

    def __init__(self, *, on_close: Callable[[], None] | None = None) -> None:
        """`on_close()` runs once, when the consumer calls `close()` (say, to abort a run)."""
        if on_close is not None and not callable(on_close):
            raise TypeError(f"EventStream: 'on_close' must be callable or None, got {on_close!r}")
        self._feed: _Feed[E] = _QueueFeed(type(self)._ending)
        self._on_close = on_close

    @classmethod
    def from_iterator(cls, events: Iterable[E]) -> Self:
        """A stream whose events are produced by `events`, pulled on the consumer's thread.

        For a generator, its `return` value becomes the result; an exception it raises fails
        the stream. The source is closed once the stream ends.
        """
        stream = cls()  # cls() runs a subclass's own __init__; its unused queue costs ~1 µs
        stream._feed = _PullFeed(iter(events), cls._ending)
        return stream

    def push(self, event: E) -> None:
        """Add an event; never blocks. Ignored once the stream has ended."""
        self._feed.push(event)

    def end(self, result: R | None = None) -> None:
        """Finish the stream with `result`; later calls are ignored."""
        self._feed.finish(result, None)

    def fail(self, exc: BaseException) -> None:
        """Finish the stream with an error, raised to the consumer after the last event."""
        if not isinstance(exc, BaseException):
            raise TypeError(f"fail: 'exc' must be an exception, got {exc!r}")
        self._feed.finish(None, exc)

    def done(self) -> bool:
        """Whether the stream has ended (events may still be waiting to be read)."""
        return self._feed.done

    def __iter__(self) -> Iterator[E]:
        feed = self._feed
        get = feed.get
        while True:
            item = get(None)
            if item is _END:
                if feed.exc is not None:
                    raise feed.exc
                return
            if item is not _NOTHING:  # a `wake()` left over from `iter_until`
                yield item

    def close(self) -> None:
        """Tell the producer that the consumer is done; later calls do nothing.

        Runs the `on_close` given to the constructor (for `agent_loop`'s stream, aborting the
        run) and closes the source of a stream made by `from_iterator`. Events the producer
        pushes until it ends can still be read, and `result()` still waits for that end.
        """
        on_close, self._on_close = self._on_close, None
        try:
            if on_close is not None:
                on_close()
        finally:
            self._feed.close()

    def result(self, timeout: float | None = None) -> R:
        """Block until the stream ends and return its result (events are left unread).

        Raises `TimeoutError` after `timeout` seconds, or the producer's exception.
        """
        return cast(R, self._feed.result(timeout))

    def iter_until(self, signal: AbortSignal, grace_s: float) -> Iterator[E]:
        """Iterate the events, but give up `grace_s` seconds after `signal` aborts.

        Once `signal` is aborted, the producer has at most `grace_s` more seconds to end the
        stream; events it sends meanwhile are still yielded. A pulled stream (`from_iterator`)
        cannot be interrupted while its source blocks, so such a source must watch the signal
        itself, as the providers do; the deadline is then checked between its events.

        On leaving, normally, by an exception, or because the consumer stopped early, a pulled
        stream's source is closed, so a reply cut short never keeps its HTTP connection open.

        Args:
            signal: The signal to watch.
            grace_s: Seconds to wait after the abort for the producer to end the stream.

        Returns:
            An iterator over the stream's events, in order.

        Raises:
            TypeError: `signal` is not an `AbortSignal`, or `grace_s` is not a number.
            ValueError: `grace_s` is negative.
            AbortError: (while iterating) the stream did not end within `grace_s` seconds of
                the abort; its message is "Request was aborted", as for an aborted reply.
        """
        if not isinstance(signal, AbortSignal):
            raise TypeError(f"iter_until: 'signal' must be an AbortSignal, got {signal!r}")
        if isinstance(grace_s, bool) or not isinstance(grace_s, (int, float)):
            raise TypeError(f"iter_until: 'grace_s' must be a number, got {grace_s!r}")
        if not grace_s >= 0:
            raise ValueError(f"iter_until: 'grace_s' must be >= 0, got {grace_s!r}")
        return self._iter_until(signal, grace_s)

    def _iter_until(self, signal: AbortSignal, grace_s: float) -> Iterator[E]:
        feed = self._feed
        deadline: list[float] = []  # appended once, by the listener, on the aborting thread

        def on_abort() -> None:
            deadline.append(time.monotonic() + grace_s)
            feed.wake()

        remove = signal.add_listener(on_abort)
        try:
            timeout: float | None = None
            while True:
                if deadline:
                    timeout = min(max(0.0, deadline[0] - time.monotonic()), threading.TIMEOUT_MAX)
                    if not timeout and not feed.done:
                        raise AbortError(ABORTED_TEXT)
                item = feed.get(timeout)
                if item is _END:
                    if feed.exc is not None:
                        raise feed.exc
                    return
                if item is not _NOTHING:
                    yield item
        finally:
            remove()
            feed.close()


def _final_message(event: AssistantMessageEvent) -> AssistantMessage | None:
    """The message a `done` or `error` event ends its stream with; None for any other event."""
    if isinstance(event, DoneEvent):
        return event.message
    if isinstance(event, ErrorEvent):
        return event.error
    return None


class AssistantMessageEventStream(EventStream[AssistantMessageEvent, AssistantMessage]):
    """The stream a provider returns: it ends by itself at `done` or `error`.

    Its result is the final `AssistantMessage` of that terminal event.
    """

    _ending = ((DoneEvent, ErrorEvent), _final_message)
