"""Where a stream's events come from: the two feeds behind `EventStream` (see `_stream`).

`QueueFeed` queues events pushed by any thread; `PullFeed` pulls them from a source iterator on
the consumer's thread. Both hold the stream's state (`done`, `exc`, the result) and do its
blocking behind one small interface, `Feed`. A feed's `get` returns the next event, or a
`Mark`: `END` once the stream has ended and every event has been read, `NOTHING` when woken or
timed out first.
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, final

__all__ = ["END", "NEVER_ENDS", "NOTHING", "Ending", "Ends", "Feed", "Mark", "PullFeed",
           "QueueFeed"]

E = TypeVar("E")

Ends = Callable[[Any], Any]
"""Given an event, the result it ends its stream with, or None when it does not end it."""
Ending = tuple[tuple[type, ...], Ends]
"""How a stream ends itself: the classes of the events that may end it, and `Ends` for those.

A feed gives `Ends` only the events of those classes: every other event costs one isinstance."""


def never_ends(_: object) -> None:
    """The `Ends` of a stream that never ends itself (never called: no class may end it)."""


NEVER_ENDS: Ending = ((), never_ends)


class Mark(enum.Enum):
    """What a feed's `get` returns instead of an event."""

    END = enum.auto()  # the stream has ended and every event has been read
    NOTHING = enum.auto()  # woken by `wake()`, or `timeout` passed, before any event came


END: Final = Mark.END
NOTHING: Final = Mark.NOTHING


class Feed(Protocol[E]):
    """Where a stream's events come from; holds the stream's state and does its blocking."""

    @property
    def done(self) -> bool: ...

    @property
    def exc(self) -> BaseException | None: ...

    def push(self, event: E) -> None: ...

    def finish(self, result: Any, exc: BaseException | None) -> None: ...

    def get(self, timeout: float | None) -> E | Mark: ...

    def result(self, timeout: float | None) -> Any: ...

    def wake(self) -> None: ...

    def close(self) -> None: ...


@final
class QueueFeed(Generic[E]):
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

    def __init__(self, ending: Ending | None) -> None:
        self._lock = threading.Lock()
        self._items: deque[E] = deque()
        self._end_types, self._ends = ending or NEVER_ENDS
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

    def get(self, timeout: float | None) -> E | Mark:
        done, items = self.done, self._items  # `done` first: see the class docstring
        if items:
            return items.popleft()
        if done:
            return END
        while True:
            with self._lock:
                if items:
                    return items.popleft()
                if self.done:
                    return END
                if self._woken:
                    self._woken = False  # one `NOTHING` per `wake()`
                    return NOTHING
                waiter = self._park()
            if not self._wait(waiter, timeout) and not items and not self.done:
                return NOTHING

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
class PullFeed(Generic[E]):
    """Events pulled from a source iterator by whichever thread asks for the next one.

    Two locks with separate jobs. `_pull_lock` serialises every use of `_source` (pulling,
    closing) and is the only lock on the hot path. `_lock` guards the state (`_items`,
    `_result`, `done`, `exc`) and is held only briefly, so `push`, `end` and `fail` from other
    threads never wait for a pull in progress. The hot path reads `_items` and `done` without
    `_lock`: a stale read only defers a pushed event, or the end, to the next `get`.
    """

    __slots__ = ("_end_types", "_ends", "_items", "_lock", "_pull_lock", "_result", "_source",
                 "done", "exc")

    def __init__(self, source: Iterator[E], ending: Ending | None) -> None:
        self._source = source
        self._end_types, self._ends = ending or NEVER_ENDS
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

    def get(self, timeout: float | None) -> E | Mark:
        """The next event, handed straight from the source to the consumer: no queue, one lock.

        `timeout` is ignored: a source blocked in `next` can only be interrupted by itself.
        """
        with self._pull_lock:
            if not self._items and not self.done:
                event: E | Literal[Mark.END]
                try:  # `_pull`, its common case inline: this runs for every streamed event
                    pulled = next(self._source)
                except BaseException as exc:
                    event = self._pull_failed(exc)
                else:
                    if not self.done and not isinstance(pulled, self._end_types):
                        return pulled
                    event = self._pulled_last(pulled)
                if event is not END:
                    return event
            with self._lock:
                return self._items.popleft() if self._items else END

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
                if event is not END:
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

    def _pull(self) -> E | Literal[Mark.END]:
        """One event from the source, or `END` once the stream has ended; holds `_pull_lock`."""
        try:
            event = next(self._source)
        except BaseException as exc:
            return self._pull_failed(exc)
        if self.done or isinstance(event, self._end_types):
            return self._pulled_last(event)
        return event

    def _pull_failed(self, exc: BaseException) -> Literal[Mark.END]:
        """End the stream with what the source's `next` raised (its return value or error)."""
        if isinstance(exc, StopIteration):
            self._record_end(exc.value, None)
        else:  # KeyboardInterrupt too: raised to the consumer after all
            self._record_end(None, exc)
        self._close_source()
        return END

    def _pulled_last(self, event: E) -> E | Literal[Mark.END]:
        """`event`, pulled after the stream ended or of a class that may end it; `END` if late."""
        if self.done:  # ended meanwhile by another thread: a late event, ignored
            self._close_source()
            return END
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
