"""Pending approvals are durable (API §20, issue 24): they survive the process, and SIGKILL.

Every step of a conversation runs in a child process of its own (`tests/approval_child.py`)
on one real SQLite session file: the prompt pauses for approval and the process exits; a new
process loads the session, sees the waiting calls and resumes them with its decisions; and so
on to the model's last answer. The tools log each start and end in a file, fsynced, so the
test counts the executions of every call across all processes.

The kill test SIGKILLs one step of each conversation at a random moment around a pause: before
the decisions are stored, in the window between the `ToolApprovalMessage` and the first call,
while the approved calls run, after they end. Fresh processes then drive the conversation to
its end, and the test checks that no call ran twice, none lost its result, none was answered
"interrupted" before its batch was decided, the denied call never ran, and the transcript
loads and continues.
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
    SCRIPT,
    conversation_over,
    scripted,
    tools,
)

from agentcore import (
    Agent,
    AgentMessage,
    AssistantMessage,
    SqliteSession,
    ToolApprovalMessage,
    ToolResultMessage,
)

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX"),
              pytest.mark.slow]

CHILD = paths.TESTS / "approval_child.py"
INTERRUPTED = "interrupted: the process ended before this tool call finished"
ROLES = ["user", "assistant", "toolApproval", "toolResult", "toolResult", "toolResult",
         "assistant", "toolApproval", "toolResult", "assistant"]
"""The finished conversation, whatever happened to the processes that made it."""
CONCURRENCY = 3
MAX_STEPS = 8


@attrs.define
class Step:
    """One child process (one step of a conversation) and what it printed."""

    process: subprocess.Popen[bytes]
    kill: tuple[str, float] | None  # (line prefix, seconds after it): when to SIGKILL
    lines: list[str] = attrs.field(factory=list)
    buffer: bytes = b""
    kill_at: float | None = None
    killed: bool = False

    def take(self, data: bytes) -> None:
        self.buffer += data
        *whole, self.buffer = self.buffer.split(b"\n")
        for raw in whole:
            line = raw.decode()
            self.lines.append(line)
            if (self.kill is not None and self.kill_at is None
                    and line.startswith(self.kill[0])):
                self.kill_at = time.monotonic() + self.kill[1]

    def line(self, prefix: str) -> str:
        return next(line for line in self.lines if line.startswith(prefix))


def _spawn(mode: str, store: Path, log: Path, kill: tuple[str, float] | None = None) -> Step:
    process = subprocess.Popen([sys.executable, str(CHILD), mode, str(store), str(log)],
                               stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    return Step(process, kill)


def _run_all(start: Callable[[], Step | None], on_exit: Callable[[Step], None],
             deadline_s: float) -> None:
    """Run steps from `start` (None: none for now), `CONCURRENCY` at a time, killing each at
    its moment; `on_exit(step)` once a step's process has exited. Every process is reaped."""
    running: dict[int, Step] = {}
    selector = selectors.DefaultSelector()
    deadline = time.monotonic() + deadline_s
    try:
        while True:
            while len(running) < CONCURRENCY and (step := start()) is not None:
                assert step.process.stdout is not None
                running[step.process.stdout.fileno()] = step
                selector.register(step.process.stdout, selectors.EVENT_READ)
            if not running:
                return
            assert time.monotonic() < deadline, "the children took too long"
            moments = [s.kill_at for s in running.values()
                       if s.kill_at is not None and not s.killed]
            timeout = max(0.0, min(moments) - time.monotonic()) if moments else 0.5
            for key, _ in selector.select(min(timeout, 0.5)):
                step = running[key.fd]
                data = os.read(key.fd, 65536)
                if data:
                    step.take(data)
                    continue
                selector.unregister(key.fileobj)
                step.process.wait(timeout=10)
                assert step.process.stdout is not None
                step.process.stdout.close()
                # Sent too late (the step had just ended), the signal killed nothing
                step.killed = step.process.returncode == -signal.SIGKILL
                del running[key.fd]
                on_exit(step)
            now = time.monotonic()
            for step in running.values():
                if step.kill_at is not None and not step.killed and now >= step.kill_at:
                    step.process.send_signal(signal.SIGKILL)
                    step.killed = True
    finally:
        for step in running.values():
            step.process.kill()
            step.process.wait(timeout=10)
            if step.process.stdout is not None:
                step.process.stdout.close()
        selector.close()


