"""Crash safety of sessions, proven (API §13, issue 15): SIGKILL a real agent mid-run, reload.

Each sample is a child process (forked by `tests/session_child.py serve`) running a real
`Agent` with a faux model and parallel tools, which SIGKILLs itself at a random moment of its
run (on its own clock, so the moment does not depend on how busy the machine is). Several
children run at once to fit the time budget. For every sample the session must load as a
prefix of the reference transcript (an un-killed run of the same script) ending at a message
boundary, hold every message the child had reported durable, answer the calls left without a
result from the session's journal (a call that finished: its real result; one that never
started: "did not run", and it did not; one that was running: "may have taken effect"), and
continue at once without running any completed tool call again.
"""

from __future__ import annotations

import os
import random
import selectors
import signal
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import paths
import pytest
from fork_servers import ForkServers
from session_child import PROMPT, gauge_tool, open_store

from agentcore import (
    Agent,
    AgentMessage,
    AssistantMessage,
    StopReason,
    ToolResultMessage,
    to_dict,
)
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
)

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX"),
              pytest.mark.slow]

CHILD = paths.TESTS / "session_child.py"
CONCURRENCY = 6
NOT_STARTED = "interrupted: the process ended before this tool call started; it did not run"
RUNNING = ("interrupted: the process ended while this tool call was running; it may have taken "
           "effect (idempotency key ")


@attrs.define
class Child:
    """One child process (forked by a server) and what it printed."""

    store: str  # a file, or `<DSN>#<session id>` (see `session_child.open_store`)
    side: Path
    kill: tuple[int, float] | None  # seconds after that many messages are stored; None: none
    lines: list[str] = attrs.field(factory=list)
    exit_code: int | None = None
    took: float | None = None  # what its `done` line says: seconds from `ready` to the end

    @property
    def killed(self) -> bool:
        return self.exit_code == -signal.SIGKILL

    @property
    def durable(self) -> int:
        """The most messages the child reported stored."""
        counts = [int(line.split()[1]) for line in self.lines if line.startswith("durable ")]
        return max(counts, default=0)


class Forks(ForkServers):
    """`CONCURRENCY` fork servers (`session_child.py serve`), shared by the module's tests: each
    runs one child at a time, forked from an interpreter that has imported agentcore already."""

    def __init__(self) -> None:
        super().__init__([sys.executable, str(CHILD), "serve"], CONCURRENCY)

    def run(self, kind: str, directory: Path, kills: list[tuple[int, float] | None],
            dsn: str = "") -> list[Child]:
        """Run one child per entry, `CONCURRENCY` at a time; each kills itself as its entry
        says (see `Child.kill`). Returns them in the order they ended. A child that hangs is
        caught by the tests' own `timeout` mark. Each child's store is a file of `directory`,
        or for `postgres` a session of the database `dsn` named after that file."""
        todo = [Child(_store(kind, directory / f"s{i}", dsn), directory / f"s{i}.side", kill)
                for i, kill in enumerate(kills)]
        running: dict[int, Child] = {}  # a server's stdout → the child it runs
        buffers: dict[int, bytes] = {}
        idle = list(self.servers)
        finished: list[Child] = []
        with selectors.DefaultSelector() as selector:
            for server in self.servers:
                assert server.stdout is not None
                selector.register(server.stdout, selectors.EVENT_READ)
                buffers[server.stdout.fileno()] = b""
            while todo or running:
                while todo and idle:
                    server, child = idle.pop(), todo.pop(0)
                    assert server.stdin is not None
                    assert server.stdout is not None
                    kill = "-" if child.kill is None else f"{child.kill[0]}:{child.kill[1]!r}"
                    server.stdin.write(f"{kind}\t{child.store}\t{child.side}\t{kill}\n".encode())
                    server.stdin.flush()
                    running[server.stdout.fileno()] = child
                for key, _ in selector.select(0.5):
                    data = os.read(key.fd, 65536)
                    assert data, "a fork server ended"
                    *whole, buffers[key.fd] = (buffers[key.fd] + data).split(b"\n")
                    for raw in whole:
                        child, line = running[key.fd], raw.decode()
                        if line.startswith("exit "):  # the server's, once it has reaped it
                            child.exit_code = int(line.split()[1])
                            finished.append(running.pop(key.fd))
                            idle.append(next(s for s in self.servers if s.stdout is not None
                                             and s.stdout.fileno() == key.fd))
                        elif line.startswith("done "):
                            child.took = float(line.split()[1])
                            child.lines.append(line)
                        else:
                            child.lines.append(line)
        return finished


