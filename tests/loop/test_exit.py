"""Interpreter exit with a run in flight (API §11), in real child processes.

The child starts an `Agent` run and lets its main thread end. Without Ctrl-C the interpreter
finishes the run first; with Ctrl-C (SIGINT) while it waits, every run is aborted, emits its
`agent_end`, and the process ends, even when a tool ignores its abort: long before the run
would have ended by itself (20-30 s), within the 10 s the test waits. That it ends within 2 s
is benchmarks/lifecycle.py's to measure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT"),
              pytest.mark.slow]

CHILD = textwrap.dedent('''
    import signal, sys, threading, time
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job may ignore it

    import agentcore as ac
    from agentcore.providers.faux import (
        faux_assistant_message, faux_text, faux_tool_call, register_faux_provider)

    mode = sys.argv[1]

    lock = threading.Lock()

    def say(*parts):
        with lock:  # two threads print: keep lines whole
            print(*parts, flush=True)

    @ac.tool
    def work(signal: ac.AbortSignal) -> str:
        """Work for a while."""
        say("tool started")
        if mode == "finish":
            time.sleep(0.3)
            return "slept"
        if mode == "honour":
            signal.wait(30)
            return "stopped"
        time.sleep(30)  # "ignore": deaf to the abort
        return "late"

    @ac.tool
    def echo(text: str) -> str:
        """Echo."""
        return "echo " + text

    if mode == "parallel":  # the calls start once the main thread has ended
        faux = register_faux_provider(tokens_per_second=50, token_size=(1, 1))
        faux.set_responses([
            faux_assistant_message([faux_text("calling two tools"),
                                    faux_tool_call("echo", {"text": "a"}, id="a"),
                                    faux_tool_call("echo", {"text": "b"}, id="b")],
                                   stop_reason="toolUse"),
            faux_assistant_message("finished"),
        ])
    elif mode == "stream":
        faux = register_faux_provider(tokens_per_second=20, token_size=(1, 1))
        faux.set_responses([faux_assistant_message([faux_text("word " * 400)])])
    else:
        faux = register_faux_provider()
        faux.set_responses([
            faux_assistant_message([faux_tool_call("work", {})], stop_reason="toolUse"),
            faux_assistant_message("finished"),
        ])
    agent = ac.Agent(faux.get_model(), tools=[work, echo])

    streaming = []

    def listen(event, _signal):
        if event.type == "message_update" and not streaming:
            streaming.append(True)
            say("streaming")
        if event.type == "tool_execution_end":
            say("result", event.tool_call_id, event.result.content[0].text, event.is_error)
        if event.type == "agent_end":
            last = event.messages[-1]
            say("agent_end", last.role, getattr(last, "stop_reason", None),
                last.content[0].text if last.content else "")

    agent.subscribe(listen)
    agent.prompt("go")
    say("main done")
''')


def start(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def read_until(child: subprocess.Popen[str], wanted: set[str], timeout: float = 20) -> list[str]:
    """Lines from the child until each of `wanted` has been seen."""
    assert child.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while not wanted.issubset(lines):
        assert time.monotonic() < deadline, f"child said only {lines}"
        line = child.stdout.readline()
        assert line, f"child ended early: {lines}, {child.stderr.read() if child.stderr else ''}"
        lines.append(line.strip())
    return lines


def interrupt(child: subprocess.Popen[str], ready: set[str]) -> tuple[list[str], float]:
    """Wait for `ready`, send SIGINT; return every line and how long the child took to end
    (it must within 10 s; benchmarks/lifecycle.py reports the time)."""
    lines = read_until(child, ready)
    time.sleep(0.1)  # let the main thread reach the interpreter's wait for the run
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        out, _ = child.communicate(timeout=10)
    finally:
        child.kill()
    return lines + out.splitlines(), time.monotonic() - sent


def test_a_run_in_flight_at_exit_is_finished(tmp_path: Path) -> None:
    child = start(tmp_path, "finish")
    out, err = child.communicate(timeout=30)
    lines = out.splitlines()
    assert child.returncode == 0, err
    assert lines.index("main done") < lines.index("agent_end assistant stop finished")
    assert "tool started" in lines


def test_parallel_calls_started_during_exit_get_real_results(tmp_path: Path) -> None:
    child = start(tmp_path, "parallel")
    out, err = child.communicate(timeout=30)
    lines = out.splitlines()
    assert child.returncode == 0, err
    assert lines[0] == "main done"
    assert sorted(line for line in lines if line.startswith("result")) == [
        "result a echo a False", "result b echo b False"]
    assert lines[-1] == "agent_end assistant stop finished"


@pytest.mark.parametrize(("mode", "ready", "last"), [
    ("stream", {"main done", "streaming"}, "agent_end assistant aborted"),
    ("honour", {"main done", "tool started"}, "agent_end toolResult None stopped"),
    ("ignore", {"main done", "tool started"}, "agent_end toolResult None Operation aborted"),
])
def test_ctrl_c_at_exit_aborts_the_run_and_ends_the_process(
    tmp_path: Path, mode: str, ready: set[str], last: str,
) -> None:
    child = start(tmp_path, mode)
    lines, _ = interrupt(child, ready)
    ends = [line for line in lines if line.startswith("agent_end")]
    assert len(ends) == 1, lines
    assert ends[0].startswith(last), lines
