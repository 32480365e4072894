"""The chat asks before a tool call that needs approval runs (issue 24, API §20):
`allow <name>(<args>)? [y/N] ` inline, through the real program and in-process."""

from __future__ import annotations

import io
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from _internals import ChatOptions, EventPrinter, calculator_tool, history_line, run_chat

import agentcore as ac
from agentcore.sessions import SqliteSession
from agentcore.testing import scripted_model, tool_call

FAST = ("--tokens-per-second", "20000")
TOOL_END = r"  <- {name}: (?P<text>.*)  \[(?P<status>ok|error), \d+\.\d ms\]"
DENIED = "denied: the user did not allow this call"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}


def _chat(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcore", "chat", *FAST, *args],
                          input=stdin, capture_output=True, text=True, timeout=60, check=False,
                          env=_env())


def _lines(*lines: str) -> Any:
    """A `read_line` answering `lines` in turn, then end of input; it records the prompts."""
    pending = list(lines)

    def read_line(prompt: str) -> str:
        read_line.prompts.append(prompt)  # type: ignore[attr-defined]
        if not pending:
            raise EOFError
        return pending.pop(0)

    read_line.prompts = []  # type: ignore[attr-defined]
    return read_line


# --- the real program, through pipes ------------------------------------------------------------


@pytest.mark.slow
def test_chat_asks_inline_and_runs_allowed_calls_only() -> None:
    done = _chat("what is 2+3?\ny\nwhat is 4*5?\nn\nwhat time is it?\n", "--confirm-tools")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    allowed, denied, eof = done.stdout.split("you> ")[1:4]
    # the question has a line of its own, after the streamed reply's line
    assert ('Let me ask the calculator.\nallow calculator({"expression": "2+3"})? [y/N] y\n'
            '  -> calculator(') in allowed
    ran = re.search(TOOL_END.format(name="calculator"), allowed)
    assert ran is not None
    assert (ran["text"], ran["status"]) == ("5", "ok")
    assert "assistant: The calculator says 2+3 = 5." in allowed
    assert 'allow calculator({"expression": "4*5"})? [y/N] n\n' in denied
    refused = re.search(TOOL_END.format(name="calculator"), denied)
    assert refused is not None
    assert (refused["text"], refused["status"]) == (DENIED, "error")
    assert f"The calculator failed: {DENIED}" in denied
    # end of input at the question denies the call; the chat then ends cleanly
    assert 'allow clock({"timezone": "UTC"})? [y/N] \n' in eof
    assert f"  <- clock: {DENIED}  [error" in eof
    assert f"The clock failed: {DENIED}" in eof


@pytest.mark.slow
def test_chat_without_confirm_tools_never_asks() -> None:
    done = _chat("what is 2+3?\n")
    assert done.returncode == 0, done.stderr
    assert "allow " not in done.stdout
    assert re.search(TOOL_END.format(name="calculator"), done.stdout)["text"] == "5"  # type: ignore[index]


@pytest.mark.slow
def test_chat_resumes_a_session_whose_calls_wait_for_approval(tmp_path: Path) -> None:
    path = str(tmp_path / "chat.db")
    asking = attrs.evolve(calculator_tool(), requires_approval=True)
    session = SqliteSession(path)
    try:
        with scripted_model([tool_call("calculator", {"expression": "6*7"}, id="c1")]) as fake:
            agent = ac.Agent(fake.model, tools=[asking], session=session)
            run = agent.prompt("what is 6*7?")
            assert [c.id for c in run.pending_approvals] == ["c1"]
    finally:
        session.close()
    done = _chat("y\n", "--confirm-tools", "--session", path)
    assert done.returncode == 0, done.stderr
    assert ('resumed 2 messages from' in done.stdout)
    assert 'you> allow' not in done.stdout  # asked before the first prompt
    assert '\nallow calculator({"expression": "6*7"})? [y/N] y\n' in done.stdout
    ran = re.search(TOOL_END.format(name="calculator"), done.stdout)
    assert ran is not None
    assert (ran["text"], ran["status"]) == ("42", "ok")
    assert "assistant: The calculator says 6*7 = 42." in done.stdout
    again = _chat("", "--confirm-tools", "--session", path)  # decided and stored: never again
    assert "allow " not in again.stdout
    assert "  [approvals: 1 allowed, 0 denied]" in again.stdout.splitlines()


