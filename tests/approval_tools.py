"""Tools for the approval tests (API §20): each records the calls that ran, in order."""

from __future__ import annotations

import threading
from typing import Any

import agentcore as ac


class Ran:
    """The tool calls that ran, in the order they started (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ids: list[str] = []

    def add(self, call_id: str) -> None:
        with self._lock:
            self.ids.append(call_id)


def make_tool(name: str, ran: Ran, requires_approval: Any = False,
              parameters: dict[str, Any] | None = None, *, text: str | None = None,
              **fields: Any) -> ac.AgentTool:
    """A tool that records its call id in `ran` and answers `<name> <text>` (else its args)."""

    def execute(call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any,
                ) -> ac.AgentToolResult:
        ran.add(call_id)
        return ac.AgentToolResult([ac.TextContent(f"{name} {args if text is None else text}")])

    return ac.AgentTool(name, f"The {name} tool.", parameters or {"type": "object"}, execute,
                        requires_approval=requires_approval, **fields)
