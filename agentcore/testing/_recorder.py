"""`EventRecorder`: the events of a run, an agent or a loop, kept for a test to inspect."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar, final

from .._agent import Agent, AgentRun
from .._core import (
    AbortSignal,
    AgentEvent,
    EventStream,
    MessageUpdateEvent,
    TextDeltaEvent,
)

__all__ = ["EventRecorder", "record_events"]

E = TypeVar("E")


@final
class EventRecorder:
    """Collects agent events; call it as a sink (`emit=`) or an `Agent` listener.

    Thread-safe: events may arrive on a run's thread while a test reads them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[AgentEvent] = []
        self._unsubscribe: Callable[[], None] | None = None

    def __call__(self, event: AgentEvent, signal: AbortSignal | None = None) -> None:
        """Record `event` (`signal`, passed to `Agent` listeners, is ignored)."""
        with self._lock:
            self._events.append(event)

    @property
    def events(self) -> list[AgentEvent]:
        """The events recorded, in order (a copy)."""
        with self._lock:
            return list(self._events)

    @property
    def types(self) -> list[str]:
        """The `type` tag of each event recorded, e.g. `["agent_start", "turn_start", ...]`."""
        return [e.type for e in self.events]

    def of(self, cls: type[E]) -> list[E]:
        """The recorded events of class `cls`, in order."""
        return [e for e in self.events if isinstance(e, cls)]

    @property
    def streamed_text(self) -> str:
        """The text deltas of every assistant message, joined: what a user saw stream in."""
        return "".join(e.assistant_message_event.delta for e in self.of(MessageUpdateEvent)
                       if isinstance(e.assistant_message_event, TextDeltaEvent))

    def clear(self) -> None:
        """Forget the events recorded so far."""
        with self._lock:
            self._events.clear()

    def close(self) -> None:
        """Stop listening to the agent given to `record_events`, if any."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def __enter__(self) -> EventRecorder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<EventRecorder {len(self)} events>"


def record_events(
    source: Agent | AgentRun | EventStream[AgentEvent, Any] | None = None,
    timeout: float | None = None,
) -> EventRecorder:
    """An `EventRecorder`, filled from `source`.

    Args:
        source: An `Agent`: the recorder is subscribed and records every later run until
            `close()` (or the end of a `with` block). An `AgentRun`: waits for it to end and
            records all its events. The stream of `agent_loop`: waits for it to end and records
            its events (consuming it; `result()` still works). None: an empty recorder, to
            pass as `emit=` or to `Agent.subscribe`.
        timeout: For a run or a stream, how long to wait for the end, in seconds.

    Returns:
        The recorder.

    Raises:
        TimeoutError: The run or stream did not end within `timeout`.
    """
    recorder = EventRecorder()
    if isinstance(source, Agent):
        recorder._unsubscribe = source.subscribe(recorder)
    elif isinstance(source, (AgentRun, EventStream)):
        source.result(timeout)
        for event in source:
            recorder(event)
    elif source is not None:
        raise TypeError(f"'source' must be an Agent, an AgentRun, an EventStream or None, "
                        f"got {source!r}")
    return recorder
