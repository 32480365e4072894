"""The Agent's steering and follow-up queues, which never lose a message.

A poll moves messages from the queue into an in-flight list; the run accepts each one when it
injects it. Whatever was still in flight when the run ends goes back to the front of its
queue, ahead of messages queued later.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from .._core import QueueMode

__all__ = ["MessageQueue"]


class MessageQueue:
    """A FIFO of messages with in-flight reservations; every method is thread-safe."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._queued: deque[Any] = deque()
        self._in_flight: list[Any] = []

    def put(self, message: Any) -> None:
        """Queue a message at the back."""
        with self._lock:
            self._queued.append(message)

    def take(self, mode: QueueMode) -> list[Any]:
        """Hand over the oldest message (or all, per `mode`) and hold them as in flight."""
        with self._lock:
            if not self._queued:
                return []
            if mode is QueueMode.ALL:
                taken = list(self._queued)
                self._queued.clear()
            else:
                taken = [self._queued.popleft()]
            self._in_flight.extend(taken)
            return taken

    def put_back(self, messages: list[Any]) -> None:
        """Queue `messages` again at the front (taken for a run that could not start)."""
        with self._lock:
            self._queued.extendleft(reversed(messages))

    def take_now(self, mode: QueueMode) -> list[Any]:
        """Hand over messages per `mode` as accepted at once (for `Agent.continue_`)."""
        with self._lock:
            taken = self.take(mode)
            self._in_flight = [m for m in self._in_flight if not any(m is t for t in taken)]
            return taken

    def accept(self, message: Any) -> bool:
        """Mark an in-flight message as injected; False if it was not ours."""
        with self._lock:
            for i, held in enumerate(self._in_flight):
                if held is message:
                    del self._in_flight[i]
                    return True
            return False

    def restore(self) -> None:
        """Put every message still in flight back at the front, in its original order."""
        with self._lock:
            self._queued.extendleft(reversed(self._in_flight))
            self._in_flight.clear()

    def clear(self) -> None:
        """Drop queued and in-flight messages."""
        with self._lock:
            self._queued.clear()
            self._in_flight.clear()

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._queued or self._in_flight)

    def __len__(self) -> int:
        with self._lock:
            return len(self._queued)
