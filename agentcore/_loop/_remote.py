"""Tool calls on an executor that may run them in another process (a process pool, Dask).

Any `Executor` but a `ThreadPoolExecutor` may run a call where neither the run's inbox nor its
signal exists, so it gets `run_tool`, a module-level function with picklable arguments, and
the run waits on its `Future`. Over there the tool's signal never aborts and `on_update` drops
partial results; an abort or a timeout still ends the run's wait (and cancels the future).
"""

from __future__ import annotations

import importlib
import logging
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import attrs

from .._core import (
    AbortController,
    AbortSignal,
    AgentTool,
    AgentToolResult,
    TextContent,
    ToolUpdate,
    enter_deps,
    failure_text,
    leave_deps,
)

__all__ = ["Failure", "check_result", "check_update", "outcome", "run_tool"]

_tools_log = logging.getLogger("agentcore.tools")

Execute = Callable[[str, Any, AbortSignal, ToolUpdate], AgentToolResult]


@attrs.frozen
class Failure:
    """A tool that raised on a worker: its exception as text, since an exception may not pickle.

    `text` is what the model reads (`ValueError: bad city`), `trace` the worker's traceback,
    for the tools' log.
    """

    text: str
    trace: str


def check_result(name: str, result: object) -> None:
    """Raise `TypeError` unless tool `name` returned an `AgentToolResult`."""
    if not isinstance(result, AgentToolResult):
        raise TypeError(f"tool {name!r} returned {result!r}, expected an AgentToolResult")


def check_update(partial: object) -> None:
    """Raise `TypeError` unless `partial`, given to `on_update`, is an `AgentToolResult`.

    The `on_update` of a call run elsewhere: the update is checked as at home, then dropped.
    """
    if not isinstance(partial, AgentToolResult):
        raise TypeError(f"on_update: 'partial' must be an AgentToolResult, got {partial!r}")


def run_tool(
    name: str, execute: Execute, tool_call_id: str, args: Any, deps: Any, scope: str = ""
) -> AgentToolResult | Failure:
    """Run one tool call on whatever worker the executor chose (the work item it pickles).

    `deps`, and the call's idempotency key (from the run's `scope` and the call's id), are the
    worker thread's for the call, as in this process. What the tool raises comes back as a
    `Failure`, so that the future's own exception always means the executor could not run the
    call (a pickling error, a dead worker).
    """
    previous = enter_deps(deps, scope, tool_call_id)
    try:
        result = execute(tool_call_id, args, AbortController().signal, check_update)
        check_result(name, result)
    except Exception as exc:
        return Failure(failure_text(exc), "".join(traceback.format_exception(exc)))
    finally:
        leave_deps(previous)
    return result


def outcome(
    future: Future[Any], tool: AgentTool, args: Any, deps: Any, executor: object
) -> tuple[AgentToolResult, bool] | None:
    """What the done `future` of a call to `tool` means: `(result, is_error)`, None if cancelled.

    Runs on the run's thread, so that explaining a failure (pickling the parts again to find
    the one that does not pickle) never holds up the executor's own threads.
    """
    if future.cancelled():
        return None
    exc = future.exception()
    if exc is not None:
        text = _cannot_run(tool, args, deps, executor, exc)
        _tools_log.warning("%s", text, exc_info=exc)
        return AgentToolResult([TextContent(text)]), True
    value = future.result()
    if isinstance(value, Failure):
        _tools_log.info("tool %r raised %s on its worker\n%s", tool.name, value.text,
                        value.trace.rstrip())
        return AgentToolResult([TextContent(value.text)]), True
    if not isinstance(value, AgentToolResult):  # an executor that is not what it says
        text = f"tool {tool.name!r} returned {value!r} through its executor, " \
               "expected an AgentToolResult"
        return AgentToolResult([TextContent(text)]), True
    return value, False


def _cannot_run(
    tool: AgentTool, args: Any, deps: Any, executor: object, exc: BaseException
) -> str:
    """The error text of a call that `executor` could not run: which part does not pickle.

    A process pool pickles in a feeder thread and reports through the future; Dask may pickle
    at submit time or later: either way the exception alone rarely names the culprit.
    """
    where = type(executor).__name__
    dumps = _dumps_for(executor)
    for what, value, advice in (
        ("it", tool.execute, "Define it at module level"),
        ("its deps", deps, "Pass deps that pickle"),
        ("its arguments", args, "Return picklable arguments from prepare_arguments"),
    ):
        try:
            dumps(value)
        except Exception as reason:
            return (f"tool {tool.name!r} cannot run on {where}: {what} cannot be pickled "
                    f"({reason}). {advice}, or use a thread executor.")
    return f"tool {tool.name!r} could not run on {where}: {failure_text(exc)}"


def _dumps_for(executor: object) -> Callable[[object], bytes]:
    """How `executor` pickles: Dask's executor with cloudpickle (which takes local functions).

    Imported here, on the failure path: `import agentcore` need not load either.
    """
    if type(executor).__module__.partition(".")[0] == "distributed":
        try:
            dumps: Callable[[object], bytes] = importlib.import_module("cloudpickle").dumps
        except ImportError:
            pass
        else:
            return dumps
    import pickle

    return pickle.dumps
