"""Side effects across a crash (API §24), proven: SIGKILL a real agent mid-batch, reload.

Each sample is a child process (forked by `tests/idempotency_child.py serve`) running an
`Agent` with a `SqliteSession` through a parallel batch of calls of different lengths and a
sequential batch; every call logs `begin <id> <key>` first and `end <id>` last. The child
SIGKILLs itself at a seeded random moment of its batches. A fresh `Agent` in this process then
loads the session, and for every call of the transcript:

- `end` logged: its real result (when the journal had stored it) or "may have taken effect",
  never "did not run";
- `begin` logged without `end`: "may have taken effect", with the key the tool logged;
- no `begin`: "did not run", or "may have taken effect" (the journal stores a call's start
  just before the tool's first line runs: a kill in between leaves it so), never a result.

Every key is the one this process derives from the session and the call id: stable across
processes. Across the samples all three answers appear, and a real result that only the
journal had kept.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path

import paths
import pytest
from _internals import idempotency_key
from idempotency_child import PARALLEL, RESULT, SEQUENTIAL, step, work

from agentcore import Agent, AssistantMessage, SqliteSession, ToolResultMessage
from agentcore.testing import scripted_model

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX"),
              pytest.mark.slow]

CHILD = paths.TESTS / "idempotency_child.py"
NOT_STARTED = "interrupted: the process ended before this tool call started; it did not run"
RUNNING = ("interrupted: the process ended while this tool call was running; it may have taken "
           "effect (idempotency key {key})")
STARTS = [1, 5, 2, 6, 3, 7, 4, 8, 1, 5, 6, 7]
"""After which call's start each sample's kill comes: the parallel batch's four calls start
together (1..4), the sequential batch's one after another (5..8)."""


def _moments(rng: random.Random) -> list[tuple[int, float]]:
    """(n, seconds): kill that long after the n-th call started. The parallel batch's calls
    take up to 55 ms, the sequential batch's 15 ms each: a kill lands inside the batch, in
    the middle of a call."""
    return [(n, rng.uniform(0, 0.9 * (max(PARALLEL.values()) if n <= 4
                                      else min(SEQUENTIAL.values()))) / 1000)
            for n in STARTS]


def _log(path: Path) -> tuple[dict[str, str], set[str]]:
    """The calls that began (id -> the key they were given) and those that ended."""
    begun, ended = {}, set()
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        what, call_id, *key = line.split()
        if what == "begin":
            begun[call_id] = key[0]
        else:
            ended.add(call_id)
    return begun, ended


@pytest.mark.timeout(60)
def test_sigkill_mid_batch_tells_finished_running_and_never_started_calls_apart(
        tmp_path: Path) -> None:
    server = subprocess.Popen([sys.executable, str(CHILD), "serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    seen = {"real": 0, "journal only": 0, "running": 0, "began, running": 0, "did not run": 0}
    killed = 0
    try:
        assert server.stdin is not None
        assert server.stdout is not None
        for number, (n, seconds) in enumerate(_moments(random.Random(35))):
            store, log = tmp_path / f"s{number}.db", tmp_path / f"s{number}.log"
            server.stdin.write(f"{store}\t{log}\t{n}\t{seconds!r}\n")
            server.stdin.flush()
            code = int(server.stdout.readline().split()[1])
            assert code in (0, -signal.SIGKILL), code
            killed += code == -signal.SIGKILL
            where = f"sample {number} (kill {seconds * 1000:.1f} ms after start {n})"
            begun, ended = _log(log)
            with scripted_model(["carrying on"]) as fake, SqliteSession(store) as session:
                raw = session.load()
                agent = Agent(fake.model, tools=[work, step], session=session)
                calls = [c.id for m in agent.messages if isinstance(m, AssistantMessage)
                         for c in m.tool_calls]
                results = {m.tool_call_id: m for m in agent.messages
                           if isinstance(m, ToolResultMessage)}
                assert sorted(results) == sorted(calls), where  # every call answered, once
                assert set(begun) <= set(calls), where  # its reply was stored before it ran
                for call_id in calls:
                    key = idempotency_key(session.identity, call_id)
                    assert begun.get(call_id, key) == key, where  # the same in every process
                    message = results[call_id]
                    if message.text == RESULT.format(call_id=call_id):
                        assert not message.is_error
                        assert call_id in ended, (where, call_id)
                        seen["real"] += 1
                        seen["journal only"] += message not in raw
                    elif message.text == RUNNING.format(key=key):
                        assert message.is_error
                        seen["running"] += 1
                        seen["began, running"] += call_id in begun and call_id not in ended
                    else:
                        assert (message.text, message.is_error) == (NOT_STARTED, True), where
                        assert call_id not in begun, (where, call_id)
                        seen["did not run"] += 1
                    if call_id in begun and call_id not in ended:  # cut short: never "real"
                        assert message.text == RUNNING.format(key=key), (where, call_id)
                assert session.load() == agent.messages, where  # the repair is stored
                # The conversation goes on at once, and no call runs again.
                last = agent.messages[-1]
                if isinstance(last, ToolResultMessage):
                    assert agent.continue_().text == "carrying on", where
                assert _log(log) == (begun, ended), where
    finally:
        assert server.stdin is not None
        server.stdin.close()
        assert server.wait(timeout=10) == 0
        assert server.stdout is not None
        server.stdout.close()
    assert killed >= len(STARTS) - 2, killed
    assert all(seen.values()), seen
