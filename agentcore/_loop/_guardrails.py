"""Guardrails (API §26): checks around a run that end it, or send the model back, when they trip.

An input guardrail `fn(messages) -> str | None` sees the context of the run's first model call
and runs beside that call on a worker of the run: a string trips it, which cuts the call short,
and no tool of the run starts before every input guardrail has passed. An output guardrail
`fn(message, output) -> str | None` sees the reply that would end the run (and, with an
`output_type`, its output); a trip ends the run, or, for a guardrail wrapped by
`retry_guardrail`, goes back to the model as a user message within `output_retries`. A trip
ends the run with the error `guardrail tripped: <name>: <reason>`; a guardrail that raises
trips with the exception as its reason, and one that returns something other than a str or
None trips saying so (it fails closed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._core import (
    GUARDRAIL_TEXT,
    AbortController,
    AbortSignal,
    AgentMessage,
    AssistantMessage,
    GuardrailTrippedEvent,
    Model,
    ToolResultMessage,
    UserMessage,
    error_reply,
    failure_text,
    type_error,
)
from ._workers import WorkerPool

if TYPE_CHECKING:
    from ._output import OutputState

__all__ = ["Guards", "InputChecks", "InputGuardrail", "OutputGuardrail", "RetryGuardrail",
           "check_guardrails", "guardrail_name", "retry_guardrail", "trip_text", "verdict"]

InputGuardrail = Callable[[list[AgentMessage]], "str | None"]
OutputGuardrail = Callable[[AssistantMessage, Any], "str | None"]


@attrs.frozen(eq=False)
class RetryGuardrail:
    """An output guardrail whose trip goes back to the model instead of ending the run."""

    fn: OutputGuardrail

    def __call__(self, message: AssistantMessage, output: Any) -> str | None:
        return self.fn(message, output)


def retry_guardrail(fn: OutputGuardrail) -> RetryGuardrail:
    """Wrap output guardrail `fn` so that its trip is sent back to the model (API §26).

    The reason becomes a user message and the model answers again, within the run's
    `output_retries`; past them, the trip ends the run as any trip does.
    """
    if not callable(fn):
        raise type_error("fn", "a guardrail fn(message, output) -> str | None", fn)
    return RetryGuardrail(fn)


def guardrail_name(fn: object) -> str:
    """A guardrail's name in trips: its `name` attribute, else its function's name."""
    if isinstance(fn, RetryGuardrail):
        fn = fn.fn
    name = getattr(fn, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(fn, "__name__", type(fn).__name__))


def verdict(fn: Callable[..., Any], *args: Any) -> str | None:
    """What `fn(*args)` says: None (passed) or the reason it trips (raising trips too)."""
    try:
        said = fn(*args)
    except Exception as exc:
        return failure_text(exc)
    if said is None:
        return None
    if isinstance(said, str):
        return said or "(no reason given)"
    return f"returned {said!r}, not a reason (str) or None"


def trip_text(name: str, reason: str) -> str:
    """The error a trip ends its run with."""
    return f"{GUARDRAIL_TEXT}{name}: {reason}"


def check_guardrails(kind: str) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """Attrs validator of `input_guardrails`/`output_guardrails`: a list of callables."""

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, list):
            raise type_error(attribute.name, f"a list of {kind} guardrails", value)
        for i, fn in enumerate(value):
            if not callable(fn):
                raise type_error(f"{attribute.name}[{i}]", f"an {kind} guardrail (callable)", fn)

    return check


class InputChecks:
    """The input guardrails of one run's first model call, running beside it on `pool`.

    `on_trip()` is called (on a worker) by the first guardrail that trips; `wait` gives the
    trip, if any, once every guardrail has passed or one has tripped.
    """

    def __init__(self, guardrails: Sequence[InputGuardrail], messages: list[AgentMessage],
                 pool: WorkerPool, on_trip: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._left = len(guardrails)
        self.trip: tuple[str, str] | None = None
        self._on_trip = on_trip
        for fn in guardrails:
            pool.submit(self._work(fn, list(messages)))

    def _work(self, fn: InputGuardrail, messages: list[AgentMessage]) -> Callable[[], None]:
        def work() -> None:
            reason = verdict(fn, messages)
            with self._lock:
                first = reason is not None and self.trip is None
                if first:
                    assert reason is not None
                    self.trip = (guardrail_name(fn), reason)
                self._left -= 1
                if first or not self._left:
                    self._done.set()
            if first:
                self._on_trip()

        return work

    def wait(self, signal: AbortSignal) -> tuple[str, str] | None:
        """The trip, once decided; None when all passed (or `signal` aborted first)."""
        unlink = signal.add_listener(self._done.set)
        try:
            self._done.wait()
        finally:
            unlink()
        return self.trip


@attrs.define(eq=False)
class Guards:
    """One run's guardrails and the retries its output checks have used.

    The input checks run beside the first model call; the output checks see each reply that
    would end the run.
    """

    input: list[InputGuardrail]
    output: list[OutputGuardrail]
    retries: int  # the run's output_retries, shared with structured output's
    emit: Callable[[Any], None]
    used: int = 0
    checks: Any = None  # the first call's `InputChecks`, then `_DONE`
    stop: AbortController | None = None
    _unlink: Callable[[], None] = lambda: None

    def first_call(self, messages: list[AgentMessage], pool: Callable[[], WorkerPool],
                   halt: AbortSignal) -> AbortSignal | None:
        """Start the input checks beside the first model call; the signal that call follows.

        None once they have run, or when there are none: the call follows the run's own.
        """
        if not self.input or self.checks is not None:
            return None
        self.stop = stop = AbortController()
        unlink = halt.add_listener(lambda: stop.abort(halt.reason))
        self._unlink = unlink
        self.checks = InputChecks(self.input, messages, pool(),
                                  lambda: stop.abort("a guardrail tripped"))
        return stop.signal

    def tripped(self) -> str | None:
        """The error of an input trip so far (None: none yet)."""
        checks = self.checks
        trip = None if checks is None or checks is _DONE else checks.trip
        return None if trip is None else trip_text(*trip)

    def after_first_reply(self, halt: AbortSignal, reply: AssistantMessage,
                          model: Model) -> AssistantMessage | None:
        """Wait for the input checks (tools start only after them); on a trip, its event.

        Returns the error reply that ends the run when the trip came after `reply` had ended
        (a reply the trip cut short is that error already), else None.
        """
        checks, self.checks = self.checks, _DONE
        if checks is None or checks is _DONE:
            return None
        trip = checks.wait(halt)
        self._unlink()
        if trip is None:
            return None
        self.emit(GuardrailTrippedEvent("input", *trip))
        text = trip_text(*trip)
        return None if reply.error_message == text else error_reply(model, text)

    def after_final(self, reply: AssistantMessage, results: list[ToolResultMessage],
                    output: OutputState | None) -> str | UserMessage | None:
        """Run the output checks on the reply that would end the run (and its output).

        Returns the run's error (a trip that ends it), the message sending a retried trip back
        to the model, or None when every check passed.
        """
        value = None if output is None else output.value(reply, results)
        for fn in self.output:
            reason = verdict(fn, reply, value)
            if reason is None:
                continue
            name = guardrail_name(fn)
            retry = isinstance(fn, RetryGuardrail) and self.used < self.retries
            self.emit(GuardrailTrippedEvent("output", name, reason, retry))
            if retry:
                self.used += 1
                return UserMessage(f"Your answer did not pass the check {name!r}: {reason}. "
                                   "Answer again.")
            return trip_text(name, reason)
        return None


_DONE = object()
"""`Guards.checks` once the input checks have been waited for."""
