"""Pending approvals are durable (API §20, issue 24): they survive the process, and SIGKILL.

Every step of a conversation runs in a child process of its own (`tests/approval_child.py`)
on one real SQLite session file: the prompt pauses for approval and the process exits; a new
process loads the session, sees the waiting calls and resumes them with its decisions; and so
on to the model's last answer. The tools log each start and end in a file, fsynced, so the
test counts the executions of every call across all processes.

The kill test SIGKILLs one step of each conversation at a random moment around a pause: before
the decisions are stored, in the window between the `ToolApprovalMessage` and the first call,
while the approved calls run, after they end. (Each sample starts from what a reference
conversation, run step by step in child processes, had stored before that step: only the
steps from the kill on are run again.) Fresh processes then drive the conversation to its end,
and the test checks that no call ran twice, none lost its result, none was answered
"interrupted" before its batch was decided, the denied call never ran and got its denial, and
the transcript loads and continues.
"""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import attrs
import paths
import pytest
from approval_child import (
    DECIDE,
    FINAL,
    NEEDS_APPROVAL,
    PROMPT,
    SCRIPT,
    conversation_over,
    scripted,
    tools,
)
from fork_servers import ForkServers

from agentcore import (
    Agent,
    AgentMessage,
    AssistantMessage,
    SqliteSession,
    ToolApprovalMessage,
    ToolResultMessage,
)

posix = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

CHILD = paths.TESTS / "approval_child.py"
NOT_STARTED = "interrupted: the process ended before this tool call started; it did not run"
RUNNING = ("interrupted: the process ended while this tool call was running; it may have taken "
           "effect (idempotency key ")
ROLES = ["user", "assistant", "toolApproval", "toolResult", "toolResult", "toolResult",
         "assistant", "toolApproval", "toolResult", "assistant"]
"""The finished conversation, whatever happened to the processes that made it."""
CONCURRENCY = 3
MAX_STEPS = 8
KILLS = 20


@attrs.define
class Step:
    """One step of a conversation (one child process) and what it printed."""

    kill: tuple[str, float] | None = None  # (line prefix, seconds after it): when it dies
    lines: list[str] = attrs.field(factory=list)
    returncode: int | None = None  # once it has ended

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL

    def take(self, line: str) -> None:
        self.lines.append(line)

    def line(self, prefix: str) -> str:
        return next(line for line in self.lines if line.startswith(prefix))


