"""Crash safety of sessions, proven (API §13, issue 15): SIGKILL a real agent mid-run, reload.

Each sample is a child process (`tests/session_child.py run`) running a real `Agent` with a
faux model and parallel tools, killed with SIGKILL at a random moment of its run. Several
children run at once to fit the time budget. For every sample the session must load as a
prefix of the reference transcript (an un-killed run of the same script) ending at a message
boundary, hold every message the child had reported durable, answer the calls left without a
result with the "interrupted" error result, and continue at once without running any
completed tool call again.
"""

from __future__ import annotations

import os
import random
import selectors
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import paths
import pytest
from session_child import PROMPT, gauge_tool, open_store

from agentcore import (
    Agent,
    AgentMessage,
    AssistantMessage,
    StopReason,
    TextContent,
    ToolResultMessage,
    to_dict,
)
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
)

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX"),
              pytest.mark.slow, pytest.mark.alone]

CHILD = paths.TESTS / "session_child.py"
CONCURRENCY = 6
INTERRUPTED = "interrupted: the process ended before this tool call finished"


@attrs.define
class Child:
    """One child process and what it printed."""

    process: subprocess.Popen[bytes]
    store: Path
    side: Path
    kill_after: float | None  # seconds after `ready`; None: let it finish
    buffer: bytes = b""
    lines: list[str] = attrs.field(factory=list)
    ready_at: float | None = None
    done_at: float | None = None
    killed: bool = False

    @property
    def durable(self) -> int:
        """The most messages the child reported stored."""
        counts = [int(line.split()[1]) for line in self.lines if line.startswith("durable ")]
        return max(counts, default=0)


