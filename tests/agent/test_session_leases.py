"""One driver per conversation (API §27), in one process: agents on one SQLite session.

Two `Agent`s on the same session file and id (each with its own `SqliteSession` object, as
two processes would have) take turns: while one runs, the other's `prompt`, `continue_`,
`reset()` and `messages =` raise `SessionBusyError` (or wait `lease_timeout`), and an agent
opening the session meanwhile repairs nothing. The agent taking the lease next loads what
the first stored. The lease rows are `agentcore_leases`' (documented), read and written here
by hand to stand for holders elsewhere. The tests across processes are in
`tests/integrations/test_session_lease_processes.py`.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentcore as ac
from agentcore.sessions import Lease, SessionLease, SqliteSession
from agentcore.testing import ScriptedModel, scripted_model, tool_call


class Gate:
    """A `pay` tool that waits for the test to open its gate; counts its runs."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()
        self.runs: list[str] = []

    def tool(self, needs_approval: bool = False) -> ac.AgentTool:
        def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any,
                    ) -> ac.AgentToolResult:
            self.runs.append(call_id)
            self.entered.set()
            assert self.open.wait(30)
            return ac.AgentToolResult([ac.TextContent(f"paid {args['n']}")])

        return ac.AgentTool("pay", "Pay.", {"type": "object", "properties": {
            "n": {"type": "integer"}}}, execute, requires_approval=needs_approval)


def answer(context: ac.Context, options: Any, model: ac.Model) -> Any:
    """Pays once per user message, then says what it saw."""
    last = context.messages[-1]
    if isinstance(last, ac.UserMessage):
        users = sum(isinstance(m, ac.UserMessage) for m in context.messages)
        return tool_call("pay", {"n": users}, id=f"pay-{users}")
    results = [m.text for m in context.messages if isinstance(m, ac.ToolResultMessage)]
    return f"done after {results}"


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model([answer] * 40) as scripted:
        yield scripted


def agent(path: Path, model: ScriptedModel, gate: Gate, **kw: Any) -> ac.Agent:
    return ac.Agent(model.model, tools=[gate.tool(kw.pop("approval", False))],
                    session=SqliteSession(path, "chat"), **kw)


def close(*agents: ac.Agent) -> None:
    for each in agents:
        each.close()
        assert each.session is not None
        each.session.close()  # type: ignore[attr-defined]


def stored(path: Path) -> list[ac.AgentMessage]:
    with SqliteSession(path, "chat") as session:
        return session.load()


def test_a_second_agent_is_refused_while_the_first_runs_then_loads_its_messages(
        tmp_path: Path, model: ScriptedModel) -> None:
    path, gate = tmp_path / "chat.db", Gate()
    first, second = agent(path, model, gate), agent(path, model, gate)
    run = first.prompt("pay")
    assert gate.entered.wait(30)
    with pytest.raises(ac.SessionBusyError, match="this process holds its lease"):
        second.prompt("me too")
    with pytest.raises(ac.SessionBusyError):
        second.continue_()
    with pytest.raises(ac.SessionBusyError):
        second.reset()
    with pytest.raises(ac.AgentBusyError):  # SessionBusyError is an AgentBusyError
        second.messages = [ac.UserMessage("replaced")]
    assert not second.state.is_streaming
    assert second.messages == []
    gate.open.set()
    run.raise_for_error()
    assert [m.role for m in stored(path)] == ["user", "assistant", "toolResult", "assistant"]
    # the second agent, idle all along, takes the lease and first loads what the first stored
    second.prompt("again").raise_for_error()
    assert second.messages[:4] == first.messages
    assert second.messages[-1].text == "done after ['paid 1', 'paid 2']"
    assert stored(path) == second.messages
    assert gate.runs == ["pay-1", "pay-2"]
    close(first, second)


def test_lease_timeout_waits_for_the_holder_s_run_to_end(tmp_path: Path,
                                                           model: ScriptedModel) -> None:
    path, gate = tmp_path / "chat.db", Gate()
    first, second = agent(path, model, gate), agent(path, model, gate, lease_timeout=60)
    ended: list[str] = []
    first.subscribe(lambda event, signal: ended.append("first") if event.type == "agent_end"
                    else None)
    run = first.prompt("pay")
    assert gate.entered.wait(30)
    runs: list[ac.AgentRun] = []
    waiter = threading.Thread(target=lambda: runs.append(second.prompt("next")))
    waiter.start()
    gate.open.set()
    waiter.join(60)
    assert not waiter.is_alive()
    run.raise_for_error()
    assert ended == ["first"]  # the second run could start only once the first had ended
    runs[0].raise_for_error()
    assert second.messages[:4] == first.messages
    close(first, second)


def test_opening_a_session_that_another_agent_drives_repairs_nothing(
        tmp_path: Path, model: ScriptedModel) -> None:
    path, gate = tmp_path / "chat.db", Gate()
    first = agent(path, model, gate)
    run = first.prompt("pay")
    assert gate.entered.wait(30)
    # the call runs: the transcript holds the call without its result
    opened = agent(path, model, gate)
    assert [m.role for m in opened.messages] == ["user", "assistant"]
    assert [m.role for m in stored(path)] == ["user", "assistant"]  # nothing "interrupted"
    gate.open.set()
    run.raise_for_error()
    opened.prompt("next").raise_for_error()
    results = [m.text for m in opened.messages if isinstance(m, ac.ToolResultMessage)]
    assert results == ["paid 1", "paid 2"]  # the real result, loaded when the lease was taken
    close(first, opened)


