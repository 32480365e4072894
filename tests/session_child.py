"""A child process for the session tests (`tests/integrations/test_session_crash.py`,
`test_sessions.py`).

    python tests/session_child.py run sqlite|jsonl|postgres STORE SIDE
        A real `Agent` (faux model paced at `TOKENS_PER_SECOND`, parallel tools) runs the
        scripted conversation `script()` with `session=` the store at STORE. Every tool call
        sleeps a few milliseconds, then records its id in SIDE (one line, fsynced): the
        calls that really ran (postgres: STORE is `<DSN>#<session id>`). Prints `ready` once
        the agent is built, `durable <n>` from a `message_end` listener (listeners run after
        the session's append has returned, so `n` messages are stored by then) and
        `done <seconds>` when the run has ended, with the seconds since `ready`.

    python tests/session_child.py serve
        A fork server for the crash test: for each line `KIND<tab>STORE<tab>SIDE<tab>KILL`
        on stdin, fork a process that prints `pid <pid>` and does `run`; once it has ended,
        print `exit <code>` (negative: killed by that signal) and take the next line. KILL
        is `-` (no kill) or `N:SECONDS`: the run SIGKILLs itself SECONDS after N messages
        are stored (N = 0: after `ready`). A forked run costs none of an interpreter's
        start, and the kill lands on the run's own progress and clock, however busy the
        machine and the parent are.

    python tests/session_child.py append STORE TAG COUNT
        Prints `ready`, waits for a line on stdin, then opens the session `shared` of the
        SQLite file STORE (a new file, which the other child opens at the same moment),
        appends COUNT distinct user messages (`<TAG>-<i>`, in batches of 1 to 3) and prints
        `done`.

The test kills the `run` child with SIGKILL at random moments and reloads what it stored.
Every line is written whole, in one `write`: a kill never cuts one.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from agentcore import (
    Agent,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    JsonlSession,
    SqliteSession,
    TextContent,
    UserMessage,
)
from agentcore.providers.faux import (
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.sessions import PostgresSession

API = "faux-crash"
TOKENS_PER_SECOND = 500
PROMPT = "Check the six gauges, please."
FOLLOW_UP = "Now check them once more."


def script() -> list[AgentMessage]:
    """The model's replies: four tool batches over two user messages (the prompt and the
    follow-up), each call sleeping the milliseconds its arguments say."""

    def batch(text: str, calls: dict[str, int]) -> AgentMessage:
        return faux_assistant_message([
            faux_text(text),
            *(faux_tool_call("gauge", {"name": call_id, "ms": ms}, id=call_id)
              for call_id, ms in calls.items()),
        ])

    return [
        batch("I will read the first three gauges at once.", {"a1": 25, "a2": 5, "a3": 15}),
        batch("Two more, the slow ones.", {"b1": 10, "b2": 30}),
        faux_assistant_message("All six gauges read normal; the slow ones took their time."),
        batch("Reading four of them again, in parallel.", {"c1": 5, "c2": 20, "c3": 10,
                                                           "c4": 15}),
        batch("And the last two.", {"d1": 15, "d2": 5}),
        faux_assistant_message("Second pass done: every gauge still reads normal."),
    ]


def gauge_tool(side: Path) -> AgentTool:
    """The tool: sleep `ms` milliseconds, then record the call's id in `side` (fsynced)."""

    def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any,
                ) -> AgentToolResult:
        time.sleep(args["ms"] / 1000)
        fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{tool_call_id}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return AgentToolResult([TextContent(f"gauge {args['name']}: normal")])

    return AgentTool(
        "gauge", "Read one gauge.",
        {"type": "object", "properties": {"name": {"type": "string"}, "ms": {"type": "integer"}},
         "required": ["name", "ms"]},
        execute,
    )


def open_store(kind: str, path: str) -> SqliteSession | JsonlSession | PostgresSession:
    """The store of `kind` at `path` (postgres: `<DSN>#<session id>`)."""
    if kind == "postgres":
        dsn, _, session_id = path.rpartition("#")
        return PostgresSession(dsn, session_id)
    return SqliteSession(path) if kind == "sqlite" else JsonlSession(path)


def say(line: str) -> None:
    """Print `line` whole: one write (a kill or another thread never cuts it)."""
    os.write(1, f"{line}\n".encode())


def run(kind: str, store: str, side: str, kill: tuple[int, float] | None = None) -> None:
    """The run; with `kill` (messages, seconds), SIGKILL this process `seconds` after that
    many messages are stored."""
    faux = register_faux_provider(api=API, tokens_per_second=TOKENS_PER_SECOND,
                                  token_size=(1, 1))
    faux.set_responses(script())
    session = open_store(kind, store)
    agent = Agent(faux.get_model(), tools=[gauge_tool(Path(side))], session=session,
                  tool_execution="parallel")
    armed: list[threading.Timer] = []

    def arm(stored: int) -> None:
        if kill is not None and stored >= kill[0] and not armed:
            armed.append(threading.Timer(kill[1], os.kill, (os.getpid(), signal.SIGKILL)))
            armed[0].daemon = True
            armed[0].start()

    def listener(event: Any, _signal: Any) -> None:
        if event.type == "message_end":
            stored = len(agent.messages)
            say(f"durable {stored}")
            arm(stored)

    agent.subscribe(listener)
    agent.follow_up(FOLLOW_UP)
    say("ready")
    began = time.monotonic()
    arm(0)
    agent.prompt(PROMPT).wait()
    say(f"done {time.monotonic() - began:.6f}")


def serve() -> None:
    """The fork server (see the module docstring). No thread runs here: forking is safe."""
    assert threading.active_count() == 1
    while request := sys.stdin.readline():
        kind, store, side, kill = request.rstrip("\n").split("\t")
        pid = os.fork()
        if pid == 0:  # the run
            code = 1
            try:
                say(f"pid {os.getpid()}")
                stored, _, seconds = kill.partition(":")
                run(kind, store, side, None if kill == "-" else (int(stored), float(seconds)))
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        say(f"exit {os.waitstatus_to_exitcode(status)}")


def append(store: str, tag: str, count: int) -> None:
    print("ready", flush=True)
    sys.stdin.readline()
    session = SqliteSession(store, "shared")  # both processes make the new file at once
    rng = random.Random(tag)
    i = 0
    while i < count:
        size = min(rng.randint(1, 3), count - i)
        session.append([UserMessage(f"{tag}-{n}") for n in range(i, i + size)])
        i += size
    session.close()
    print("done", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(*sys.argv[2:5])
    elif sys.argv[1] == "serve":
        serve()
    else:
        append(sys.argv[2], sys.argv[3], int(sys.argv[4]))