def _one(mode: str, store: Path, log: Path, kill_on: str | None = None) -> Step:
    """Run one child, a new interpreter, to its end, or SIGKILL it once it prints `kill_on`."""
    process = subprocess.Popen([sys.executable, str(CHILD), mode, str(store), str(log)],
                               stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    step = Step()
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            step.take(raw.decode().rstrip("\n"))
            if step.lines[-1] == kill_on:
                process.send_signal(signal.SIGKILL)
        step.returncode = process.wait(timeout=10)
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
    assert step.returncode == (0 if kill_on is None else -signal.SIGKILL), step.lines
    return step


class Forks(ForkServers):
    """`CONCURRENCY` fork servers (`approval_child.py serve`): each takes one step at a time and
    forks a new process for it, so that a step costs no interpreter start.

    `run(next_step, exited)` asks `next_step()` for (store, log, step) of a step to run (None:
    none now), runs each (a step with a `kill` SIGKILLs itself at that moment, on its own
    clock), and calls `exited(step)` when it has ended.
    """

    def __init__(self) -> None:
        super().__init__([sys.executable, str(CHILD), "serve", "-", "-"], CONCURRENCY)

    def run(self, next_step: Callable[[], tuple[Path, Path, Step] | None],
            exited: Callable[[Step], None], deadline_s: float) -> None:
        steps: dict[int, Step] = {}  # the server's stdout → the step it runs
        buffers = {s.stdout.fileno(): b"" for s in self.servers if s.stdout is not None}
        idle = list(self.servers)
        deadline = time.monotonic() + deadline_s
        with selectors.DefaultSelector() as selector:
            for server in self.servers:
                assert server.stdout is not None
                selector.register(server.stdout, selectors.EVENT_READ)
            while True:
                while idle and (todo := next_step()) is not None:
                    server = idle.pop()
                    store, log, step = todo
                    assert server.stdin is not None
                    assert server.stdout is not None
                    kill = "" if step.kill is None else f"\t{step.kill[0]}\t{step.kill[1]!r}"
                    server.stdin.write(f"{store}\t{log}{kill}\n".encode())
                    server.stdin.flush()
                    steps[server.stdout.fileno()] = step
                if not steps:
                    return
                assert time.monotonic() < deadline, [s.lines for s in steps.values()]
                for key, _ in selector.select(0.5):
                    data = os.read(key.fd, 65536)
                    assert data, "a fork server ended"
                    *whole, buffers[key.fd] = (buffers[key.fd] + data).split(b"\n")
                    for raw in whole:
                        step, line = steps[key.fd], raw.decode()
                        if line.startswith("pid "):  # the step's own first line
                            continue
                        if line.startswith("exit "):  # the server's, once it is reaped
                            step.returncode = int(line.split()[1])
                            del steps[key.fd]
                            idle.append(next(s for s in self.servers
                                             if s.stdout is not None
                                             and s.stdout.fileno() == key.fd))
                            exited(step)
                        else:
                            step.take(line)


def _executions(log: Path) -> Counter[tuple[str, str]]:
    """(`start`|`end`, call id) → how often the log says so (whole lines only)."""
    if not log.exists():
        return Counter()
    lines = log.read_text().split("\n")[:-1]
    return Counter((kind, call_id) for kind, call_id, _pid in (ln.split() for ln in lines))


def _load(store: Path) -> list[AgentMessage]:
    """The session's transcript as stored (no repair: that is `Agent`'s)."""
    with SqliteSession(store) as session:
        return session.load()


def _pending_ids(messages: list[AgentMessage]) -> list[str]:
    """The calls waiting for approval at the end of `messages` (an agent without a session:
    nothing repaired)."""
    with (scripted() as fake,
          Agent(fake.model, tools=tools(Path(os.devnull)), messages=list(messages)) as agent):
        return [c.id for c in agent.state.pending_approvals]


def _text(message: ToolResultMessage) -> str:
    return "".join(getattr(block, "text", "") for block in message.content)


def _check_finished(store: Path, log: Path) -> None:
    """The invariants of a conversation driven to its end, whatever was killed on the way."""
    messages = _load(store)
    assert [m.role for m in messages] == ROLES
    last = messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.text == FINAL
    runs = _executions(log)
    # No call ran twice, across all processes; the denied one never ran.
    assert max(runs.values(), default=0) == 1, runs
    assert ("start", "p2") not in runs
    # Each batch was decided once, with the person's decisions; never a call left undecided.
    decided = [m for m in messages if isinstance(m, ToolApprovalMessage)]
    assert [(m.approved, m.denied) for m in decided] == [(["p1"], {"p2": DECIDE["p2"]}),
                                                         (["q1"], {})]
    # Every call has exactly one result.
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert sorted(r.tool_call_id for r in results) == sorted(calls) == ["p1", "p2", "q1", "r1"]
    seen_decision: set[str] = set()
    for message in messages:
        if isinstance(message, ToolApprovalMessage):
            seen_decision.update(message.approved, message.denied)
        if not isinstance(message, ToolResultMessage):
            continue
        call_id, text = message.tool_call_id, _text(message)
        ran = runs[("start", call_id)]
        if call_id == "p2":  # denied: its denial, even when a kill cut its batch short
            assert text == f"denied: {DECIDE['p2']}"
            assert message.is_error
        elif text == NOT_STARTED or text.startswith(RUNNING):
            # Only once its batch was decided: the batch's decisions precede its results.
            batch_decided = {"q1"} if call_id == "q1" else {"p1", "p2"}
            assert batch_decided <= seen_decision, (call_id, messages)
            assert message.is_error
            if text == NOT_STARTED:  # the journal never saw it start: it did not
                assert ran == 0, (call_id, runs)
        else:  # a real result: the call ran exactly once, to its end
            assert text == f"{call_id}: ok"
            assert not message.is_error
            assert (ran, runs[("end", call_id)]) == (1, 1), (call_id, runs)
        if call_id in NEEDS_APPROVAL and ran:
            assert call_id in seen_decision  # it ran after its approval was stored
    # The transcript loads as it is (nothing to repair, nothing waiting) and continues.
    with scripted() as fake, SqliteSession(store) as session:
        agent = Agent(fake.model, tools=tools(log), session=session)
        try:
            assert agent.messages == messages
            assert agent.state.pending_approvals == []
            run = agent.prompt("Thanks!")
            run.raise_for_error()
            assert run.text == SCRIPT[3]
            assert [m.role for m in session.load()] == [*ROLES, "user", "assistant"]
        finally:
            agent.close()


def _transcript(*extra: AgentMessage) -> list[AgentMessage]:
    """The conversation up to its first pause, then `extra`."""
    with scripted() as fake, Agent(fake.model, tools=tools(Path(os.devnull))) as agent:
        agent.prompt(PROMPT).raise_for_error()
        return [*agent.messages, *extra]


def test_crash_repair_gives_a_denied_call_its_denial(tmp_path: Path) -> None:
    # Killed after the decisions were stored, before any result: the denied call never ran,
    # and says so; the approved ones are "interrupted", and as the session's journal holds no
    # start of theirs, they did not run (and never run again).
    decided = ToolApprovalMessage(["p1"], {"p2": "not b"})
    cases: list[tuple[list[AgentMessage], list[str]]] = [
        ([], []),  # paused: nothing to repair
        ([decided], ["p1", "p2", "r1"]),
        ([decided, ToolResultMessage("r1", "look", [])], ["p1", "p2"]),
    ]
    for before, results in cases:
        store = tmp_path / f"{len(before)}.db"
        with SqliteSession(store) as session:
            session.append(_transcript(*before))
        with (scripted() as fake, SqliteSession(store) as session,
              Agent(fake.model, tools=tools(tmp_path / "log"), session=session) as agent):
            added = agent.messages[2 + len(before):]
            assert session.load() == agent.messages  # the repair is stored
            waiting = agent.state.pending_approvals
        assert [(m.tool_call_id, _text(m), m.is_error) for m in added
                if isinstance(m, ToolResultMessage)] == [
            (call_id, "denied: not b" if call_id == "p2" else NOT_STARTED, True)
            for call_id in results]
        assert [c.id for c in waiting] == ([] if before else ["p1", "p2"])


@posix
@pytest.mark.slow
def test_a_new_process_sees_pending_approvals_and_resumes_them(tmp_path: Path) -> None:
    store, log = tmp_path / "chat.db", tmp_path / "tools.log"
    first = _one("step", store, log)
    assert first.lines[-2:] == ["pending p1:deploy p2:deploy", "ran"]
    assert not log.exists()  # nothing ran: the whole batch waits, `look` (r1) included
    assert [m.role for m in _load(store)] == ["user", "assistant"]

    second = _one("step", store, log)  # a new process: the calls still wait, and resume
    assert second.lines[:2] == ["ready 2", "pending p1:deploy p2:deploy"]
    assert second.lines[2] == "stored toolApproval 3"
    assert second.lines[-2:] == ["pending q1:deploy", "ran"]
    assert _executions(log) == Counter({("start", "p1"): 1, ("end", "p1"): 1,
                                        ("start", "r1"): 1, ("end", "r1"): 1})

    third = _one("step", store, log)
    assert third.lines[:2] == ["ready 7", "pending q1:deploy"]
    assert third.lines[-2:] == ["pending ", "ran"]
    assert _one("step", store, log).lines == ["ready 10", "pending ", "idle"]
    _check_finished(store, log)


@posix
@pytest.mark.slow
def test_crash_repair_leaves_pending_approvals_alone(tmp_path: Path) -> None:
    store, log = tmp_path / "chat.db", tmp_path / "tools.log"
    _one("pause", store, log, kill_on="paused")
    stored = _load(store)
    assert [m.role for m in stored] == ["user", "assistant"]

    with scripted() as fake, SqliteSession(store) as session:
        agent = Agent(fake.model, tools=tools(log), session=session)
        try:
            assert agent.messages == stored  # no "interrupted" result added...
            assert session.load() == stored  # ...nor stored
            assert [c.id for c in agent.state.pending_approvals] == ["p1", "p2"]
            with pytest.raises(ValueError, match="wait for approval"):
                agent.prompt("Something else")
        finally:
            agent.close()
    # And a new process still finds them, and the conversation goes on to its end.
    steps = [_one("step", store, log) for _ in range(3)]
    assert steps[0].lines[:2] == ["ready 2", "pending p1:deploy p2:deploy"]
    assert steps[1].lines[-2:] == ["pending ", "ran"]
    assert steps[2].lines[-1] == "idle"
    _check_finished(store, log)


@attrs.define
class Sample:
    """One conversation whose step `kill_step` is killed at `kill`; fresh steps then finish
    it."""

    number: int
    directory: Path
    kill_step: int
    kill: tuple[str, float]
    steps: list[Step] = attrs.field(factory=list)
    after_kill: list[AgentMessage] | None = None  # the transcript the killed step left
    runs_after_kill: Counter[tuple[str, str]] = attrs.field(factory=Counter)  # and the log
    finished: bool = False
    busy: bool = False

    @property
    def store(self) -> Path:
        return self.directory / f"s{self.number}.db"

    @property
    def log(self) -> Path:
        return self.directory / f"s{self.number}.log"

    def next_step(self) -> tuple[Path, Path, Step] | None:
        if self.finished or self.busy:
            return None
        assert len(self.steps) < MAX_STEPS, [s.lines for s in self.steps]
        self.busy = True
        self.steps.append(Step(self.kill if len(self.steps) == self.kill_step else None))
        return self.store, self.log, self.steps[-1]

    def exited(self, step: Step) -> None:
        self.busy = False
        if step.killed:  # (a kill sent as the step ended killed nothing)
            self.after_kill = _load(self.store)
            self.runs_after_kill = _executions(self.log)
            return
        assert step.returncode == 0, step.lines
        if conversation_over(_load(self.store)):  # the model has answered: no step left to take
            self.finished = True
        previous = self.steps[-2] if len(self.steps) > 1 else None
        if previous is not None and previous.killed:
            # The step after the kill found every call that waited there still waiting.
            assert self.after_kill is not None
            pending = " ".join(f"{i}:{'look' if i == 'r1' else 'deploy'}"
                               for i in _pending_ids(self.after_kill))
            assert step.line("pending ") == f"pending {pending}", (step.lines, self.after_kill)


# Where to kill, in the steps of an undisturbed conversation (`ready` comes before anything
# else; the listener lingers `DECIDED_S` after `stored toolApproval`; tools take 25-40 ms).
MOMENTS: list[tuple[int, str, float]] = [
    (0, "ready", 0.0),  # prompting
    (1, "ready", 0.0),  # loaded the pending calls, deciding
    (1, "stored toolApproval", 0.0),  # decided, no call started
    (1, "stored toolApproval", 0.005),
    (1, "start p1", 0.01),  # the approved call runs
    (1, "end r1", 0.0),  # one call done, the other running
    (1, "end p1", 0.0),  # both done, their results not yet stored
    (1, "stored toolResult", 0.0),
    (1, "stored assistant", 0.0),  # the second pause is stored
    (2, "ready", 0.0),
    (2, "stored toolApproval", 0.0),
    (2, "start q1", 0.02),
    (2, "end q1", 0.0),
]


RANDOM_MOMENTS: list[tuple[int, str, float]] = [
    (0, "ready", 0.01), (0, "stored user", 0.005),
    (1, "ready", 0.02), (1, "stored toolApproval", 0.025), (1, "start", 0.035),
    (1, "end", 0.005), (1, "stored toolResult", 0.002),
    (2, "ready", 0.02), (2, "stored toolApproval", 0.025), (2, "start q1", 0.04),
]
"""Step, line, and the longest delay after it that still finds the step running."""


def _samples(directory: Path, count: int, rng: random.Random) -> list[Sample]:
    """`MOMENTS` each once, then random moments around the pauses."""
    moments = list(MOMENTS)
    while len(moments) < count:
        step, prefix, longest = rng.choice(RANDOM_MOMENTS)
        moments.append((step, prefix, rng.uniform(0, longest)))
    return [Sample(n, directory, step, (prefix, delay))
            for n, (step, prefix, delay) in enumerate(moments)]


@posix
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_sigkill_around_the_pause_runs_no_call_twice_and_loses_none(tmp_path: Path) -> None:
    samples = _samples(tmp_path, KILLS, random.Random(24))
    owner: dict[int, Sample] = {}

    def next_step() -> tuple[Path, Path, Step] | None:
        for sample in samples:
            todo = sample.next_step()
            if todo is not None:
                owner[id(todo[2])] = sample
                return todo
        return None

    forks = Forks()
    try:
        forks.run(next_step, lambda step: owner.pop(id(step)).exited(step), deadline_s=40)
    finally:
        forks.close()

    windows: Counter[str] = Counter()
    for sample in samples:
        assert sample.finished, [s.lines for s in sample.steps]
        killed = [s for s in sample.steps if s.killed]
        if killed:
            windows[_window(sample)] += 1
        _check_finished(sample.store, sample.log)
    # The kills landed around the pause, in each of its windows.
    assert sum(windows.values()) >= len(samples) * 0.8, windows
    for window in ("paused", "decided, none started", "running", "ran, not stored"):
        assert windows[window] >= 1, windows


def _window(sample: Sample) -> str:
    """Where the kill of `sample` landed, from what it left on disk."""
    messages = sample.after_kill
    assert messages is not None
    if not any(isinstance(m, AssistantMessage) for m in messages):
        return "before the pause"
    if _pending_ids(messages):
        return "paused"
    runs = sample.runs_after_kill
    started = {i for kind, i in runs if kind == "start"}
    ended = {i for kind, i in runs if kind == "end"}
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    if messages and isinstance(messages[-1], ToolApprovalMessage):
        batch = set(messages[-1].approved) | {"r1"} if "p1" in messages[-1].approved else {"q1"}
        if not batch & started:
            return "decided, none started"
    if started - ended:
        return "running"
    if ended - answered:
        return "ran, not stored"
    return "between"
