"""The `deps` of the run whose tool call the current thread is running (API §12).

A run's configuration carries one `deps` object (a database handle, the user being served);
the thread running a tool call holds it for the call's duration, and `@tool` functions with a
parameter named `deps` receive it. Thread-local, not a global: runs with different `deps` run
tools side by side, and a nested agent's tools see their own.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["enter_deps", "leave_deps", "tool_deps"]

_state = threading.local()


def tool_deps() -> Any:
    """The `deps` of the tool call running on this thread (None outside one, or if unset)."""
    return getattr(_state, "deps", None)


def enter_deps(deps: Any) -> Any:
    """Make `deps` this thread's; return the previous value for `leave_deps`."""
    previous = getattr(_state, "deps", None)
    _state.deps = deps
    return previous


def leave_deps(previous: Any) -> None:
    """Restore what `enter_deps` returned."""
    _state.deps = previous