def _spawn(kind: str, directory: Path, name: str, kill_after: float | None) -> Child:
    store = directory / f"{name}.{'db' if kind == 'sqlite' else 'jsonl'}"
    side = directory / f"{name}.side"
    process = subprocess.Popen(
        [sys.executable, str(CHILD), "run", kind, str(store), str(side)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )
    return Child(process, store, side, kill_after)


def _run_children(kind: str, directory: Path, kill_afters: list[float | None],
                  deadline_s: float = 50.0) -> list[Child]:
    """Run one child per entry, `CONCURRENCY` at a time; kill each `kill_after` s after ready.

    Every child is reaped before this returns, whatever happens.
    """
    todo = list(enumerate(kill_afters))
    running: dict[int, Child] = {}
    finished: list[Child] = []
    selector = selectors.DefaultSelector()
    deadline = time.monotonic() + deadline_s
    try:
        while todo or running:
            assert time.monotonic() < deadline, "the children took too long"
            while todo and len(running) < CONCURRENCY:
                index, kill_after = todo.pop(0)
                child = _spawn(kind, directory, f"s{index}", kill_after)
                assert child.process.stdout is not None
                running[child.process.stdout.fileno()] = child
                selector.register(child.process.stdout, selectors.EVENT_READ)
            now = time.monotonic()
            moments = [c.ready_at + c.kill_after for c in running.values()
                       if c.ready_at is not None and c.kill_after is not None and not c.killed]
            timeout = max(0.0, min(moments) - now) if moments else 0.5
            for key, _ in selector.select(min(timeout, 0.5)):
                fd = key.fd
                child = running[fd]
                data = os.read(fd, 65536)
                if data:
                    _take_lines(child, data)
                    continue
                selector.unregister(key.fileobj)
                child.process.wait(timeout=10)
                assert child.process.stdout is not None
                child.process.stdout.close()
                finished.append(running.pop(fd))
            now = time.monotonic()
            for child in running.values():
                if (child.ready_at is not None and child.kill_after is not None
                        and not child.killed and now >= child.ready_at + child.kill_after):
                    child.process.send_signal(signal.SIGKILL)
                    child.killed = True
    finally:
        for child in running.values():
            child.process.kill()
            child.process.wait(timeout=10)
            if child.process.stdout is not None:
                child.process.stdout.close()
        selector.close()
    return finished


def _take_lines(child: Child, data: bytes) -> None:
    child.buffer += data
    *whole, child.buffer = child.buffer.split(b"\n")
    for raw in whole:
        line = raw.decode()
        child.lines.append(line)
        if line == "ready":
            child.ready_at = time.monotonic()
        elif line == "done":
            child.done_at = time.monotonic()


def _plain(messages: list[AgentMessage]) -> list[dict[str, Any]]:
    """Messages as dicts without their timestamps (the one thing two runs do not share)."""
    return [{k: v for k, v in d.items() if k != "timestamp"} for d in to_dict(messages)]


def _executed(side: Path) -> list[str]:
    """The tool call ids recorded as run, whole lines only (a kill may cut the last)."""
    if not side.exists():
        return []
    text = side.read_text()
    return text.split("\n")[:-1]


def _interrupted_results(raw: list[AgentMessage]) -> list[dict[str, Any]]:
    """What loading must add to `raw`: an error result per call of the last batch lacking one."""
    last = next((m for m in reversed(raw) if isinstance(m, AssistantMessage)), None)
    if last is None or last.stop_reason is not StopReason.TOOL_USE:
        return []
    answered = {m.tool_call_id for m in raw if isinstance(m, ToolResultMessage)}
    return _plain([ToolResultMessage(c.id, c.name, [TextContent(INTERRUPTED)], is_error=True)
                   for c in last.tool_calls if c.id not in answered])


def _assert_every_call_answered_once(messages: list[AgentMessage]) -> None:
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = Counter(m.tool_call_id for m in messages if isinstance(m, ToolResultMessage))
    assert sorted(results) == sorted(calls)
    assert set(results.values()) == {1}


def _reference(kind: str, directory: Path) -> tuple[list[dict[str, Any]], float]:
    (directory / "reference").mkdir()
    [child] = _run_children(kind, directory / "reference", [None])
    assert child.ready_at is not None, child.lines
    assert child.done_at is not None, child.lines
    with open_store(kind, str(child.store)) as session:
        transcript = session.load()
    assert child.durable == len(transcript) == 19
    _assert_every_call_answered_once(transcript)
    return _plain(transcript), child.done_at - child.ready_at


def _check_sample(kind: str, child: Child, reference: list[dict[str, Any]],
                  faux: FauxProvider, number: int) -> bool:
    """Check one killed child's session; True when loading answered interrupted calls."""
    where = f"sample {child.store.name} (killed: {child.killed}, durable {child.durable})"
    if kind == "sqlite":
        connection = sqlite3.connect(child.store)
        try:
            assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)], where
        finally:
            connection.close()
    with open_store(kind, str(child.store)) as session:
        raw = session.load()
        plain = _plain(raw)
        # A valid prefix ending at a message boundary, holding everything reported durable.
        assert plain == reference[:len(plain)], where
        assert len(raw) >= child.durable, where
        executed_before = _executed(child.side)

        agent = Agent(faux.get_model(), tools=[gauge_tool(child.side)], session=session)
        # Calls left without a result are answered "interrupted", at once and in the store.
        added = _interrupted_results(raw)
        assert _plain(agent.messages) == plain + added, where
        assert _plain(session.load()) == plain + added, where

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
    return bool(added)


def _crash_samples(kind: str, kills: int, tmp_path: Path, faux: FauxProvider) -> None:
    reference, duration = _reference(kind, tmp_path)
    rng = random.Random(kills)
    # Spread over the run; children running side by side are slower than the lone reference.
    kill_afters: list[float | None] = [rng.uniform(0, duration * 1.2) for _ in range(kills)]
    children = _run_children(kind, tmp_path, kill_afters)
    assert len(children) == kills
    interrupted = sum(_check_sample(kind, child, reference, faux, number)
                      for number, child in enumerate(children))
    killed = [c for c in children if c.killed]
    durable = Counter(c.durable for c in killed)
    # The kills really were spread over the run: from its first messages to its last turn,
    # with tool batches cut short among them. (Time passes at about a dozen points of the
    # 19 messages: the tool results of a batch end one right after another.)
    assert len(killed) >= kills * 0.8, f"only {len(killed)} of {kills} children were killed"
    assert len(durable) >= (8 if kills >= 50 else 5), durable
    assert min(durable) <= 2, durable
    assert max(durable) >= 15, durable
    assert interrupted >= kills // 10, interrupted


@pytest.mark.timeout(60)
def test_session_sqlite_survives_100_kills(tmp_path: Path, faux: FauxProvider) -> None:
    _crash_samples("sqlite", 100, tmp_path, faux)


@pytest.mark.timeout(60)
def test_session_jsonl_survives_20_kills(tmp_path: Path, faux: FauxProvider) -> None:
    _crash_samples("jsonl", 20, tmp_path, faux)
