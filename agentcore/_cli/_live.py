"""The live line: what a run is waiting for while nothing else prints (terminals only).

Between Enter and the first token of a reply, and while a tool runs, the last line of the
terminal shows a spinner, what is being waited for and for how long, and a tool's latest
progress report: `⠋ waiting for the model… 1.2s`, `⠙ running calculator… 0.4s  3/10 done`.
The line is drawn in place (carriage return, then erase to the end of the line) and erased
before any other output, so the transcript reads as it would without it. It appears only
after a short quiet spell, so quick steps never flicker, and only on a terminal
(`wants_live`): pipes and files never see an escape code.

`LiveLine` follows a run's events (`update`), and draws on a daemon thread of its own that
runs from `start()` to `stop()` (one run): the run itself never waits for it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from typing import TextIO

from .._core import (
    AgentEndEvent,
    AgentEvent,
    AssistantMessage,
    MessageEndEvent,
    ToolApprovalRequestEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnStartEvent,
)

__all__ = ["LiveLine", "progress_text", "render", "wants_live"]

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
ASCII_SPINNER = "|/-\\"
TICK_S = 0.08
"""How often the line is redrawn."""
QUIET_S = 0.15
"""How long nothing must have been printed before the line appears."""
_ERASE = "\r\x1b[K"
_DIM, _RESET = "\x1b[2m", "\x1b[0m"


def wants_live(out: TextIO) -> bool:
    """Whether to draw a live line on `out`: a terminal that can erase a line (TERM not dumb)."""
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _can_encode(out: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(out, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def render(label: str, elapsed: float, frame: int, *, detail: str = "", width: int = 80,
           fancy: bool = True) -> str:
    """One frame of the live line, cut to `width - 1` characters so that it never wraps.

    Args:
        label: What is being waited for, e.g. `"waiting for the model"`.
        elapsed: For how long, in seconds.
        frame: The spinner's frame number (any int: it wraps around).
        detail: A tool's latest progress report, shown after the time.
        width: The terminal's width.
        fancy: Braille spinner and `…`; False for plain ASCII (`|/-` and `...`).

    Returns:
        The text, e.g. `"⠋ waiting for the model… 1.2s"`.
    """
    spinner, dots = (SPINNER, "…") if fancy else (ASCII_SPINNER, "...")
    text = f"{spinner[frame % len(spinner)]} {label}{dots} {elapsed:.1f}s"
    if detail:
        text = f"{text}  {detail}"
    return text[: max(width - 1, 0)]


def progress_text(event: ToolExecutionUpdateEvent) -> str:
    """A tool's progress report on one line: the text of its partial result."""
    text = " ".join(getattr(block, "text", "[image]") for block in event.partial_result.content)
    return " ".join(text.split())


class LiveLine:
    """The live line under one printer's output.

    `update`, `wrote` and `erase` are called with `lock` held (the printer holds it around its
    writes, calling `erase()` before and `wrote()` after each); the drawing thread takes it too,
    so a frame never lands in the middle of other output.
    """

    def __init__(self, out: TextIO, lock: threading.Lock, *, dim: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out
        self.lock = lock
        self.dim = dim
        self.fancy = _can_encode(out, SPINNER + "…")
        self.clock = clock
        self.at_line_start = True
        self.drawn = False
        self.frame = 0
        self._quiet_since = clock()
        self._waiting_since: float | None = None
        self._tools: dict[str, tuple[str, float]] = {}  # call id -> (name, started)
        self._progress: tuple[str, str] | None = None  # (call id, report)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def update(self, event: AgentEvent) -> None:
        """Follow `event`: a turn waits for the model until its reply ends; tools run."""
        now = self.clock()
        if isinstance(event, TurnStartEvent):
            self._waiting_since = now
        elif isinstance(event, ToolApprovalRequestEvent) or (  # a person is asked, not the model
                isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage)):
            self._waiting_since = None
        elif isinstance(event, ToolExecutionStartEvent):
            self._tools[event.tool_call_id] = (event.tool_name, now)
        elif isinstance(event, ToolExecutionUpdateEvent):
            self._progress = (event.tool_call_id, progress_text(event))
        elif isinstance(event, ToolExecutionEndEvent):
            self._tools.pop(event.tool_call_id, None)
        elif isinstance(event, AgentEndEvent):
            self._waiting_since = None
            self._tools.clear()

    def wrote(self, at_line_start: bool) -> None:
        """Note that the printer just wrote, ending on a fresh line or not."""
        self.at_line_start = at_line_start
        self._quiet_since = self.clock()

    def text(self) -> str | None:
        """What the line shows now (None: nothing), without the spinner's advance."""
        now = self.clock()
        if not self.at_line_start or now - self._quiet_since < QUIET_S:
            return None
        detail = ""
        if self._tools:
            names = list(dict.fromkeys(name for name, _ in self._tools.values()))
            label = f"running {', '.join(names)}"
            since = min(started for _, started in self._tools.values())
            if self._progress is not None and self._progress[0] in self._tools:
                detail = self._progress[1]
        elif self._waiting_since is not None:
            label = "waiting for the model"
            since = max(self._waiting_since, self._quiet_since)
        else:
            return None
        return render(label, now - since, self.frame, detail=detail, width=_width(self.out),
                      fancy=self.fancy)

    def erase(self) -> None:
        """Erase the line if it is drawn."""
        if self.drawn:
            self.out.write(_ERASE)
            self.out.flush()
            self.drawn = False

    def draw(self) -> None:
        """Draw the next frame, or erase the line when there is nothing to show."""
        with self.lock:
            text = self.text()
            if text is None:
                self.erase()
                return
            if self.dim:
                text = f"{_DIM}{text}{_RESET}"
            self.out.write(f"\r{text}\x1b[K")
            self.out.flush()
            self.drawn = True
            self.frame += 1

    def start(self) -> None:
        """Start drawing, on a daemon thread (call `stop()` when the run ends)."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="agentcore-live", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop drawing and erase the line; returns once the drawing thread has ended."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self.lock, contextlib.suppress(OSError, ValueError):  # a closed terminal
            self.erase()

    def _run(self) -> None:
        try:
            while not self._stop.wait(TICK_S):
                self.draw()
        except (OSError, ValueError):  # the terminal went away: the output will say so
            return


def _width(out: TextIO) -> int:
    """The terminal's width; 80 when it does not say (a new pseudo-terminal says 0)."""
    try:
        columns = os.get_terminal_size(out.fileno()).columns
    except (AttributeError, ValueError, OSError):
        columns = shutil.get_terminal_size().columns
    return columns if columns > 0 else 80
