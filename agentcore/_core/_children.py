"""Child agents waiting for approval (API §25): what a parent keeps of each until decided.

A child agent (`Agent.as_tool`) whose run stops with tool calls waiting for approval, under a
parent with no `approve` to decide them, pauses its parent's call: the parent's run ends with
the child's calls pending. `ChildPauses` is the parent agent's record of those calls, per
parent call: the child's waiting calls, their paths and transcript. `continue_(approvals=...)`
hands each entry its decisions; the parent's next run then runs each decided call again,
which continues its child with them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ._content import ToolCall
from ._messages import AgentMessage
from ._tools import CallLeftOpen

__all__ = ["ChildPause", "ChildPaused", "ChildPauses"]


class ChildPaused(CallLeftOpen):
    """Raised by a child agent's tool call whose child stopped for approval (`ChildPauses`)."""


@attrs.define(eq=False)
class ChildPause:
    """The parent's call `call_id`, whose child waits for approval of `calls`.

    `paths` are those calls' agent paths, `messages` the child's transcript so far, and
    `decisions`, once given, what the child resumes with.
    """

    call_id: str
    calls: list[ToolCall]
    paths: dict[str, list[str]]
    messages: list[AgentMessage]
    decisions: dict[str, bool | str] | None = None


class ChildPauses:
    """One agent's paused child calls, by its call id; thread-safe."""

    def __init__(self, child_session: Callable[[str], Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, ChildPause] = {}
        self.child_session = child_session
        """Makes the session a child run by call `id` keeps its transcript in (the parent
        session's `child(id)`: `SqliteSession`'s is `<session id>/<id>`), or None."""

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._entries)

    def record(self, pause: ChildPause) -> None:
        with self._lock:
            self._entries[pause.call_id] = pause

    def get(self, call_id: str) -> ChildPause | None:
        with self._lock:
            return self._entries.get(call_id)

    def drop(self, call_id: str) -> None:
        with self._lock:
            self._entries.pop(call_id, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def pending(self) -> list[ToolCall]:
        """The children's calls waiting for a decision, in the order they paused."""
        with self._lock:
            return [c for e in self._entries.values() if e.decisions is None for c in e.calls]

    def paths(self) -> dict[str, list[str]]:
        with self._lock:
            return {k: list(v) for e in self._entries.values() for k, v in e.paths.items()}

    def ready(self) -> set[str]:
        """The parent's calls whose child has its decisions: to run again."""
        with self._lock:
            return {k for k, e in self._entries.items() if e.decisions is not None}

    def decide(self, approvals: Mapping[str, bool | str] | None,
               ) -> dict[str, bool | str] | None:
        """Hand each paused child its part of `approvals`; return the rest (None if none).

        Raises `ValueError` when a paused child would be left with calls undecided.
        """
        if not self:
            return approvals  # type: ignore[return-value]  # checked where it is used
        if approvals is not None and not isinstance(approvals, Mapping):
            raise TypeError(f"'approvals' must be a dict of call id -> True, False or a "
                            f"reason, got {approvals!r}")
        given = dict(approvals or {})
        with self._lock:
            left = [c.id for e in self._entries.values() for c in e.calls if c.id not in given]
            if left:
                raise ValueError(f"'approvals' must decide every call waiting for approval; "
                                 f"undecided: {left}")
            for entry in self._entries.values():
                entry.decisions = {c.id: given.pop(c.id) for c in entry.calls}
        return given or None
