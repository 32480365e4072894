"""`AgentRun`: a handle on one background run of an `Agent`.

A run has one producer, the `Agent` that started it, and any number of consumers. The
producer uses `start`, `publish` and `finish`, as an executor uses `Future.set_result`; the
consumers wait on the run through `result`, `wait`, iteration, `snapshot`, `wait_for_news`
and `add_finisher`, or read its outcome (`text`, `usage`, `error`). The events live in the
run's `EventLog` (`_log`), which asyncio tasks await too.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, final

from .._core import (
    ABORTED_TEXT,
    AbortController,
    AbortSignal,
    AgentcoreError,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    MessageEndEvent,
    MessageUpdateEvent,
    ModelFallbackEvent,
    StopReason,
    SubagentEvent,
    TextDeltaEvent,
    ToolCall,
    ToolResultMessage,
    Usage,
    run_error,
    run_markdown,
)
from .._function_tools import FINAL_RESULT
from .._loop import native_output, serving
from ._log import EventLog

__all__ = ["AgentRun"]

_log = logging.getLogger(__name__)

MAX_EVENTS = 100_000
"""How many events a run keeps for late iteration by default (`Agent(max_events=...)`)."""

_OWN_THREAD = ("cannot wait for a run from its own thread (a listener, hook or tool of this "
               "run): the run goes on only once it returns")
_REPR_ERROR_CHARS = 80
_FAILED = (StopReason.ERROR, StopReason.ABORTED)


@final
class AgentRun:
    """One run of an `Agent` on its background thread.

    Iterate it (from any thread, any number of times, however late) for every event from
    `agent_start` to `agent_end`; `result()` waits for the new messages; `text`, `usage`,
    `error` and `raise_for_error()` wait likewise, then read the outcome; `text_stream()`
    yields the reply text as it streams. `async for event in run` and `await run.wait_async()`
    do the same without blocking an event loop. A `KeyboardInterrupt` while waiting aborts the
    run, then propagates; waiting from the run's own thread (a listener, hook or tool of this
    run) raises `RuntimeError` instead of deadlocking.

    Past `max_events` events the oldest `message_update`s are dropped (in batches, down to
    about 90 % of the bound, once they are a tenth of the log), never events of other kinds:
    a late or lagging iteration may miss `message_update`s and nothing else.
    """

    def __init__(self, controller: AbortController, *, max_events: int = MAX_EVENTS,
                 native: AgentTool | None = None) -> None:
        """A run aborted through `controller`, keeping at most `max_events` events.

        `native` is the output tool of a run with `output_mode="native"`: `output` reads the
        last reply's text with it, as the run did.
        """
        if type(max_events) is not int:
            raise TypeError(f"'max_events' must be an int, got {max_events!r}")
        if max_events < 1:
            raise ValueError(f"'max_events' must be at least 1, got {max_events!r}")
        self._controller = controller
        self._log = EventLog(max_events)
        self._lock = threading.Lock()  # guards the finishers
        self._messages: list[AgentMessage] = []
        self._finishing = False  # from here on, add_finisher refuses: finishers are running
        self._finishers: list[Callable[[], None]] = []
        self._name = "agentcore-run"
        self._thread: threading.Thread | None = None
        self._aborted_at_end = False  # the signal, when the run finished (abort() later is moot)
        self._native = native  # output_mode="native": what reads the answer
        self._pending: list[ToolCall] = []  # the calls the run left waiting for approval
        self._paths: dict[str, tuple[str, ...]] = {}  # their agents' paths (API §25)
        # Of failed replies a fallback model took over (API §24), and of child agents (§25)
        self._discarded = Usage()

    @property
    def signal(self) -> AbortSignal:
        """This run's abort signal."""
        return self._controller.signal

    @property
    def name(self) -> str:
        """The name of the run's thread."""
        return self._name

    def done(self) -> bool:
        """Whether the run has fully ended (its `agent_end` listeners included)."""
        return self._log.finished

    def abort(self) -> None:
        """Stop the run: the model stream is cancelled and no further tool or model call starts."""
        self._controller.abort()

    def result(self, timeout: float | None = None) -> list[AgentMessage]:
        """Wait for the run to end and return the messages it added.

        Raises `TimeoutError` if it has not ended within `timeout` seconds.
        """
        if not self.wait(timeout):
            raise TimeoutError(f"the run did not end within {timeout} s")
        return list(self._messages)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the run to end, as `result()` does; False if `timeout` seconds passed first."""
        return self._wait(self.done, timeout, until_end=True)

    @property
    def text(self) -> str:
        """The text of the last assistant message the run added (its text blocks joined).

        `""` if the run added no assistant message, or its last one has no text (a failed
        reply: see `error`). Blocks until the run has ended, like `result()`; from the run's
        own thread it raises `RuntimeError`.
        """
        replies = self._replies()
        return replies[-1].text if replies else ""

    @property
    def usage(self) -> Usage:
        """The tokens and cost of the run's model calls: its assistant messages' `usage` summed.

        Failed replies that a fallback model took over (`model_fallback` events) count too,
        though they are not in the transcript, and so do the model calls of the child agents
        its tools ran (`subagent` events; API §25). Blocks until the run has ended, like
        `result()`.
        """
        return sum((reply.usage for reply in self._replies()), self._discarded)

    @property
    def error(self) -> str | None:
        """The error the run ended with, or None if it ended normally; waits like `result()`.

        That is the last assistant message's `error_message` when it stops with `"error"` or
        `"aborted"`, or `"Request was aborted"` when the run was aborted between a reply's tool
        calls and the next reply.
        """
        outcome = self._failure(self._replies())
        return None if outcome is None else outcome[1]

    def raise_for_error(self) -> None:
        """Raise `RunError` if the run ended in error or was aborted (see `error`); else nothing.

        Like `requests.Response.raise_for_status()`; waits like `result()`.

        Raises:
            RunError: with the `stop_reason` (`"error"` or `"aborted"`) and the error text;
                `UsageLimitExceeded` or `OutputValidationError` (both `RunError`s) when a
                usage limit or missing structured output ended the run.
        """
        outcome = self._failure(self._replies())
        if outcome is not None:
            raise run_error(*outcome)

    @property
    def pending_approvals(self) -> list[ToolCall]:
        """The tool calls the run ended waiting for approval (API §20); waits like `result()`.

        Empty unless the run stopped for approval: resume with
        `agent.continue_(approvals={call.id: True | False | "reason", ...})`.
        """
        self.result()
        return list(self._pending)

    @property
    def pending_paths(self) -> dict[str, list[str]]:
        """Each pending call's path: the agents' names, outermost first (API §25).

        The run's own calls have the path `[<the agent's name>]`; waits like `result()`.
        """
        self.result()
        return {call_id: list(path) for call_id, path in self._paths.items()}

    @property
    def output(self) -> Any:
        """The run's structured output, converted to the `output_type` it was started with.

        Blocks until the run has ended, like `result()`. Raises what `raise_for_error()`
        raises when the run failed (`OutputValidationError` when no valid answer came within
        the retries), and `AgentcoreError` when the run had no `output_type` (or ended
        without an answer, say by `should_stop_after_turn`). With `output_mode="native"` the
        answer is the last reply's text, read again as the run read it.
        """
        replies = self._replies()
        if (outcome := self._failure(replies)) is not None:
            raise run_error(*outcome)
        if self._native is not None:
            with contextlib.suppress(ValueError, IndexError):
                return native_output(self._native, replies[-1])
        else:
            for message in reversed(self._messages):
                if (isinstance(message, ToolResultMessage) and message.tool_name == FINAL_RESULT
                        and not message.is_error):
                    return message.details
        raise AgentcoreError("this run has no structured output: it ended without an answer, "
                             "or was started without agent.prompt(..., output_type=T)")

    def text_stream(self, timeout: float | None = None) -> Iterator[str]:
        """Iterate the assistant text deltas of the run as they arrive, across all its turns.

        Joined, they are the text of every assistant message of the run. Like iteration, it
        starts from the run's first event however late it is called (less any dropped
        `message_update`s, see `max_events`). Past `timeout` seconds from this call, once it
        has yielded what arrived in time, it raises `TimeoutError`; from the run's own thread
        it raises `RuntimeError`.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._text_deltas(deadline, timeout)

    async def wait_async(self) -> list[AgentMessage]:
        """Await the end of the run and return the messages it added, as `result()` does.

        Never blocks the event loop. Bound it with `asyncio.timeout()`/`asyncio.wait_for()`:
        cancelling the awaiting task leaves the run going (`abort()` stops it). From an event
        loop on the run's own thread (e.g. inside one of its tools) it raises `RuntimeError`.
        """
        await self._log.wait_async(self.done, self._refuse_own_thread, until_end=True)
        return list(self._messages)

    def display(self, *, wait: bool = False) -> None:
        """Show this run in Jupyter, updated in place as it goes; see `agentcore.notebook`."""
        from ..notebook import display  # notebook builds on this module: import it late

        display(self, wait=wait)

    @property
    def max_events(self) -> int:
        """How many events this run keeps, at most, for late iteration (see the class)."""
        return self._log.max_events

    def __iter__(self) -> Iterator[AgentEvent]:
        seen = 0
        while True:
            self.wait_for_news(seen)
            fresh, seen, finished = self._log.take(seen)
            yield from fresh
            if finished:
                return

    async def __aiter__(self) -> AsyncIterator[AgentEvent]:
        """`async for event in run`: every event, as iteration gives them, without blocking.

        Cancelling the consuming task leaves the run going (`abort()` stops it).
        """
        seen = 0
        while True:
            await self._log.wait_async(functools.partial(self._log.has_news, seen),
                                       self._refuse_own_thread)
            fresh, seen, finished = self._log.take(seen)
            for event in fresh:
                yield event
            if finished:
                return

    def __repr__(self) -> str:
        finished = self.done()  # first: once finished, the snapshot has every event
        events, _, published = self._log.counted_snapshot()
        kept = len(events)
        dropped = "" if kept == published else f", {kept} kept"
        failure = self._failure(self._assistant_messages()) if finished else None
        if failure is None:
            outcome = ""
        else:
            reason, message = failure
            if len(message) > _REPR_ERROR_CHARS:
                message = message[:_REPR_ERROR_CHARS - 3] + "..."
            outcome = f", {reason.value}: {message!r}"
        state = "running" if not finished else (
            f"waiting for {len(self._pending)} approval(s)" if self._pending else "done")
        return f"<AgentRun {state}, {published} events{dropped}{outcome}>"

    def _repr_markdown_(self) -> str:
        events, _ = self.snapshot()
        return run_markdown(events, abort_requested=self.signal.aborted)

    def snapshot(self) -> tuple[list[AgentEvent], bool]:
        """The events kept so far, and whether the run has emitted its last one (`agent_end`)."""
        return self._log.counted_snapshot()[:2]

    def counted_snapshot(self) -> tuple[list[AgentEvent], bool, int]:
        """`snapshot()` and, taken at the same moment, how many events have been published.

        The count is what `wait_for_news` takes: it goes on growing when events are dropped.
        """
        return self._log.counted_snapshot()

    def wait_for_news(self, seen: int, timeout: float | None = None) -> bool:
        """Wait until more than `seen` events have been published or the run has finished.

        `seen` counts every event published, dropped ones included (the third value of
        `counted_snapshot`). False on timeout.
        """
        return self._wait(functools.partial(self._log.has_news, seen), timeout)

    def wait_for_end(self, timeout: float | None = None) -> bool:
        """Wait until the run has emitted its last event; False on timeout."""
        return self._wait(self._log.ended, timeout, until_end=True)

    def add_finisher(self, finisher: Callable[[], None]) -> bool:
        """Have `finisher()` run on the run's thread before `result()` returns.

        Returns False, without adding it, when the run is already finishing (too late).
        A finisher that raises is logged and skipped.
        """
        with self._lock:
            if self._finishing:
                return False
            self._finishers.append(finisher)
            return True

    def start(self, target: Callable[[], None], name: str) -> None:
        """Producer: run `target` on a new, non-daemon thread called `name`."""
        self._name = name
        self._thread = threading.Thread(target=target, name=name)
        self._thread.start()

    def run_here(self, target: Callable[[], None], name: str) -> None:
        """Producer: run `target` on the calling thread (which becomes the run's thread)."""
        self._name = name
        self._thread = threading.current_thread()
        target()

    def on_own_thread(self) -> bool:
        """Whether the run waits on the caller: its own thread, or one running its tool call."""
        return self._thread is threading.current_thread() or serving(self._controller.signal)

    def publish(self, event: AgentEvent) -> None:
        """Producer: append `event` to the run's log and wake the consumers (O(1) amortized)."""
        kind = event.__class__
        if kind is ModelFallbackEvent or kind is SubagentEvent:  # usage outside the transcript
            self._discarded += _usage_beside(event)
        self._log.publish(event)

    def finish(self, messages: list[AgentMessage], pending: list[ToolCall] | None = None,
               agent_name: str = "agent", paths: dict[str, list[str]] | None = None) -> None:
        """Producer: run the finishers, then end the run with `messages` as its result.

        `pending` are the calls it left waiting for approval, calls of the agent named
        `agent_name` (the one the run ended as) unless `paths` names another (a child's).
        """
        with self._lock:
            self._finishing = True
            finishers = list(self._finishers)
        for finisher in finishers:  # e.g. a live display showing the final view
            try:
                finisher()
            except Exception:
                _log.exception("a finisher of %r raised", self)
        self._messages = messages  # before the log finishes: its lock publishes them
        self._pending = list(pending or ())
        given = paths or {}
        self._paths = {c.id: tuple(given.get(c.id, (agent_name,))) for c in self._pending}
        self._aborted_at_end = self._controller.signal.aborted
        self._log.finish()

    def _text_deltas(self, deadline: float | None, timeout: float | None) -> Iterator[str]:
        seen = 0
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self.wait_for_news(seen, left):
                raise TimeoutError(f"the run did not end within {timeout} s")
            fresh, seen, finished = self._log.take(seen)
            for event in fresh:
                if (isinstance(event, MessageUpdateEvent)
                        and isinstance(event.assistant_message_event, TextDeltaEvent)):
                    yield event.assistant_message_event.delta
            if finished:
                return
            # A producer faster than the consumer always has news: check the deadline anyway.
            if deadline is not None and time.monotonic() >= deadline and not self.done():
                raise TimeoutError(f"the run did not end within {timeout} s")

    def _replies(self) -> list[AssistantMessage]:
        """Wait for the run to end (as `result()`), then its assistant messages."""
        self.result()
        return self._assistant_messages()

    def _assistant_messages(self) -> list[AssistantMessage]:
        return [m for m in self._messages if isinstance(m, AssistantMessage)]

    def _failure(self, replies: list[AssistantMessage]) -> tuple[StopReason, str] | None:
        """How the finished run failed, as `RunError` takes it; None if it did not."""
        last = replies[-1] if replies else None
        if last is not None and last.stop_reason in _FAILED:
            fallback = ABORTED_TEXT if last.stop_reason is StopReason.ABORTED else "unknown error"
            return last.stop_reason, last.error_message or fallback
        # Aborted while its tools ran: the loop ends without another reply, after the toolUse.
        if self._aborted_at_end and (last is None or last.stop_reason is StopReason.TOOL_USE):
            return StopReason.ABORTED, ABORTED_TEXT
        return None

    def _refuse_own_thread(self) -> None:
        if self.on_own_thread():
            raise RuntimeError(_OWN_THREAD)

    def _wait(self, ready: Callable[[], bool], timeout: float | None, *,
              until_end: bool = False) -> bool:
        """Wait until `ready()`; False on timeout. From a thread the run waits on, raise instead.

        A listener or hook on the run's thread, or a tool call on a worker, waiting for the run
        would wait forever: the run cannot go on until it returns. `Thread.join` raises in the
        same situation.
        """
        try:
            return self._log.wait(ready, timeout, self._refuse_own_thread, until_end=until_end)
        except KeyboardInterrupt:
            self.abort()
            raise


def _usage_beside(event: AgentEvent) -> Usage:
    """The usage `event` brings that the run's own replies do not hold.

    A failed reply's, that a fallback took over; a child agent's reply's, or its failed
    reply's (a `SubagentEvent` of its `message_end` or `model_fallback`).
    """
    if isinstance(event, SubagentEvent):
        event = event.innermost().event
    if isinstance(event, ModelFallbackEvent):
        return event.failed.usage if event.failed is not None else Usage()
    if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
        return event.message.usage
    return Usage()