def _one(mode: str, store: Path, log: Path, kill: tuple[str, float] | None = None) -> Step:
    """Run one child to its end (or its kill)."""
    todo = [_spawn(mode, store, log, kill)]
    done: list[Step] = []
    _run_all(lambda: todo.pop() if todo else None, done.append, 20)
    [step] = done
    assert step.killed or step.process.returncode == 0, (step.lines, step.process.returncode)
    assert step.killed == (kill is not None), step.lines
    return step


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
    with scripted() as fake:
        agent = Agent(fake.model, tools=tools(Path(os.devnull)), messages=list(messages))
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
        if text == INTERRUPTED:
            # Only once its batch was decided: the batch's decisions precede its results.
            batch_decided = {"q1"} if call_id == "q1" else {"p1", "p2"}
            assert batch_decided <= seen_decision, (call_id, messages)
            assert message.is_error
        elif call_id == "p2":
            assert text == f"denied: {DECIDE['p2']}"
            assert message.is_error
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


def test_crash_repair_leaves_pending_approvals_alone(tmp_path: Path) -> None:
    store, log = tmp_path / "chat.db", tmp_path / "tools.log"
    child = _one("pause", store, log, kill=("paused", 0.0))
    assert child.process.returncode == -signal.SIGKILL
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

    def next_step(self) -> Step | None:
        if self.finished or self.busy:
            return None
        assert len(self.steps) < MAX_STEPS, [s.lines for s in self.steps]
        kill = self.kill if len(self.steps) == self.kill_step else None
        self.busy = True
        step = _spawn("step", self.store, self.log, kill)
        self.steps.append(step)
        return step

    def exited(self, step: Step) -> None:
        self.busy = False
        if step.killed:
            self.after_kill = _load(self.store)
            self.runs_after_kill = _executions(self.log)
            return
        assert step.process.returncode == 0, step.lines
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
    (0, "stored assistant", 0.01),  # the pause is stored; the run is ending
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


def _samples(directory: Path, count: int, rng: random.Random) -> list[Sample]:
    """`MOMENTS` each once, then random moments around the pauses."""
    moments = list(MOMENTS)
    while len(moments) < count:
        step = rng.choice([0, 1, 1, 2])
        prefix = rng.choice({0: ["ready", "stored user", "stored assistant"],
                             1: ["ready", "stored toolApproval", "start", "end",
                                 "stored toolResult"],
                             2: ["ready", "stored toolApproval", "start q1"]}[step])
        moments.append((step, prefix, rng.uniform(0, 0.05)))
    return [Sample(n, directory, step, (prefix, delay))
            for n, (step, prefix, delay) in enumerate(moments)]


@pytest.mark.timeout(60)
def test_sigkill_around_the_pause_runs_no_call_twice_and_loses_none(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 26, random.Random(24))
    owner: dict[int, Sample] = {}

    def start() -> Step | None:
        for sample in samples:
            step = sample.next_step()
            if step is not None:
                owner[id(step)] = sample
                return step
        return None

    _run_all(start, lambda step: owner.pop(id(step)).exited(step), deadline_s=50)

    windows: Counter[str] = Counter()
    for sample in samples:
        assert sample.finished, [s.lines for s in sample.steps]
        killed = [s for s in sample.steps if s.killed]
        if killed:
            windows[_window(sample)] += 1
        _check_finished(sample.store, sample.log)
    # The kills landed around the pause, in each of its windows.
    print(windows)
    assert sum(windows.values()) >= len(samples) * 0.8, windows
    for window in ("paused", "decided, none started", "running", "ran, not stored"):
        assert windows[window] >= 1, windows


def _window(sample: Sample) -> str:
    """Where the kill of `sample` landed, from what it left on disk."""
    messages = sample.after_kill
    assert messages is not None
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
