"""Cooperative cancellation: an `AbortController` owns an `AbortSignal` that many threads watch."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, final

from ._errors import AbortError

__all__ = ["AbortController", "AbortSignal"]

_log = logging.getLogger(__name__)


@final
class AbortSignal:
    """A one-shot, thread-safe flag that tells work to stop.

    Read it with `aborted`, block on it with `wait`, or get called back with `add_listener`.
    Only its `AbortController` can set it. Every run makes a few and reads them on every turn:
    `aborted` is a plain attribute, and the `threading.Event` behind `wait` is made only when
    someone waits.
    """

    __slots__ = ("__weakref__", "_aborted", "_event", "_listeners", "_lock", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._event: threading.Event | None = None  # made by the first `wait`
        self._lock = threading.Lock()
        self._reason: Any = None
        self._listeners: list[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        """Whether the signal has been aborted."""
        return self._aborted

    @property
    def reason(self) -> Any:
        """The reason given to `AbortController.abort`, or None."""
        return self._reason

    def wait(self, timeout: float | None = None) -> bool:
        """Block until aborted or `timeout` seconds pass; return whether it is aborted."""
        with self._lock:
            if self._aborted:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def add_listener(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call `fn()` once when the signal aborts (at once if it already has).

        Returns a function that removes the listener. Listeners run on the aborting thread;
        one that raises is logged and the others still run.
        """
        if not callable(fn):
            raise TypeError(f"add_listener: 'fn' must be callable, got {fn!r}")
        with self._lock:
            if not self._aborted:
                self._listeners.append(fn)
                return lambda: self._remove(fn)
        _call_listener(fn)
        return lambda: None

    def throw_if_aborted(self) -> None:
        """Raise `AbortError` if the signal has been aborted."""
        if self._aborted:
            raise AbortError(f"operation aborted: {self._reason!r}" if self._reason else
                             "operation aborted")

    def _remove(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if fn in self._listeners:
                self._listeners.remove(fn)

    def _abort(self, reason: Any) -> None:
        with self._lock:
            if self._aborted:
                return
            self._reason, self._aborted = reason, True
            if self._event is not None:
                self._event.set()
            listeners, self._listeners = self._listeners, []
        for fn in listeners:
            _call_listener(fn)

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self.aborted})"


def _call_listener(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:
        _log.exception("abort listener %r raised", fn)


@final
class AbortController:
    """Creates an `AbortSignal` and aborts it; abort is idempotent and thread-safe."""

    __slots__ = ("_signal",)

    def __init__(self) -> None:
        self._signal = AbortSignal()

    @property
    def signal(self) -> AbortSignal:
        """The signal this controller aborts."""
        return self._signal

    def abort(self, reason: Any = None) -> None:
        """Abort the signal; later calls do nothing."""
        self._signal._abort(reason)

    def __repr__(self) -> str:
        return f"AbortController(aborted={self._signal.aborted})"