def _read_until(proc: subprocess.Popen[bytes], seen: bytearray, marker: bytes) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + 10
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout.fileno(), selectors.EVENT_READ)
        while marker not in seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {marker!r} in {bytes(seen)!r}"
            if selector.select(left):
                chunk = os.read(proc.stdout.fileno(), 65536)
                assert chunk, f"output ended before {marker!r}: {bytes(seen)!r}"
                seen += chunk


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_chat_sigint_at_the_question_aborts_the_run_and_the_chat_goes_on() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "agentcore", "chat", *FAST,
                             "--confirm-tools"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env())
    assert proc.stdin is not None
    try:
        seen = bytearray()
        _read_until(proc, seen, b"you> ")
        proc.stdin.write(b"what is 2+3?\n")
        proc.stdin.flush()
        _read_until(proc, seen, b"[y/N] ")
        # (a signal between writing the question and blocking in read() would wait for input)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _read_until(proc, seen, b"[y/N] \n[aborted]\n")
        _read_until(proc, seen, b"you> ")
        out, err = proc.communicate(b"hello\n", timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    text = (bytes(seen) + out).decode()
    assert proc.returncode == 0, err
    assert "  -> calculator" not in text  # nothing ran
    assert "[y/N] \n[aborted]\nyou> hello\n" in text
    # the aborted batch did not block the chat: its call got an "aborted" result
    assert ('assistant: The calculator failed: Operation aborted You said "hello".'
            in text)


# --- in-process --------------------------------------------------------------------------------


@pytest.mark.parametrize(("answer", "allowed"), [
    ("y", True), ("yes", True), (" YES ", True), ("Y", True),
    ("n", False), ("", False), ("no", False), ("yep", False), ("allow", False),
])
def test_chat_answers_y_or_yes_allow_anything_else_denies(answer: str, allowed: bool) -> None:
    out = io.StringIO()
    read_line = _lines("calc", answer)
    with scripted_model([tool_call("calculator", {"expression": "6*7"}), "done"]) as fake:
        assert run_chat(ChatOptions(model=fake.model, confirm_tools=True), out, read_line) == 0
        [result] = [m for m in fake.calls[1].messages if isinstance(m, ac.ToolResultMessage)]
    assert read_line.prompts == ["you> ", 'allow calculator({"expression": "6*7"})? [y/N] ',
                                 "you> "]
    assert (result.text, result.is_error) == (("42", False) if allowed else (DENIED, True))


def test_chat_asks_each_call_of_a_batch_and_shortens_long_arguments() -> None:
    out = io.StringIO()
    long = "+".join(["1"] * 200)
    read_line = _lines("calc", "n", "y")
    reply = [tool_call("calculator", {"expression": long}, id="a"),
             tool_call("clock", {"timezone": "UTC"}, id="b")]
    with scripted_model([reply, "done"]) as fake:
        assert run_chat(ChatOptions(model=fake.model, confirm_tools=True), out, read_line) == 0
        results = [m for m in fake.calls[1].messages if isinstance(m, ac.ToolResultMessage)]
    first, second = read_line.prompts[1:3]
    assert first.startswith('allow calculator({"expression": "1+1+1')
    assert first.endswith(" more chars))? [y/N] ")
    assert len(first) < 260
    assert second == 'allow clock({"timezone": "UTC"})? [y/N] '
    assert [(r.tool_call_id, r.is_error) for r in results] == [("a", True), ("b", False)]
    assert results[0].text == DENIED
    assert "[approvals" not in out.getvalue()  # the answers are on screen already


def test_chat_end_of_input_at_the_question_denies_and_quits() -> None:
    out = io.StringIO()
    read_line = _lines("calc")
    with scripted_model([tool_call("calculator", {"expression": "6*7"}), "done"]) as fake:
        assert run_chat(ChatOptions(model=fake.model, confirm_tools=True), out, read_line) == 0
        [result] = [m for m in fake.calls[1].messages if isinstance(m, ac.ToolResultMessage)]
    assert result.text == DENIED
    assert read_line.prompts[-1] == "you> "  # then the chat read on, found the end and left


# --- the console printer -----------------------------------------------------------------------


def test_printer_shows_a_waiting_call_and_the_decisions_on_short_lines() -> None:
    out = io.StringIO()
    printer = EventPrinter(out, color=False, max_chars=40)
    printer.write("assistant: half a line")
    printer.show(ac.ToolApprovalRequestEvent("c1", "delete", {"path": "/tmp/x"}))
    printer.show(ac.ToolApprovalRequestEvent("c2", "pay", {"amount": "9" * 100}))
    message = ac.ToolApprovalMessage(approved=["c1"], denied={"c2": "too much", "c3": "no"})
    printer.show(ac.MessageEndEvent(message))
    assert out.getvalue().splitlines() == [
        "assistant: half a line",
        '  ?? delete({"path": "/tmp/x"}): waiting for approval',
        '  ?? pay({"amount": "9999999999999999999999999999... (74 more chars)): waiting for '
        "approval",
        "  [allowed delete; denied pay: too much; denied c3: no]",
    ]


def test_history_line_of_a_decision() -> None:
    message = ac.ToolApprovalMessage(approved=["a", "b"], denied={"c": "no"})
    assert history_line(message) == "  [approvals: 2 allowed, 1 denied]"


def test_chat_parses_confirm_tools() -> None:
    from _internals import build_parser

    assert build_parser().parse_args(["chat", "--confirm-tools"]).confirm_tools is True
    assert build_parser().parse_args(["chat"]).confirm_tools is False
