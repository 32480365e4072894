"""Thread-safe event streams with a final result.

A producer `push`es events and finishes with `end(result)` or `fail(exc)`; one consumer
iterates the events and/or calls `result()`. Pushing never blocks. A stream may instead be
fed lazily by an iterator (`from_iterator`), which then runs on the consumer's thread: no extra
thread, and a slow consumer never lets events pile up.

`EventStream` is a facade over one of two feeds behind one small interface (`Feed`, in
`_feeds`): `QueueFeed` queues pushed events, `PullFeed` pulls them from a source when asked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar, cast

from ._abort import AbortSignal
from ._errors import ABORTED_TEXT, AbortError
from ._events import AssistantMessageEvent, DoneEvent, ErrorEvent
from ._feeds import END, NOTHING, Ending, Feed, PullFeed, QueueFeed
from ._messages import AssistantMessage

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["AssistantMessageEventStream", "EventStream"]

E = TypeVar("E")
R = TypeVar("R")


class EventStream(Generic[E, R]):
    """A one-consumer, many-producer stream of events ending in a result.

    Thread-safety: `push`, `end` and `fail` may be called from any thread; iteration and
    `result` block the consumer's thread. Once ended, further pushes are ignored.
    """

    _ending: ClassVar[Ending | None] = None
    """For a stream that ends itself at some event: which events may, and the result they give."""

    def __init__(self, *, on_close: Callable[[], None] | None = None) -> None:
        """`on_close()` runs once, when the consumer calls `close()` (say, to abort a run)."""
        if on_close is not None and not callable(on_close):
            raise TypeError(f"EventStream: 'on_close' must be callable or None, got {on_close!r}")
        self._feed: Feed[E] = QueueFeed(type(self)._ending)
        self._on_close = on_close

    @classmethod
    def from_iterator(cls, events: Iterable[E]) -> Self:
        """A stream whose events are produced by `events`, pulled on the consumer's thread.

        For a generator, its `return` value becomes the result; an exception it raises fails
        the stream. The source is closed once the stream ends.
        """
        stream = cls()  # cls() runs a subclass's own __init__; its unused queue costs ~1 µs
        stream._feed = PullFeed(iter(events), cls._ending)
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
            if item is END:
                if feed.exc is not None:
                    raise feed.exc
                return
            if item is not NOTHING:  # a `wake()` left over from `iter_until`
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
                if item is END:
                    if feed.exc is not None:
                        raise feed.exc
                    return
                if item is not NOTHING:
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