def _store(kind: str, stem: Path, dsn: str) -> str:
    if kind == "postgres":
        return f"{dsn}#{stem}"
    return f"{stem}.{'db' if kind == 'sqlite' else 'jsonl'}"


@pytest.fixture(scope="module")
def forks() -> Iterator[Forks]:
    servers = Forks()
    try:
        yield servers
    finally:
        servers.close()


def _plain(messages: list[AgentMessage]) -> list[dict[str, Any]]:
    """Messages as dicts without their timestamps (the one thing two runs do not share)."""
    return [{k: v for k, v in d.items() if k != "timestamp"} for d in to_dict(messages)]


def _executed(side: Path) -> list[str]:
    """The tool call ids recorded as run, whole lines only (a kill may cut the last)."""
    if not side.exists():
        return []
    text = side.read_text()
    return text.split("\n")[:-1]


def _check_repair(raw: list[AgentMessage], loaded: list[AgentMessage],
                  reference: list[dict[str, Any]], executed: list[str], where: str) -> bool:
    """Check what loading added to `raw`: a result per call of the last batch lacking one, in
    the calls' order, each as the journal allows; True when there were such calls."""
    assert _plain(loaded[:len(raw)]) == _plain(raw), where
    added = loaded[len(raw):]
    last = next((m for m in reversed(raw) if isinstance(m, AssistantMessage)), None)
    answered = {m.tool_call_id for m in raw if isinstance(m, ToolResultMessage)}
    lacking = [] if last is None or last.stop_reason is not StopReason.TOOL_USE else [
        c.id for c in last.tool_calls if c.id not in answered]
    assert [getattr(m, "tool_call_id", None) for m in added] == lacking, where
    real = {d["toolCallId"]: d for d in reference if d["role"] == "toolResult"}
    for message in added:
        assert isinstance(message, ToolResultMessage)
        call_id, text = message.tool_call_id, message.text
        if text == NOT_STARTED:  # the journal never saw it start: it did not run
            assert message.is_error, where
            assert call_id not in executed, (where, call_id)
        elif text.startswith(RUNNING):  # its key: 32 hex digits, then ")"
            assert message.is_error, where
            assert len(text) == len(RUNNING) + 33, (where, text)
        else:  # it finished before the kill: its real result, from the journal
            assert _plain([message]) == [real[call_id]], where
            assert call_id in executed, (where, call_id)
    return bool(added)


def _assert_every_call_answered_once(messages: list[AgentMessage]) -> None:
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = Counter(m.tool_call_id for m in messages if isinstance(m, ToolResultMessage))
    assert sorted(results) == sorted(calls)
    assert set(results.values()) == {1}


def _reference(forks: Forks, kind: str, directory: Path, dsn: str,
               ) -> tuple[list[dict[str, Any]], float]:
    (directory / "reference").mkdir()
    [child] = forks.run(kind, directory / "reference", [None], dsn)
    assert child.exit_code == 0, child.lines
    assert child.took is not None, child.lines
    with open_store(kind, child.store) as session:
        transcript = session.load()
    assert child.durable == len(transcript) == 19
    _assert_every_call_answered_once(transcript)
    return _plain(transcript), child.took


