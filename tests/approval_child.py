"""A child process for the durable-approval tests (`tests/agent/test_approvals_durable.py`).

    python tests/approval_child.py step STORE LOG
        Opens the SQLite session at STORE in a real `Agent` whose tools log every execution in
        LOG, and takes the conversation `SCRIPT` one run further: a prompt when the session
        is empty, a resume with `DECIDE`'s decisions when calls wait for approval, a
        `continue_()` when the transcript ends with something the model has not answered,
        nothing when the model has given its final answer. Then it exits: the next step is
        another process's.

    python tests/approval_child.py serve - -
        A fork server for the kill test: forks a new process per step asked for on stdin,
        which costs none of an interpreter's start, and which SIGKILLs itself at the moment
        asked for, on its own clock (see `serve`).

    python tests/approval_child.py pause STORE LOG
        Prompts the agent; once the run has paused for approval, prints `paused` and sleeps
        until it is killed.

The model is scripted by the transcript itself (`reply`: the n-th assistant message of the
conversation is `SCRIPT[n]`), so every process, whatever the one before it did, gets the
same replies. Output lines, each flushed at once, for the parent to follow and kill on:
`ready <messages>` (the agent is built and its session loaded), `pending <id:name ...>`,
`stored <role> <messages>` (from a `message_end` listener: the session's append has
returned), `start <id>` / `end <id>` (after the tool's log line is on disk), `idle` (the
conversation has ended), `ran` (the run is over).

The tools take `ms` milliseconds. The listener also sleeps `DECIDED_S` after the
`ToolApprovalMessage` is stored, widening the moment between that message and the first call
starting, so that a kill lands there often.
"""

from __future__ import annotations

import os
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
    AssistantMessage,
    Context,
    Model,
    SqliteSession,
    StreamOptions,
    TextContent,
    ToolApprovalMessage,
)
from agentcore.testing import ScriptedModel, scripted_model, tool_call

PROMPT = "Deploy builds a and b, look at the logs, then deploy c."
DECIDED_S = 0.02

SCRIPT: list[Any] = [
    ["I will deploy a and b and read the logs meanwhile.",
     tool_call("deploy", {"build": "a", "ms": 40}, id="p1"),
     tool_call("deploy", {"build": "b", "ms": 40}, id="p2"),
     tool_call("look", {"what": "logs", "ms": 25}, id="r1")],
    ["Build a is out. Now c.",
     tool_call("deploy", {"build": "c", "ms": 40}, id="q1")],
    "Done: a and c are deployed; b was refused.",
    "You are welcome.",
]
"""The model's replies, by how many assistant messages the conversation already has."""

DECIDE: dict[str, bool | str] = {"p1": True, "p2": "not b, it failed QA", "q1": True}
"""The person's decisions: p2 is denied, the others approved."""

NEEDS_APPROVAL = {"p1", "p2", "q1"}
FINAL = SCRIPT[2]


def reply(context: Context, options: StreamOptions, model: Model) -> Any:
    """The scripted reply for `context`: the next entry of `SCRIPT`."""
    return SCRIPT[sum(isinstance(m, AssistantMessage) for m in context.messages)]


def scripted() -> ScriptedModel:
    return scripted_model([reply] * 8)


def record(log: Path, line: str) -> None:
    """Append `line` to `log`, on disk (fsynced) before this returns."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def tools(log: Path, say: Any = lambda line: None) -> list[AgentTool]:
    """`deploy` (needs approval) and `look` (does not): each logs `start <id>`, sleeps `ms`
    milliseconds, logs `end <id>`."""

    def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any,
                ) -> AgentToolResult:
        record(log, f"start {tool_call_id} {os.getpid()}")
        say(f"start {tool_call_id}")
        time.sleep(args["ms"] / 1000)
        record(log, f"end {tool_call_id} {os.getpid()}")
        say(f"end {tool_call_id}")
        return AgentToolResult([TextContent(f"{tool_call_id}: ok")])

    schema = {"type": "object", "properties": {"build": {"type": "string"},
                                               "what": {"type": "string"},
                                               "ms": {"type": "integer"}},
              "required": ["ms"]}
    return [AgentTool("deploy", "Deploy a build.", schema, execute, requires_approval=True),
            AgentTool("look", "Look at something.", schema, execute)]


_KILL: list[tuple[str, float]] = []
"""In a forked step told to die: (line prefix, seconds); the first line said with that prefix
arms the SIGKILL, that many seconds later (at once for 0)."""
_KILL_LOCK = threading.Lock()


def say(line: str) -> None:
    """Print `line`, whole: one write (tools on several threads print at once)."""
    os.write(1, f"{line}\n".encode())
    if _KILL and line.startswith(_KILL[0][0]):
        with _KILL_LOCK:
            if not _KILL:
                return
            _, seconds = _KILL.pop()
        if seconds <= 0:  # right after this line: the process never gets past it
            os.kill(os.getpid(), signal.SIGKILL)
        else:
            killer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGKILL))
            killer.daemon = True
            killer.start()


def _agent(store: str, log: str, model: Model) -> Agent:
    agent = Agent(model, tools=tools(Path(log), say), session=SqliteSession(store))

    def listener(event: Any, signal: Any) -> None:
        if event.type == "message_end":
            say(f"stored {event.message.role} {len(agent.messages)}")
            if isinstance(event.message, ToolApprovalMessage):
                time.sleep(DECIDED_S)

    agent.subscribe(listener)
    say(f"ready {len(agent.messages)}")
    return agent


def _pending(agent: Agent) -> None:
    say("pending " + " ".join(f"{c.id}:{c.name}" for c in agent.state.pending_approvals))


def conversation_over(messages: list[AgentMessage]) -> bool:
    last = messages[-1] if messages else None
    return isinstance(last, AssistantMessage) and not last.tool_calls


def step(store: str, log: str) -> None:
    with scripted() as fake:
        agent = _agent(store, log, fake.model)
        _pending(agent)
        waiting = agent.state.pending_approvals
        if conversation_over(agent.messages):
            say("idle")
            return
        if waiting:
            run = agent.continue_(approvals={c.id: DECIDE[c.id] for c in waiting})
        elif not agent.messages:
            run = agent.prompt(PROMPT)
        else:
            run = agent.continue_()
        run.raise_for_error()
        _pending(agent)
        agent.close()
        say("ran")


def pause(store: str, log: str) -> None:
    with scripted() as fake:
        agent = _agent(store, log, fake.model)
        agent.prompt(PROMPT).raise_for_error()
        _pending(agent)
        say("paused")
        time.sleep(60)


def serve(_store: str, _log: str) -> None:
    """A fork server: for each line `STORE<tab>LOG` on stdin, fork a process that runs
    `step(STORE, LOG)`, printing `pid <pid>` first, on this process's stdout; once it has
    ended, print `exit <code>` (negative: killed by that signal) and take the next line.
    A line `STORE<tab>LOG<tab>PREFIX<tab>SECONDS` asks the step to SIGKILL itself SECONDS
    after it first says a line starting with PREFIX.

    A forked step is a new process with nothing of the agent's state, only the modules
    already imported; no thread runs here, so forking is safe.
    """
    assert threading.active_count() == 1
    while request := sys.stdin.readline():
        store, log, *kill = request.rstrip("\n").split("\t")
        pid = os.fork()
        if pid == 0:  # the step
            code = 1
            try:
                if kill:
                    _KILL.append((kill[0], float(kill[1])))
                say(f"pid {os.getpid()}")
                step(store, log)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        say(f"exit {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    {"step": step, "pause": pause, "serve": serve}[sys.argv[1]](sys.argv[2], sys.argv[3])
