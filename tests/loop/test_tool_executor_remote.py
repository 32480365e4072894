"""A `tool_executor` that runs tools in other processes: a process pool, a Dask cluster.

Such an executor gets a picklable work item and the run waits on its future: results, errors,
`deps`, unpicklable tools, aborts and timeouts all come back, and nothing hangs. The tools live
in `tests/remote_tools.py`, which the workers import. Each executor starts once for the module
(warmed up, so that its threads exist before the first test counts threads).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import remote_tools
from _internals import idempotency_key

import agentcore as ac
from agentcore.testing import record_events, scripted_model, tool_call

TIMEOUT = 30  # the first call on a fresh worker imports agentcore there


@pytest.fixture(scope="module", params=[pytest.param("process", marks=pytest.mark.slow),
                                        pytest.param("dask", marks=pytest.mark.slow)])
def executor(request: pytest.FixtureRequest) -> Iterator[Executor]:
    """A `ProcessPoolExecutor` (spawn) or a Dask `ClientExecutor` over two worker processes
    (the session's cluster, see `dask_client` in the conftest)."""
    if request.param == "process":
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
            assert list(pool.map(abs, [-1, -2])) == [1, 2]
            yield pool
        return
    dask_executor = request.getfixturevalue("dask_client").get_executor()
    assert dask_executor.submit(abs, -1).result(TIMEOUT) == 1
    yield dask_executor


def _results(messages: list[ac.AgentMessage]) -> list[tuple[str, str, bool]]:
    return [(m.tool_name, m.text, m.is_error) for m in messages
            if isinstance(m, ac.ToolResultMessage)]


def _run(executor: Executor, calls: list[ac.ToolCall], tools: list[ac.AgentTool],
         **options: Any) -> list[ac.AgentMessage]:
    with scripted_model([calls, "done"]) as fake, \
            ac.Agent(fake.model, tools=tools, tool_executor=executor, **options) as agent:
        messages = agent.prompt("go").result(TIMEOUT)
    assert messages[-1].text == "done"  # type: ignore[union-attr]
    return messages


def _wait_for(path: Path) -> None:
    """Wait for a file another process creates (no `threading.Event` crosses processes)."""
    deadline = time.monotonic() + TIMEOUT
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_remote_executor_returns_the_tools_results(executor: Executor) -> None:
    calls = [tool_call("lookup", {"city": "Rome"}, id="c1"),
             tool_call("echo", {"text": "hi"}, id="c2")]
    with scripted_model([calls, "done"]) as fake, \
            ac.Agent(fake.model, tools=[remote_tools.lookup, remote_tools.echo],
                     tool_executor=executor) as agent:
        run = agent.prompt("go")
        events = record_events(run, timeout=TIMEOUT)
    results = _results(run.result())
    assert [(name, is_error) for name, _, is_error in results] == [("lookup", False),
                                                                    ("echo", False)]
    assert results[0][1].startswith("Rome: sunny (pid ")
    assert results[0][1] != f"Rome: sunny (pid {os.getpid()})"  # another process ran it
    assert results[1][1] == "echo hi (c2)"
    ends = events.of(ac.ToolExecutionEndEvent)
    assert {e.tool_call_id: e.result.details for e in ends}["c2"] == {"aborted": False}
    assert events.of(ac.ToolExecutionUpdateEvent) == []  # progress stays on the worker


def test_remote_executor_hands_the_tool_the_runs_deps(executor: Executor) -> None:
    messages = _run(executor, [tool_call("whose")], [remote_tools.whose],
                    deps={"db": "prod"})
    assert _results(messages) == [("whose", "deps={'db': 'prod'}", False)]


def test_remote_executor_gives_the_tool_its_idempotency_key(executor: Executor,
                                                           tmp_path: Path) -> None:
    with ac.SqliteSession(tmp_path / "chat.db") as session:
        messages = _run(executor, [tool_call("keyed", id="c1")], [remote_tools.keyed],
                        session=session)
        key = idempotency_key(session.identity, "c1")
    assert _results(messages) == [("keyed", f"{key} {key}", False)]


def test_remote_tool_that_raises_gives_the_model_its_error(
    executor: Executor, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="agentcore.tools"):
        messages = _run(executor, [tool_call("explode", {"reason": "bad city"})],
                        [remote_tools.explode])
    assert _results(messages) == [("explode", "ValueError: bad city", True)]
    assert "raise ValueError(reason)" in caplog.text  # the worker's traceback, for the developer


def test_remote_executor_explains_a_tool_that_cannot_be_pickled(
    executor: Executor, caplog: pytest.LogCaptureFixture
) -> None:
    """Pickling fails in the process pool's feeder thread (reported through the future) and
    in Dask's submit (raised there); the model and the log get the same explanation."""
    lock = threading.Lock()

    @ac.tool
    def lookup(city: str) -> str:
        """A local function holding a lock: neither pickle nor cloudpickle takes it."""
        with lock:
            return city

    with caplog.at_level(logging.WARNING, logger="agentcore.tools"):
        messages = _run(executor, [tool_call("lookup", {"city": "Rome"}),
                                   tool_call("lookup", {"city": "Oslo"})],
                        [lookup, remote_tools.lookup])
    where = type(executor).__name__
    reason = ("Can't pickle local object" if where == "ProcessPoolExecutor"
              else "cannot pickle '_thread.lock' object")
    texts = [text for _, text, is_error in _results(messages) if is_error]
    assert len(texts) == 2
    for text in texts:
        assert text.startswith(f"tool 'lookup' cannot run on {where}: it cannot be pickled (")
        assert reason in text
        assert text.endswith("). Define it at module level, or use a thread executor.")
    assert texts[0] in caplog.text


def test_remote_executor_explains_deps_that_cannot_be_pickled(executor: Executor) -> None:
    messages = _run(executor, [tool_call("whose")], [remote_tools.whose],
                    deps=threading.Lock())
    [(_, text, is_error)] = _results(messages)
    assert is_error
    assert text.startswith(f"tool 'whose' cannot run on {type(executor).__name__}: "
                           "its deps cannot be pickled (")
    assert text.endswith("). Pass deps that pickle, or use a thread executor.")


def test_abort_during_a_long_remote_tool_ends_the_run_within_the_grace(
    executor: Executor, tmp_path: Path
) -> None:
    started, release, finished = tmp_path / "started", tmp_path / "release", tmp_path / "finished"
    call = tool_call("hold", {"started": str(started), "release": str(release),
                              "finished": str(finished)})
    try:
        with scripted_model([call]) as fake, \
                ac.Agent(fake.model, tools=[remote_tools.hold], tool_executor=executor) as agent:
            run = agent.prompt("go")
            _wait_for(started)  # the tool is running on a worker, until released (30 s at most)
            run.abort()
            assert run.wait(TIMEOUT)
            held_on = not finished.exists()
    finally:
        release.touch()  # the worker is free again for the next test
    assert held_on  # the run ended while the tool still ran: it did not wait for it
    assert _results(run.result()) == [("hold", "Operation aborted", True)]


def test_a_remote_tool_past_its_timeout_gives_the_timeout_error(
    executor: Executor, tmp_path: Path
) -> None:
    release, finished = tmp_path / "release", tmp_path / "finished"
    call = tool_call("hold", {"started": str(tmp_path / "started"), "release": str(release),
                              "finished": str(finished)})
    try:
        messages = _run(executor, [call], [remote_tools.hold], tool_timeout=0.5)
        held_on = not finished.exists()
    finally:
        release.touch()
    assert held_on  # the run went on while the tool still ran: it did not wait for it
    assert _results(messages) == [("hold", "tool 'hold' timed out after 0.5 s", True)]


class _MyThreadPool(ThreadPoolExecutor):
    """A subclass still runs tools in this process."""


@pytest.mark.parametrize("pool_type", [ThreadPoolExecutor, _MyThreadPool])
def test_thread_pool_executor_still_gets_updates_and_the_signal(
    pool_type: type[ThreadPoolExecutor],
) -> None:
    waiting, saw_abort = threading.Event(), threading.Event()

    def wait_for_abort(tool_call_id: str, args: Any, signal: ac.AbortSignal,
                       on_update: Any) -> ac.AgentToolResult:
        signal.add_listener(saw_abort.set)
        waiting.set()
        saw_abort.wait(TIMEOUT)
        return ac.AgentToolResult([ac.TextContent("stopped")])

    waits = ac.AgentTool("wait", "Wait for the abort.", {"type": "object"}, wait_for_abort)
    calls = [tool_call("echo", {"text": "hi"}, id="c1"), tool_call("wait", id="c2")]
    with pool_type(2, thread_name_prefix="mine") as pool, scripted_model([calls]) as fake, \
            ac.Agent(fake.model, tools=[remote_tools.echo, waits], tool_executor=pool) as agent:
        run = agent.prompt("go")
        assert waiting.wait(TIMEOUT)
        run.abort()
        events = record_events(run, timeout=TIMEOUT)
    assert saw_abort.is_set()
    [update] = events.of(ac.ToolExecutionUpdateEvent)
    assert update.partial_result == ac.AgentToolResult([ac.TextContent("halfway")])
    assert _results(run.result()) == [("echo", "echo hi (c1)", False),
                                      ("wait", "stopped", False)]


def test_function_tool_pickles_by_reference() -> None:
    assert pickle.loads(pickle.dumps(remote_tools.lookup)) is remote_tools.lookup
    assert pickle.loads(pickle.dumps(remote_tools.lookup.execute)) is remote_tools.lookup.execute
    weather = pickle.loads(pickle.dumps(remote_tools.weather))  # rebuilt from `forecast`
    assert (weather.name, weather.timeout, weather.parameters) == (
        "weather", 3, remote_tools.weather.parameters)
    execute = pickle.loads(pickle.dumps(remote_tools.weather.execute))
    assert execute("c1", {"city": "Oslo"}, ac.AbortController().signal, None) == \
        ac.AgentToolResult([ac.TextContent("Oslo: rain")])
    shadowed = ac.tool(remote_tools.lookup.fn, name="again")  # its function's name holds
    with pytest.raises(pickle.PicklingError, match="not the same object"):  # another tool
        pickle.dumps(shadowed)
