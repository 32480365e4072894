"""Running inputs: one run on this process's thread, or a group of runs on a remote worker."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from .._agent import Agent, AgentRun, prompt_here
from .._core import describe
from .._loop import OutputMode
from ..providers import new_http_session
from ._result import BatchResult, failed, from_wire_input, to_wire

__all__ = ["Live", "run_group", "run_one"]

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


def run_one(make_agent: Callable[[], Agent], index: int, input: Any, output_type: Any,
            live: Live, http_session: Any, output_mode: OutputMode = "tool") -> BatchResult:
    """Make an agent, run `input` on it to the end on this thread, and close the agent.

    `http_session` serves an agent that speaks HTTP and has no session of its own, so that the
    batch's runs share keep-alive connections. Never raises: a failure is the result's error.
    """
    try:
        if live.stopped:
            raise RuntimeError(STOPPED_TEXT)
        agent = make_agent()
        if not isinstance(agent, Agent):
            raise TypeError(f"make_agent() returned {agent!r}, expected an Agent")
        try:
            run = prompt_here(agent, input, output_type=output_type, output_mode=output_mode,
                              on_start=live.add, http_session=http_session)
            live.discard(run)
        finally:
            agent.close()
        return _outcome(index, input, run, output_type)
    except Exception as exc:
        _log.info("batch input %d failed to run", index, exc_info=exc)
        return failed(index, input, exc)


def _outcome(index: int, input: Any, run: AgentRun, output_type: Any) -> BatchResult:
    messages = run.result()
    error = run.error
    output = None
    if output_type is not None and error is None:
        try:
            output = run.output
        except Exception as exc:  # no final_result although the run ended normally
            error = describe(exc)
    return BatchResult(index, input, messages, run.text, output, run.usage, error)


_worker_session: list[Any] = []
_worker_lock = threading.Lock()


def _process_session() -> Any:
    """The keep-alive HTTP session the runs of this worker process share (made on first use)."""
    with _worker_lock:
        if not _worker_session:
            _worker_session.append(new_http_session(256))
        return _worker_session[0]


def run_group(make_agent: Callable[[], Agent], items: Sequence[tuple[int, Any]],
              output_type: Any, output_mode: OutputMode = "tool") -> list[dict[str, Any]]:
    """Run every `(index, JSON-ready input)` of `items` at once, on a worker process.

    The function a remote executor (a Dask cluster, a process pool) runs: its arguments are
    pickled there, and it returns each run's result as JSON-ready data (`to_wire`), in
    completion order. The runs of one group run side by side on threads of the worker.
    """
    live, session = Live(), _process_session()
    if len(items) == 1:
        index, data = items[0]
        return [to_wire(run_one(make_agent, index, from_wire_input(data), output_type, live,
                                session, output_mode))]
    with ThreadPoolExecutor(len(items), thread_name_prefix="agentcore-batch") as pool:
        futures = [pool.submit(run_one, make_agent, index, from_wire_input(data), output_type,
                               live, session, output_mode) for index, data in items]
        return [to_wire(future.result()) for future in as_completed(futures)]
