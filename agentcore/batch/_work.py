"""Running inputs: one run on this process's thread, or a group of runs on a remote worker."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import attrs

from .._agent import Agent, AgentRun, continue_here, prompt_here
from .._core import AgentMessage, ToolCall, Usage, describe, from_dict, to_dict
from .._http import AdaptiveLimits
from .._loop import OutputMode
from ._result import BatchResult, failed, from_wire_input, to_wire
from ._settings import Adjust, RunSettings

__all__ = ["Live", "Resume", "run_group", "run_one"]

_log = logging.getLogger(__name__)

STOPPED_TEXT = "the batch was stopped before this input's run started"


class Live:
    """The runs of one batch in flight in this process, so that stopping the batch aborts them.

    Thread-safe. Once `stop()` is called, runs that start are aborted at once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: set[AgentRun] = set()
        self.stopped = False

    def add(self, run: AgentRun) -> None:
        with self._lock:
            self._runs.add(run)
            stopped = self.stopped
        if stopped:
            run.abort()

    def discard(self, run: AgentRun) -> None:
        with self._lock:
            self._runs.discard(run)

    def stop(self) -> None:
        """Abort every run in flight, and every run that starts from now on."""
        with self._lock:
            self.stopped = True
            runs = list(self._runs)
        for run in runs:
            run.abort()


@attrs.frozen
class Resume:
    """What resuming a result that waits for approval needs: its run so far, and the decisions.

    `messages`, `usage` and `pending` are the waiting result's; `approvals` decide `pending`.
    """

    messages: list[AgentMessage]
    usage: Usage
    pending: list[ToolCall]
    approvals: dict[str, bool | str]

    @classmethod
    def of(cls, result: BatchResult, approvals: dict[str, bool | str]) -> Resume:
        return cls(result.messages, result.usage, result.pending_approvals, approvals)

    def to_wire(self) -> dict[str, Any]:
        """JSON-ready data, for a worker process (`from_wire` reads it back)."""
        return {"messages": to_dict(self.messages), "usage": to_dict(self.usage),
                "pending": to_dict(self.pending), "approvals": dict(self.approvals)}

    def moved_on(self, stored: BatchResult) -> bool:
        """Whether the store's result of this input no longer waits for the calls decided here.

        Then it was resumed already (by an earlier `resume_batch` with that store): it is
        yielded as stored, and its calls are not run again.
        """
        return [c.id for c in stored.pending_approvals] != [c.id for c in self.pending]

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Resume:
        return cls(from_dict(list[AgentMessage], data["messages"]),
                   from_dict(Usage, data["usage"]), from_dict(list[ToolCall], data["pending"]),
                   dict(data["approvals"]))


def run_one(make_agent: Callable[[], Agent], index: int, input: Any, output_type: Any,
            live: Live, output_mode: OutputMode = "tool",
            resume: Resume | None = None, adjust: Adjust | None = None) -> BatchResult:
    """Make an agent, run `input` on it to the end on this thread, and close the agent.

    With `resume`, the agent's transcript is extended by the waiting run's messages and
    continued with its approvals instead; the result is the whole run, both parts. A resume
    that fails before its run adds a message keeps the calls pending (it can be retried).
    `adjust` changes the run's config (the batch's `RunSettings`). Never raises: a failure
    is the result's error.
    """
    try:
        if live.stopped:
            raise RuntimeError(STOPPED_TEXT)
        agent = make_agent()
        if not isinstance(agent, Agent):
            raise TypeError(f"make_agent() returned {agent!r}, expected an Agent")
        try:
            if resume is None:
                run = prompt_here(agent, input, output_type=output_type,
                                  output_mode=output_mode, on_start=live.add,
                                  adjust=adjust)
            else:
                agent.messages = [*agent.messages, *resume.messages]
                run = continue_here(agent, resume.approvals, output_type=output_type,
                                    output_mode=output_mode, on_start=live.add,
                                    adjust=adjust)
            live.discard(run)
        finally:
            agent.close()
        return _outcome(index, input, run, output_type, resume)
    except Exception as exc:
        _log.info("batch input %d failed to run", index, exc_info=exc)
        result = failed(index, input, exc)
        if resume is None:
            return result
        return attrs.evolve(result, messages=list(resume.messages), usage=resume.usage,
                            pending_approvals=list(resume.pending))


def _outcome(index: int, input: Any, run: AgentRun, output_type: Any,
             resume: Resume | None) -> BatchResult:
    messages = run.result()
    error = run.error
    pending = run.pending_approvals
    output = None
    if output_type is not None and error is None and not pending:  # waiting: no answer yet
        try:
            output = run.output
        except Exception as exc:  # no final_result although the run ended normally
            error = describe(exc)
    usage = run.usage
    if resume is not None:
        messages = [*resume.messages, *messages]
        usage = resume.usage + usage
    return BatchResult(index, input, messages, run.text, output, usage, error, pending)


def run_group(make_agent: Callable[[], Agent],
              items: Sequence[tuple[int, Any, dict[str, Any] | None]],
              output_type: Any, output_mode: OutputMode = "tool",
              settings: RunSettings | None = None) -> list[dict[str, Any]]:
    """Run every `(index, input, resume)` of `items` at once, on a worker process.

    Each input is JSON-ready (`wire_input`), each resume a `Resume.to_wire()` or None.
    The function a remote executor (a Dask cluster, a process pool) runs: its arguments are
    pickled there, and it returns each run's result as JSON-ready data (`to_wire`), in
    completion order. The runs of one group run side by side on threads of the worker, with
    `settings` (adaptive concurrency: limits of the group's own, sized to it).
    """
    live = Live()
    settings = settings or RunSettings()
    adjust = settings.adjuster(AdaptiveLimits(len(items)) if settings.adaptive else None)

    def one(index: int, data: Any, resume: dict[str, Any] | None) -> BatchResult:
        return run_one(make_agent, index, from_wire_input(data), output_type, live,
                       output_mode, None if resume is None else Resume.from_wire(resume),
                       adjust)

    if len(items) == 1:
        return [to_wire(one(*items[0]))]
    with ThreadPoolExecutor(len(items), thread_name_prefix="agentcore-batch") as pool:
        futures = [pool.submit(one, *item) for item in items]
        return [to_wire(future.result()) for future in as_completed(futures)]
