"""A child agent's pause for approval survives SIGKILL (API §25), on a real SQLite file.

Each sample runs a conversation step by step in processes of its own
(`tests/subagent_pause_child.py`): the prompt, which pauses when the child's `pay` waits for
approval, and the resume, which approves it. Either step may be SIGKILLed at a random moment
(seeded) once the process is ready: it lingers after its step until the test closes its
stdin, so a step meant to be killed always is, mid-step or after it. This process then loads
the session and drives the conversation to its end, as a restarted application would.
Across every process, `pay` runs at most once, never without its approval, and the
conversation always ends with the boss's answer.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import paths
import pytest
from subagent_pause_child import PAY_ID, build, models

import agentcore as ac
from agentcore.sessions import SqliteSession

CHILD = paths.TESTS / "subagent_pause_child.py"
SAMPLES = 4


def step(db: Path, side: Path, name: str, kill_after: float | None) -> str:
    """Run one step in a child process; SIGKILL it `kill_after` seconds after it is ready."""
    process = subprocess.Popen([sys.executable, str(CHILD), str(db), str(side), name],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    if kill_after is None:
        _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        return "done"
    try:  # the child lingers until its stdin closes, so this always times out
        process.wait(timeout=kill_after)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        return "killed"
    _, err = process.communicate(timeout=30)
    raise AssertionError(f"the step exited on its own ({process.returncode}): {err}")


def finish_here(db: Path, side: Path) -> list[ac.AgentMessage]:
    """Drive the stored conversation to its end in this process; its transcript."""
    child, parent = models()
    with child, parent, SqliteSession(db, "chat") as session:
        agent = build(child.model, parent.model, side, session)
        for _ in range(4):
            messages = agent.messages
            last = messages[-1] if messages else None
            if agent.state.pending_approvals:
                agent.continue_(approvals={PAY_ID: True}).wait()
            elif last is None:
                agent.prompt("go").wait()
            elif isinstance(last, ac.AssistantMessage) and not last.tool_calls:
                break
            else:
                agent.continue_().wait()
        transcript = agent.messages
        agent.close()
    return transcript


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_around_a_child_s_pause_runs_pay_at_most_once(tmp_path: Path) -> None:
    rng = random.Random(36)
    seen: Counter[str] = Counter()
    for sample in range(SAMPLES):
        db, side = tmp_path / f"chat{sample}.db", tmp_path / f"pay{sample}.log"
        for name in ("prompt", "resume"):
            window = 0.3 if name == "prompt" else 0.1  # a resume has less left to do
            kill_after = rng.uniform(0.0, window) if sample % 3 else None
            seen[f"{name}:{step(db, side, name, kill_after)}"] += 1
        transcript = finish_here(db, side)
        log = side.read_text(encoding="utf-8").split() if side.exists() else []
        starts = log.count("start")
        assert starts <= 1, (sample, log)  # never twice, across every process
        final = transcript[-1]
        assert isinstance(final, ac.AssistantMessage)
        assert final.text.startswith("boss: "), (sample, final)
        result = next(m for m in transcript if isinstance(m, ac.ToolResultMessage))
        if result.text == "child: paid 5":
            assert starts == 1
        seen["paid" if starts else "not paid"] += 1
        # the child's transcript is kept beside the parent's, under <session id>/<call id>
        # (when the child answered: a kill before its first message leaves the call
        # "interrupted", its child never having stored anything)
        if result.text.startswith("child: "):
            with SqliteSession(db) as store:
                assert "chat/c1" in store.session_ids()
    assert seen["prompt:done"]
    assert seen["resume:done"]
    assert seen["prompt:killed"] + seen["resume:killed"] > 0
    assert seen["paid"] > 0