def test_two_agents_resuming_one_pause_run_the_approved_call_once(
        tmp_path: Path, model: ScriptedModel) -> None:
    path, gate = tmp_path / "chat.db", Gate()
    gate.open.set()
    setup = agent(path, model, gate, approval=True)
    setup.prompt("pay").raise_for_error()
    assert [c.id for c in setup.state.pending_approvals] == ["pay-1"]
    close(setup)
    gate.open.clear()
    first = agent(path, model, gate, approval=True)
    second = agent(path, model, gate, approval=True)
    assert [c.id for c in second.state.pending_approvals] == ["pay-1"]
    run = first.continue_(approvals={"pay-1": True})
    assert gate.entered.wait(30)
    with pytest.raises(ac.SessionBusyError):
        second.continue_(approvals={"pay-1": True})
    gate.open.set()
    run.raise_for_error()
    # its pause was resumed elsewhere: the reloaded transcript has nothing waiting
    with pytest.raises(ValueError, match=r"nothing waits|no tool call waits|not waiting"):
        second.continue_(approvals={"pay-1": True})
    assert second.state.pending_approvals == []
    assert gate.runs == ["pay-1"]
    close(first, second)


def test_a_run_that_lost_its_lease_ends_in_error_and_stores_nothing_more(
        tmp_path: Path, model: ScriptedModel) -> None:
    path, gate = tmp_path / "chat.db", Gate()
    first = agent(path, model, gate)
    run = first.prompt("pay")
    assert gate.entered.wait(30)
    with sqlite3.connect(path) as db:  # its lease expired, and a holder elsewhere took it
        db.execute("UPDATE agentcore_leases SET token = 'elsewhere', host = 'elsewhere', "
                   "expires = ?", (time.time() + 3600,))
    gate.open.set()
    run.wait(30)
    assert run.error is not None
    assert "lost its lease" in run.error
    assert [m.role for m in stored(path)] == ["user", "assistant"]  # no half-run stored
    assert [m.role for m in first.messages][:3] == ["user", "assistant", "toolResult"]
    close(first)


def lease_row(path: Path, host: str, boot: str, pid: int, expires: float) -> None:
    with sqlite3.connect(path) as db:
        db.execute("INSERT OR REPLACE INTO agentcore_leases VALUES ('chat', 'held', ?, ?, ?, ?)",
                   (host, boot, pid, expires))


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@pytest.mark.parametrize(("host", "same_boot", "pid", "ttl", "busy"), [
    ("elsewhere", True, 1, 3600, True),  # another machine: its expiry alone tells
    ("elsewhere", True, 1, -1, False),  # ... and it expired
    ("here", True, "self", 3600, False),  # this process, which holds no such lease
    ("here", False, 1, 3600, False),  # this machine before it rebooted
    ("here", True, "parent", 3600, True),  # a live process of this machine
])
def test_a_dead_holder_s_lease_is_taken_over_at_once(tmp_path: Path, host: str,
                                                      same_boot: bool, pid: Any, ttl: float,
                                                      busy: bool) -> None:
    path = tmp_path / "chat.db"
    with SqliteSession(path, "chat") as session:
        number = os.getpid() if pid == "self" else os.getppid() if pid == "parent" else pid
        lease_row(path, socket.gethostname() if host == "here" else host,
                  boot_id() if same_boot else "another boot", number, time.time() + ttl)
        if busy:
            with pytest.raises(ac.SessionBusyError):
                session.lease(0)
        else:
            session.lease(0).release()


def test_agent_and_lease_arguments_are_checked(tmp_path: Path, model: ScriptedModel) -> None:
    with pytest.raises(ValueError, match="'lease_timeout'"):
        ac.Agent(model.model, lease_timeout=-1)
    with pytest.raises(TypeError, match="'lease_timeout'"):
        ac.Agent(model.model, lease_timeout="soon")
    with pytest.raises(TypeError, match="'lease_ttl'"):
        SqliteSession(tmp_path / "x.db", lease_ttl=0)
    with SqliteSession(tmp_path / "x.db") as session, \
            pytest.raises(TypeError, match="'timeout'"):
        session.lease(-1)


def test_a_lease_is_not_reentrant_and_released_once(tmp_path: Path) -> None:
    with SqliteSession(tmp_path / "x.db", "chat") as one, \
            SqliteSession(tmp_path / "x.db", "chat") as two:
        lease = one.lease()
        with pytest.raises(ac.SessionBusyError):
            one.lease()
        with pytest.raises(ac.SessionBusyError):
            two.lease()
        lease.release()
        lease.release()
        assert isinstance(lease, Lease)
        assert isinstance(one, SessionLease)
        again = two.lease()
        again.release()


def test_reload_loads_what_another_agent_stored(tmp_path: Path, model: ScriptedModel) -> None:
    path, gate = tmp_path / "chat.db", Gate()
    gate.open.set()
    first, second = agent(path, model, gate), agent(path, model, gate)
    first.prompt("pay").raise_for_error()
    assert second.messages == []
    second.reload()
    assert second.messages == first.messages
    gate.open.clear()
    gate.entered.clear()
    run = second.prompt("again")
    assert gate.entered.wait(30)
    with pytest.raises(ac.AgentBusyError):
        second.reload()
    first.reload()  # another agent runs: loaded as it is, its running call not repaired
    assert [m.role for m in first.messages][-2:] == ["user", "assistant"]
    gate.open.set()
    run.raise_for_error()
    first.reload()
    assert first.messages == second.messages
    plain = ac.Agent(model.model)
    plain.reload()  # without a session: nothing to load
    assert plain.messages == []
    close(first, second)
