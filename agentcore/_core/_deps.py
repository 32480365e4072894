"""What the thread running a tool call knows of it: the run's `deps`, the call's idempotency key.

A run's configuration carries one `deps` object (a database handle, the user being served;
API §12) and one idempotency scope (API §24); the thread running a tool call holds both, and
the call's id, for the call's duration. `@tool` functions with a parameter named `deps` or
`idempotency_key` receive them; any tool may ask `tool_idempotency_key()`. Thread-local, not a
global: runs with different `deps` run tools side by side, and a nested agent's tools see
their own.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

import attrs

from ._journal import idempotency_key

__all__ = ["NESTING", "Nesting", "enter_deps", "key_of", "leave_deps", "tool_deps",
           "tool_idempotency_key", "tool_nesting"]

_state = threading.local()


@attrs.frozen
class Nesting:
    """Where a run sits among agents made of agents (API §25), and where its calls' events go.

    `path` holds the names of the agents from the outermost run down to this one; `depth` is
    how many `as_tool` runs it is nested in (0: a run of its own). On the thread of a tool
    call, `emit` sends an event into the run that made the call (None where nothing listens,
    as on another process), and `approve` is that run's `approve`, which decides its child
    agents' calls too.
    """

    path: tuple[str, ...] = ()
    depth: int = 0
    emit: Callable[[Any], None] | None = None
    approve: Callable[[Any, Any], Any] | None = None
    pauses: Any = None  # the `ChildPauses` of the agent whose run it is, if an agent's


_TOP = Nesting()
NESTING: contextvars.ContextVar[Nesting] = contextvars.ContextVar(
    "agentcore_nesting", default=_TOP)  # frozen: safe to share
"""The nesting of the run the current context belongs to: a child agent's run is started in
a context holding its own, which its thread carries (`carry_context`)."""

_Held = tuple[Any, str, str, Nesting | None, Callable[[Any], None] | None]
"""What a thread holds for its call: (deps, idempotency scope, tool call id, the run's nesting,
the call's `emit`)."""


def tool_deps() -> Any:
    """The `deps` of the tool call running on this thread (None outside one, or if unset)."""
    held: _Held | None = getattr(_state, "held", None)
    return None if held is None else held[0]


def tool_idempotency_key() -> str | None:
    """The idempotency key of the tool call running on this thread; None outside a tool call.

    The key of a call is stable across process restarts when the run has a session (it is
    derived from the session's identity and the call's id; without a session, from a random
    value drawn per run and the call's id): pass it to an API that deduplicates requests
    (payments, email), so that a call repeated after a crash takes effect once. `@tool`
    functions get the same key through a parameter named `idempotency_key`; this function is
    for tools written as plain `AgentTool`s, whose `execute` has no place for it. On an
    executor running calls in another process, the key is set there too.
    """
    held: _Held | None = getattr(_state, "held", None)
    if held is None or not held[2]:
        return None
    return idempotency_key(held[1], held[2])


def key_of(tool_call_id: str) -> str:
    """The idempotency key of call `tool_call_id` in the scope of the run this thread serves.

    What `@tool` injects: the id is the one `execute` was given (a tool calling another's
    `execute` gives its own id). Outside a run, the scope is empty: the key derives from the id.
    """
    held: _Held | None = getattr(_state, "held", None)
    return idempotency_key("" if held is None else held[1], tool_call_id)


def tool_nesting() -> Nesting | None:
    """The nesting of the run whose tool call this thread runs, with the call's `emit`."""
    held: _Held | None = getattr(_state, "held", None)
    if held is None or held[3] is None:
        return None
    run = held[3]
    return Nesting(run.path, run.depth, held[4], run.approve, run.pauses)


def enter_deps(deps: Any, scope: str = "", tool_call_id: str = "",
               nesting: Nesting | None = None, emit: Callable[[Any], None] | None = None,
               ) -> Any:
    """Hold a tool call's `deps`, id, idempotency `scope`, run `nesting` and `emit` here.

    Nothing is built per call (`tool_nesting` puts the last two together when asked). Returns
    the previous holding, which `leave_deps` takes.
    """
    previous = getattr(_state, "held", None)
    _state.held = (deps, scope, tool_call_id, nesting, emit)
    return previous


def leave_deps(previous: Any) -> None:
    """Restore what `enter_deps` returned."""
    _state.held = previous
