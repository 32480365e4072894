"""The CLI's live line (`agentcore._cli._live`), and how the printer shows progress and errors."""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from _internals import (
    EventPrinter,
    LiveLine,
    failure_text,
    format_tokens,
    plural,
    render,
    wants_live,
)
from sse_server import SSEServer

import agentcore as ac
from agentcore.testing import scripted_model, tool_call

TIMEOUT = 10
FRAME = re.compile(r"\r[^\r\n]*\x1b\[K")
"""A frame of the live line, or its erasure: `\\r`, the text (maybe none), erase to the end."""


class _Tty(io.StringIO):
    """A terminal that records what it shows, and says when some text first appeared."""

    def __init__(self, expect: str = "\x00", encoding: str = "utf-8") -> None:
        super().__init__()
        self.expect = expect
        self.seen = threading.Event()
        self._encoding = encoding

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.expect in self.getvalue():
            self.seen.set()
        return written


class _Clock:
    """Time that moves only when a test moves it (from now: a printer's line may be older)."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


def _line(out: io.StringIO | None = None, **kwargs: Any) -> tuple[LiveLine, _Clock]:
    clock = _Clock()
    return LiveLine(out or _Tty(), threading.Lock(), clock=clock, **kwargs), clock


def _reply(text: str = "") -> ac.AssistantMessage:
    return ac.AssistantMessage([ac.TextContent(text)], "x", "y", "z")


def _update(call_id: str, name: str, text: str) -> ac.ToolExecutionUpdateEvent:
    return ac.ToolExecutionUpdateEvent(call_id, name, {},
                                       ac.AgentToolResult([ac.TextContent(text)]))


# --- when --------------------------------------------------------------------------------------


def test_live_line_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    assert wants_live(_Tty()) is True
    assert wants_live(io.StringIO()) is False  # a pipe or a file: never an escape code
    monkeypatch.setenv("TERM", "dumb")
    assert wants_live(_Tty()) is False


def test_live_line_stays_off_without_a_terminal() -> None:
    printer = EventPrinter(io.StringIO(), color=False)
    assert printer.live is None
    with printer.running():
        assert [t.name for t in threading.enumerate() if t.name == "agentcore-live"] == []


# --- what it shows ------------------------------------------------------------------------------


def test_live_render_frames() -> None:
    assert render("waiting for the model", 1.23, 0) == "⠋ waiting for the model… 1.2s"
    assert render("waiting for the model", 0.04, 11) == "⠙ waiting for the model… 0.0s"
    assert render("running calculator", 0.4, 2, detail="3/10 done") == (
        "⠹ running calculator… 0.4s  3/10 done")
    assert render("running clock", 2.0, 1, fancy=False) == "/ running clock... 2.0s"
    assert render("waiting for the model", 1.0, 0, width=12) == "⠋ waiting f"


def test_live_line_waits_for_the_model_after_a_quiet_spell() -> None:
    live, clock = _line()
    assert live.text() is None
    live.update(ac.TurnStartEvent())
    clock.now += 0.1
    assert live.text() is None  # too soon: quick steps never flicker
    clock.now += 0.4
    assert live.text() == "⠋ waiting for the model… 0.5s"
    live.wrote(at_line_start=False)  # the reply started streaming on this line
    clock.now += 1.0
    assert live.text() is None
    live.wrote(at_line_start=True)  # a thinking block ended; the model is still at it
    clock.now += 0.7
    assert live.text() == "⠋ waiting for the model… 0.7s"  # counted from the last output
    live.update(ac.MessageEndEvent(_reply("done")))
    assert live.text() is None


def test_live_line_stays_off_while_a_person_is_asked() -> None:
    live, clock = _line()
    live.update(ac.TurnStartEvent())  # a resumed run: no reply streams before the question
    live.update(ac.ToolApprovalRequestEvent("c1", "delete", {}))
    clock.now += 5.0
    assert live.text() is None  # never drawn over the question `allow delete({})? [y/N]`


def test_live_line_shows_running_tools_and_their_progress() -> None:
    live, clock = _line()
    live.update(ac.ToolExecutionStartEvent("c1", "calculator", {}))
    clock.now += 0.1
    live.update(ac.ToolExecutionStartEvent("c2", "clock", {}))
    clock.now += 0.3
    assert live.text() == "⠋ running calculator, clock… 0.4s"
    live.update(_update("c2", "clock", "asking the\n time server"))
    assert live.text() == "⠋ running calculator, clock… 0.4s  asking the time server"
    live.update(ac.ToolExecutionEndEvent("c2", "clock", ac.AgentToolResult(), False))
    assert live.text() == "⠋ running calculator… 0.4s"  # the ended tool's progress goes too
    live.update(ac.AgentEndEvent([]))
    assert live.text() is None


def test_live_line_draws_in_place_and_erases_before_output() -> None:
    out = _Tty()
    printer = EventPrinter(out, color=False, live=True)
    live = printer.live
    assert live is not None
    clock = _Clock()
    live.clock = clock
    printer.show(ac.TurnStartEvent())
    clock.now += 1.25
    live.draw()
    live.draw()
    printer.write("assistant: hi\n")
    live.draw()  # nothing to show: the line is not drawn again
    assert out.getvalue() == ("\r⠋ waiting for the model… 1.2s\x1b[K"
                              "\r⠙ waiting for the model… 1.2s\x1b[K"
                              "\r\x1b[Kassistant: hi\n")


def test_live_line_is_dimmed_with_colour_and_plain_on_an_ascii_terminal() -> None:
    out = _Tty(encoding="ascii")
    live, clock = _line(out, dim=True)
    live.update(ac.TurnStartEvent())
    clock.now += 1
    live.draw()
    assert out.getvalue() == "\r\x1b[2m| waiting for the model... 1.0s\x1b[0m\x1b[K"


def test_live_line_runs_on_a_thread_for_the_block_only() -> None:
    out = _Tty(expect="waiting for the model")
    printer = EventPrinter(out, color=False, live=True)
    with printer.running():
        printer.show(ac.TurnStartEvent())
        assert out.seen.wait(TIMEOUT)
        assert [t.daemon for t in threading.enumerate() if t.name == "agentcore-live"] == [True]
    assert "agentcore-live" not in [t.name for t in threading.enumerate()]
    assert out.getvalue().endswith("\r\x1b[K")  # erased when the run ended
    assert FRAME.sub("", out.getvalue()) == ""


# --- progress and errors in the printer ----------------------------------------------------------


def test_printer_shows_tool_progress_on_its_own_line_without_a_terminal() -> None:
    def count(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        for step in ("1/2 files", "2/2 files"):
            on_update(ac.AgentToolResult([ac.TextContent(step)]))
        return ac.AgentToolResult([ac.TextContent("2 files")])

    counter = ac.AgentTool("count", "Count files.", {"type": "object", "properties": {}}, count)
    out = io.StringIO()
    printer = EventPrinter(out, color=False)
    with scripted_model([tool_call("count"), "Two."]) as fake:
        run = ac.Agent(fake.model, tools=[counter]).prompt("how many?")
        for event in run:
            printer.show(event)
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["  -> count({})", "  .. count: 1/2 files", "  .. count: 2/2 files"]
    assert re.fullmatch(r"  <- count: 2 files  \[ok, \d+\.\d ms\]", lines[3])
    assert lines[4:] == ["assistant: Two."]


def test_printer_sends_tool_progress_to_the_live_line_on_a_terminal() -> None:
    out = _Tty()
    printer = EventPrinter(out, color=False, live=True)
    printer.show(ac.ToolExecutionStartEvent("c1", "count", {}))
    printer.show(_update("c1", "count", "1/2 files"))
    assert out.getvalue() == "  -> count({})\n"


@pytest.mark.parametrize(
    ("reason", "error", "shown"),
    [
        ("error", "cannot connect to http://127.0.0.1:9/v1/responses (connection refused)",
         "error: cannot connect to http://127.0.0.1:9/v1/responses (connection refused)"),
        ("aborted", "Request was aborted", "[aborted]"),
        ("aborted", "the run took too long", "[aborted: the run took too long]"),
    ],
)
def test_printer_failure_text_names_the_failure_once(reason: str, error: str, shown: str) -> None:
    message = ac.AssistantMessage([], "x", "y", "z", stop_reason=ac.StopReason(reason),
                                  error_message=error)
    assert failure_text(message) == shown
    out = io.StringIO()
    EventPrinter(out, color=False).show(ac.MessageEndEvent(message))
    assert out.getvalue() == f"{shown}\n"


def test_plural_and_token_counts() -> None:
    assert [plural(n, "turn") for n in (0, 1, 2)] == ["0 turns", "1 turn", "2 turns"]
    assert plural(1, "reply", "replies") == "1 reply"
    assert plural(3, "reply", "replies") == "3 replies"
    assert format_tokens(ac.Usage(1, 1)) == "input 1 token, output 1 token"
    assert format_tokens(ac.Usage(2, 0, 1, 1)) == (
        "input 2 tokens, output 0 tokens, cache read 1, cache write 1")


# --- the real program on a pseudo-terminal -----------------------------------------------------


def _read_all(fd: int, process: subprocess.Popen[bytes]) -> bytes:
    """Everything the child writes to the terminal, until it exits and closes it."""
    data = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child has closed the terminal
            break
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.slow
def test_demo_on_a_terminal_shows_the_wait_then_erases_it(sse_server: SSEServer) -> None:
    pty = pytest.importorskip("pty")
    from test_demo import _completions_replies, _env

    tools, text = _completions_replies()
    sse_server.sse(tools, delay_s=0.6)  # the first token comes 0.6 s after the headers
    sse_server.sse(text)
    master, slave = pty.openpty()
    env = _env(OPENAI_API_KEY="sk-test-0123456789", TERM="xterm", NO_COLOR="1",
               PYTHONIOENCODING="utf-8")
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "agentcore", "demo", "--model", "openai/gpt-4o-mini",
             "--base-url", f"{sse_server.url}/v1", "--api", "openai-completions"],
            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
        os.close(slave)
        slave = -1
        shown = _read_all(master, process).decode("utf-8")
        assert process.wait(TIMEOUT) == 0, shown
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)
    assert re.search(r"\r[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for the model… 0\.\ds\x1b\[K", shown)
    assert "\r\x1b[K  -> calculator(" in shown  # erased before the tool line
    transcript = FRAME.sub("", shown)
    assert "\x1b[" not in transcript
    assert "you: What is 17 * 23 + 2 ** 10" in transcript
    assert "\r\n  -> calculator({\"expression\": \"17 * 23 + 2 ** 10\"})\r\n" in transcript
    assert "run: 2 turns, 2 model calls, 2 tool calls in " in transcript
