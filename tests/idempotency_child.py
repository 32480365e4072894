"""A child process for the idempotency crash test (`tests/integrations/test_idempotency_crash.py`).

    python tests/idempotency_child.py serve
        A fork server: for each line `STORE<tab>LOG<tab>N<tab>SECONDS` on stdin, fork a process
        that runs `run(STORE, LOG, N, SECONDS)`; once it has ended, print `exit <code>`
        (negative: killed by that signal) and take the next line.

`run` is a real `Agent` with a `SqliteSession` at STORE and a scripted model asking for two
batches: `p1`..`p4` in parallel (each call taking a different time, so that some end before
others), then `s1`..`s4` one at a time (a sequential tool). Every call appends
`begin <call id> <idempotency key>` to LOG as its first act and `end <call id>` as its last,
each line in one `write`. The process SIGKILLs itself SECONDS after its N-th
`tool_execution_start` event (on its own clock: the kill lands on the run's progress however
busy the machine is).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from typing import Any

from agentcore import Agent, SqliteSession, ToolExecutionMode, ToolExecutionStartEvent, tool
from agentcore.testing import scripted_model, tool_call

PARALLEL = {"p1": 10, "p2": 25, "p3": 40, "p4": 55}
"""The first batch's calls and their milliseconds."""
SEQUENTIAL = {"s1": 15, "s2": 15, "s3": 15, "s4": 15}
"""The second batch's calls and their milliseconds."""
RESULT = "done {call_id}"
"""What a call that ends returns."""

_log = ""  # the side-effect log of this process's run


def _note(line: str) -> None:
    fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def _work(ms: int, tool_call_id: str, idempotency_key: str) -> str:
    _note(f"begin {tool_call_id} {idempotency_key}")
    time.sleep(ms / 1000)
    _note(f"end {tool_call_id}")
    return RESULT.format(call_id=tool_call_id)


@tool
def work(ms: int, tool_call_id: str, idempotency_key: str) -> str:
    """Work for `ms` milliseconds, logging its start and end.

    Args:
        ms: How long.
    """
    return _work(ms, tool_call_id, idempotency_key)


@tool(execution_mode=ToolExecutionMode.SEQUENTIAL)
def step(ms: int, tool_call_id: str, idempotency_key: str) -> str:
    """Work for `ms` milliseconds, one call at a time, logging its start and end.

    Args:
        ms: How long.
    """
    return _work(ms, tool_call_id, idempotency_key)


def run(store: str, log: str, starts: int, seconds: float) -> None:
    global _log
    _log = log
    replies: list[Any] = [
        [tool_call("work", {"ms": ms}, id=i) for i, ms in PARALLEL.items()],
        [tool_call("step", {"ms": ms}, id=i) for i, ms in SEQUENTIAL.items()],
        "all done",
    ]
    seen = [0]

    def listener(event: Any, _signal: Any) -> None:
        if isinstance(event, ToolExecutionStartEvent):
            seen[0] += 1
            if seen[0] == starts:
                timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGKILL))
                timer.daemon = True
                timer.start()

    with scripted_model(replies) as fake, SqliteSession(store) as session:
        agent = Agent(fake.model, tools=[work, step], session=session)
        agent.subscribe(listener)
        agent.prompt("Do the work.").wait()


def serve() -> None:
    """The fork server (see the module docstring). No thread runs here: forking is safe."""
    assert threading.active_count() == 1
    while request := sys.stdin.readline():
        store, log, starts, seconds = request.rstrip("\n").split("\t")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                run(store, log, int(starts), float(seconds))
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        os.write(1, f"exit {os.waitstatus_to_exitcode(status)}\n".encode())


if __name__ == "__main__":
    serve()
