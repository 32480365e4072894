"""Thread-safe event streams with a final result.

A producer `push`es events and finishes with `end(result)` or `fail(exc)`; one consumer
iterates the events and/or calls `result()`. Pushing never blocks. A stream may instead be
fed lazily by an iterator (`from_iterator`), which then runs on the consumer's thread: no extra
thread, and a slow consumer never lets events pile up.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

from ._events import AssistantMessageEvent, DoneEvent, ErrorEvent
from ._messages import AssistantMessage

__all__ = ["AssistantMessageEventStream", "EventStream"]

E = TypeVar("E")
R = TypeVar("R")

_END: Any = object()
_TIMEOUT: Any = object()
_INTERRUPTED: Any = object()
_NO_RESULT: Any = object()


class EventStream(Generic[E, R]):
    """A one-consumer, many-producer stream of events ending in a result.

    Thread-safety: `push`, `end` and `fail` may be called from any thread; iteration and
    `result` block the consumer's thread. Once ended, further pushes are ignored.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._items: deque[E] = deque()
        self._done = False
        self._result: Any = _NO_RESULT
        self._exc: BaseException | None = None
        self._source: Iterator[E] | None = None
        self._pull_lock = threading.Lock()
        self._interrupted = False

    @classmethod
    def from_iterator(cls, events: Iterable[E]) -> EventStream[E, R]:
        """A stream whose events are produced by `events`, pulled on the consumer's thread.

        For a generator, its `return` value becomes the result; an exception it raises fails
        the stream.
        """
        stream = cls()
        stream._source = iter(events)
        return stream

    def push(self, event: E) -> None:
        """Add an event; never blocks. Ignored once the stream has ended."""
        with self._cond:
            if self._done:
                return
            self._items.append(event)
            self._on_push(event)
            self._cond.notify_all()

    def end(self, result: R | None = None) -> None:
        """Finish the stream with `result`; later calls are ignored."""
        with self._cond:
            if self._done:
                return
            if self._result is _NO_RESULT:
                self._result = result
            self._done = True
            self._cond.notify_all()

    def fail(self, exc: BaseException) -> None:
        """Finish the stream with an error, raised to the consumer after the last event."""
        if not isinstance(exc, BaseException):
            raise TypeError(f"fail: 'exc' must be an exception, got {exc!r}")
        with self._cond:
            if self._done:
                return
            self._exc = exc
            self._done = True
            self._cond.notify_all()

    def done(self) -> bool:
        """Whether the stream has ended (events may still be waiting to be read)."""
        return self._done

    def __iter__(self) -> Iterator[E]:
        while True:
            item = self._get(None)
            if item is _END:
                if self._exc is not None:
                    raise self._exc
                return
            yield item

    def result(self, timeout: float | None = None) -> R:
        """Block until the stream ends and return its result (events are left unread).

        Raises `TimeoutError` after `timeout` seconds, or the producer's exception.
        """
        if self._source is not None:
            while not self._done:
                self._pull(buffer=True)
        with self._cond:
            if not self._cond.wait_for(lambda: self._done, timeout):
                raise TimeoutError(f"stream did not end within {timeout} s")
        if self._exc is not None:
            raise self._exc
        return cast(R, None if self._result is _NO_RESULT else self._result)

    def _on_push(self, event: E) -> None:
        """Hook for subclasses, called under the lock for every accepted event."""

    def _get(self, timeout: float | None) -> Any:
        """The next event, `_END`, `_TIMEOUT`, or `_INTERRUPTED` after `_interrupt()`."""
        if self._source is not None:
            return self._next_from_source()
        with self._cond:
            while True:
                if self._items:
                    return self._items.popleft()
                if self._done:
                    return _END
                if self._interrupted:
                    self._interrupted = False  # one wake-up per _interrupt()
                    return _INTERRUPTED
                if not self._cond.wait(timeout) and not self._items and not self._done:
                    return _TIMEOUT

    def _next_from_source(self) -> Any:
        """The next event of a lazily fed stream, handed straight to the consumer.

        The hot path of every HTTP provider: no queue round trip, one lock.
        """
        source = self._source
        assert source is not None
        with self._pull_lock:
            if self._items:  # buffered by `result()` or pushed by another thread
                with self._cond:
                    return self._items.popleft()
            if self._done:
                return _END
            try:
                event = next(source)
            except StopIteration as stop:
                self.end(stop.value)
                return _END
            except BaseException as exc:
                self.fail(exc)
                return _END
            self._on_push(event)  # the only writer of this stream's state: no lock needed
            if self.done():
                with self._cond:  # wake a thread waiting in result()
                    self._cond.notify_all()
                close = getattr(source, "close", None)
                if close is not None:
                    close()
            return event

    def _close_source(self) -> None:
        """Close a lazily fed stream's source (say, the HTTP response) if it has not ended."""
        source = self._source
        if source is not None and not self._done:
            close = getattr(source, "close", None)
            if close is not None:
                with self._pull_lock:
                    close()

    def _interrupt(self) -> None:
        """Wake a consumer blocked in `_get` (used by the loop when its run is aborted)."""
        with self._cond:
            self._interrupted = True
            self._cond.notify_all()

    def _pull(self, buffer: bool = False) -> None:
        """Move one event from the source into the queue.

        `_get` pulls only into an empty queue; `result` (`buffer=True`) must pull past
        unread events, or it would spin forever waiting for an end it never fetches.
        """
        source = self._source
        assert source is not None
        with self._pull_lock:
            if self._done or (self._items and not buffer):
                return
            try:
                event = next(source)
            except StopIteration as stop:
                self.end(stop.value)
            except BaseException as exc:
                self.fail(exc)
            else:
                self.push(event)
            if self.done():
                close = getattr(source, "close", None)
                if close is not None:
                    close()


class AssistantMessageEventStream(EventStream[AssistantMessageEvent, AssistantMessage]):
    """The stream a provider returns: it ends by itself at `done` or `error`.

    Its result is the final `AssistantMessage` of that terminal event.
    """

    def _on_push(self, event: AssistantMessageEvent) -> None:
        if isinstance(event, DoneEvent):
            self._result, self._done = event.message, True
        elif isinstance(event, ErrorEvent):
            self._result, self._done = event.error, True