def _check_sample(kind: str, child: Child, reference: list[dict[str, Any]],
                  faux: FauxProvider, number: int) -> bool:
    """Check one killed child's session; True when loading answered interrupted calls."""
    where = f"sample {child.side.stem} (killed: {child.killed}, durable {child.durable})"
    if kind == "sqlite":
        connection = sqlite3.connect(child.store)
        try:
            assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)], where
        finally:
            connection.close()
    with open_store(kind, child.store) as session:
        raw = session.load()
        plain = _plain(raw)
        # A valid prefix ending at a message boundary, holding everything reported durable.
        assert plain == reference[:len(plain)], where
        assert len(raw) >= child.durable, where
        executed_before = _executed(child.side)

        agent = Agent(faux.get_model(), tools=[gauge_tool(child.side)], session=session)
        # Calls left without a result are answered from the journal, at once and in the store.
        added = _check_repair(raw, agent.messages, reference, executed_before, where)
        assert _plain(session.load()) == _plain(agent.messages), where

        # The conversation goes on at once; no call that ran runs again.
        faux.set_responses([
            faux_assistant_message([faux_tool_call("gauge", {"name": "x", "ms": 1},
                                                   id=f"k{number}")]),
            faux_assistant_message("Resumed."),
        ])
        last = agent.messages[-1] if agent.messages else None
        run = agent.continue_() if last is not None and not isinstance(
            last, AssistantMessage) else agent.prompt(PROMPT)
        run.raise_for_error()
        assert run.text == "Resumed.", where
        _assert_every_call_answered_once(agent.messages)
        assert _plain(session.load()) == _plain(agent.messages), where
        executed = _executed(child.side)
        assert executed[:len(executed_before)] == executed_before
        assert executed[len(executed_before):] == [f"k{number}"], where
        assert [i for i, n in Counter(executed).items() if n > 1] == [], where
    return added


def _crash_samples(forks: Forks, kind: str, kills: int, tmp_path: Path,
                   faux: FauxProvider, dsn: str = "") -> None:
    reference, duration = _reference(forks, kind, tmp_path, dsn)
    rng = random.Random(kills)
    # Spread over the run by its progress: after 0, 1, ... 17 of its 19 messages are stored
    # (in turn), then a random delay of up to a sixteenth of the reference run (about 30 ms,
    # the time a tool batch takes).
    moments: list[tuple[int, float] | None] = [
        (n % 18, rng.uniform(0, duration / 16)) for n in range(kills)]
    children = forks.run(kind, tmp_path, moments, dsn)
    assert len(children) == kills
    interrupted = sum(_check_sample(kind, child, reference, faux, number)
                      for number, child in enumerate(children))
    killed = [c for c in children if c.killed]
    durable = Counter(c.durable for c in killed)
    # The kills really were spread over the run: from its first messages to its last turn,
    # with tool batches cut short among them. (Time passes at about a dozen points of the
    # 19 messages: the tool results of a batch end one right after another.)
    assert len(killed) >= kills * 0.8, f"only {len(killed)} of {kills} children were killed"
    assert len(durable) >= (8 if kills >= 36 else 5), durable
    assert min(durable) <= 2, durable
    assert max(durable) >= 15, durable
    assert interrupted >= kills // 10, interrupted


@pytest.mark.timeout(60)
def test_session_sqlite_survives_36_kills(forks: Forks, tmp_path: Path,
                                          faux: FauxProvider) -> None:
    _crash_samples(forks, "sqlite", 36, tmp_path, faux)  # each moment of the run twice


@pytest.mark.timeout(60)
def test_session_jsonl_survives_20_kills(forks: Forks, tmp_path: Path, faux: FauxProvider) -> None:
    _crash_samples(forks, "jsonl", 20, tmp_path, faux)


@pytest.mark.timeout(60)
def test_session_postgres_survives_18_kills(forks: Forks, tmp_path: Path, faux: FauxProvider,
                                            postgres_dsn: str) -> None:
    _crash_samples(forks, "postgres", 18, tmp_path, faux, postgres_dsn)  # each moment once
