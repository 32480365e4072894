"""Tools at module level, for `tests/loop/test_tool_executor_remote.py`:
a worker process imports them.

`hold` stands for a long tool: it waits (up to `seconds`) for a file to appear, so that a test
can let it end at once after checking that the run did not wait for it. Other processes cannot
share a `threading.Event`; a file works for a process pool and a Dask worker alike.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from agentcore import (
    AbortSignal,
    AgentTool,
    AgentToolResult,
    TextContent,
    tool,
    tool_idempotency_key,
)


@tool
def lookup(city: str) -> str:
    """The weather in a city, and the process that looked it up."""
    return f"{city}: sunny (pid {os.getpid()})"


def forecast(city: str) -> str:
    """A function that stays a function: the tool made from it has another name."""
    return f"{city}: rain"


weather = tool(forecast, name="weather", timeout=3)


@tool
def whose(deps: Any) -> str:
    """Which deps the tool was given."""
    return f"deps={deps!r}"


@tool
def keyed(idempotency_key: str) -> str:
    """The call's idempotency key, as injected and as `tool_idempotency_key()` tells it."""
    return f"{idempotency_key} {tool_idempotency_key()}"


@tool
def explode(reason: str) -> str:
    """Raise ValueError(reason)."""
    raise ValueError(reason)


@tool
def hold(started: str, release: str, finished: str = "", seconds: float = 30.0) -> str:
    """Create the file `started`, then wait until the file `release` exists (at most `seconds`);
    create the file `finished` (if named) as it returns."""
    Path(started).touch()
    deadline = time.monotonic() + seconds
    try:
        while not os.path.exists(release):
            if time.monotonic() > deadline:
                return "gave up"
            time.sleep(0.01)
        return "released"
    finally:
        if finished:
            Path(finished).touch()


def _echo(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
    on_update(AgentToolResult([TextContent("halfway")]))  # dropped when run elsewhere
    return AgentToolResult([TextContent(f"echo {args['text']} ({tool_call_id})")],
                           details={"aborted": signal.aborted})


echo = AgentTool(
    "echo", "Echo a text.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    _echo,
)
"""A plain `AgentTool` whose `execute` is a module-level function."""
