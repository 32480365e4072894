"""`agentcore.batch.run_batch` over real parts: a local chat server, thread and process pools,
a Dask `LocalCluster`, and a Jupyter kernel (API §16).

The server (`tests/chat_server.py`) answers by prompt: `fail...` with HTTP 400, `weather <city>`
with a `get_weather` call and then `"weather: <result>"`, a request declaring `final_result`
with a call of it, anything else with `"echo: <text>"`. The agents and values that worker
processes import live in `tests/batch_agents.py`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import paths
import pytest
from batch_agents import City, broken_weather, make_agent, make_not_an_agent, make_nothing
from chat_server import ChatServer, quick

import agentcore as ac
from agentcore.batch import BatchResult, run_batch
from agentcore.testing import scripted_model

WAIT_S = 10.0
EXAMPLE = paths.EXAMPLES / "batch.py"


def _wait_until(condition: Callable[[], bool], timeout: float = WAIT_S) -> bool:
    """Poll `condition` (state other threads own) until it holds; False after `timeout`."""
    tick, deadline = threading.Event(), time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        tick.wait(0.01)
    return True


def agents(server: ChatServer, *tools: ac.AgentTool) -> Callable[[], ac.Agent]:
    """A `make_agent` for `server`, with `tools` (default: the weather tool)."""
    if tools:
        return functools.partial(make_agent, server.url, tools)
    return functools.partial(make_agent, server.url)


def pieces(text: str) -> int:
    """How many chunks (and output tokens) the server streams `text` in."""
    return -(-len(text) // 4)


def roles(result: BatchResult) -> list[str]:
    """The roles of a result's messages, checking that they are message objects."""
    assert all(isinstance(m, ac.AgentMessage.__args__) for m in result.messages)
    return [m.role for m in result.messages]


def by_index(results: list[BatchResult]) -> dict[int, BatchResult]:
    """Results by input index, checking that each index came once."""
    indexed = {r.index: r for r in results}
    assert len(indexed) == len(results)
    return indexed


def weather_text(city: str) -> str:
    """The text a run of `weather <city>` ends with, its tool run in this process."""
    return f"weather: sunny in {city} (pid {os.getpid()})"


def expected_text(prompt: str) -> str:
    """What the server's answer to `prompt` ends with, its tools run in this process."""
    if prompt.startswith("weather "):
        return weather_text(prompt.removeprefix("weather "))
    return f"echo: {prompt}"


# --- the default executor ----------------------------------------------------------------------


def test_run_batch_yields_every_input_once_in_completion_order(server: ChatServer) -> None:
    release = threading.Event()

    @ac.tool(name="get_weather")
    def held_weather(city: str) -> str:
        """The weather; Slowtown's answer waits until the test lets it go."""
        if city == "Slowtown":
            assert release.wait(WAIT_S)
        return f"sunny in {city} (pid {os.getpid()})"

    inputs = ["weather Slowtown"] + [f"weather City{i}" if i % 3 == 0 else f"hello {i}"
                                     for i in range(1, 30)]
    results = []
    for result in run_batch(agents(server, held_weather), inputs):
        results.append(result)
        if len(results) == 29:  # every other input is done: let the slow one finish
            release.set()

    assert [r.index for r in results][-1] == 0  # yielded as it completed: last
    assert sorted(r.index for r in results) == list(range(30))
    for result in results:
        prompt = inputs[result.index]
        assert (result.input, result.text, result.output, result.error) == (
            prompt, expected_text(prompt), None, None)
        assert result.ok
        assert isinstance(result.messages[0], ac.UserMessage)
        assert result.messages[0].content == prompt
        if prompt.startswith("weather "):
            assert roles(result) == ["user", "assistant", "toolResult", "assistant"]
            calls = (10 + 10, 5 + pieces(result.text))  # the tool call, then the answer
        else:
            assert roles(result) == ["user", "assistant"]
            calls = (10, pieces(result.text))
        assert (result.usage.input, result.usage.output, result.usage.total_tokens) == (
            *calls, sum(calls))
    assert server.requests == 30 + 10


def test_run_batch_max_concurrency_bounds_the_runs_in_flight(server: ChatServer) -> None:
    server.delay_s = 0.01  # streams overlap

    results = list(run_batch(agents(server), [f"hello {i}" for i in range(24)],
                             max_concurrency=3))

    assert len(results) == 24
    assert 2 <= server.max_streaming <= 3


def test_run_batch_runs_share_one_keep_alive_session(server: ChatServer) -> None:
    inputs = [f"weather City{i}" if i % 2 else f"hello {i}" for i in range(40)]

    results = list(run_batch(agents(server), inputs, max_concurrency=4))

    assert all(r.ok for r in results)
    assert server.requests == 60
    assert server.accepted <= 4  # one connection per run at once, reused by the next runs


def test_run_batch_keeps_connections_alive_past_ten_runs_at_once(
    server: ChatServer, caplog: pytest.LogCaptureFixture,
) -> None:
    server.delay_s = 0.01  # the streams overlap

    with caplog.at_level(logging.WARNING):
        results = list(run_batch(agents(server), [f"hello {i}" for i in range(96)],
                                 max_concurrency=32))

    assert all(r.ok for r in results)
    assert server.max_streaming > 10  # past requests' default pool of 10 connections
    assert server.accepted <= 32
    assert "Connection pool is full" not in caplog.text


# --- failures are results ----------------------------------------------------------------------


def test_run_batch_a_failed_request_is_a_result_with_its_error(server: ChatServer) -> None:
    results = by_index(list(run_batch(agents(server), ["hello", "fail now", "weather Rome"])))

    assert [(r.text, r.error) for _, r in sorted(results.items())] == [
        ("echo: hello", None), ("", "400 bad prompt"), (weather_text("Rome"), None)]
    assert not results[1].ok
    assert roles(results[1]) == ["user", "assistant"]
    assert results[1].messages[-1].stop_reason == ac.StopReason.ERROR  # type: ignore[union-attr]


def test_run_batch_make_agent_raising_is_a_result(server: ChatServer) -> None:
    results = list(run_batch(functools.partial(make_nothing, server.url), ["a", "b"]))

    assert sorted(results, key=lambda r: r.index) == [
        BatchResult(0, "a", error="ValueError: boom"),
        BatchResult(1, "b", error="ValueError: boom"),
    ]
    assert server.requests == 0


def test_run_batch_make_agent_returning_no_agent_is_a_result(server: ChatServer) -> None:
    [result] = run_batch(functools.partial(make_not_an_agent, server.url), ["a"])

    assert result == BatchResult(0, "a", error="TypeError: make_agent() returned "
                                               "'not an agent', expected an Agent")


def test_run_batch_a_raising_tool_is_the_models_business(server: ChatServer) -> None:
    [result] = run_batch(agents(server, broken_weather), ["weather Rome"])

    assert (result.text, result.error) == (
        "weather: RuntimeError: no weather station in Rome", None)
    tool_result = result.messages[2]
    assert isinstance(tool_result, ac.ToolResultMessage)
    assert tool_result.is_error


# --- structured output -------------------------------------------------------------------------


def test_run_batch_output_type_gives_typed_outputs(server: ChatServer) -> None:
    cities = by_index(list(run_batch(agents(server), ["Rome", "Oslo"], output_type=City)))
    names = by_index(list(run_batch(agents(server), ["Rome", "fail"], output_type=str)))

    assert [r.output for _, r in sorted(cities.items())] == [City("Rome", 4), City("Oslo", 4)]
    assert all(r.ok for r in cities.values())
    assert (names[0].output, names[0].error) == ("Rome", None)
    assert (names[1].output, names[1].error) == (None, "400 bad prompt")


def test_run_batch_native_output_mode_gives_typed_outputs() -> None:
    with scripted_model(['{"response": 1}', '{"response": 2}']) as fake:
        results = list(run_batch(lambda: ac.Agent(fake.model), ["a", "b"], output_type=int,
                                 output_mode="native"))
        assert sorted(r.output for r in results) == [1, 2]
        assert [c.options.output_schema for c in fake.calls] == [{
            "type": "object", "properties": {"response": {"type": "integer"}},
            "required": ["response"], "additionalProperties": False}] * 2


def test_run_batch_tool_choice_and_native_format_reach_the_server(server: ChatServer) -> None:
    tool = by_index(list(run_batch(agents(server), ["Rome"], output_type=City)))
    assert tool[0].output == City("Rome", 4)
    assert [b.get("tool_choice") for b in server.bodies] == ["required"]
    native = by_index(list(run_batch(agents(server), ["Oslo"], output_type=City,
                                     output_mode="native")))
    assert native[0].output == City("Oslo", 4)
    body = server.bodies[-1]
    assert "tool_choice" not in body
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["name",
                                                                           "population"]


# --- the store ---------------------------------------------------------------------------------


def stored_rows(path: Path) -> list[tuple[int, str]]:
    """The (index, input JSON) of every stored result."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return sorted(db.execute("SELECT idx, input FROM batch_results").fetchall())


def test_run_batch_store_keeps_results_and_runs_only_the_rest(
    server: ChatServer, tmp_path: Path,
) -> None:
    store = tmp_path / "batch.db"
    inputs = ["hello", "fail one", "weather Rome", "fail two"]

    first = by_index(list(run_batch(agents(server), inputs, store=store)))

    assert stored_rows(store) == [(0, '"hello"'), (2, '"weather Rome"')]
    assert server.requests == 5
    del server.prompts[:]

    second = by_index(list(run_batch(agents(server), inputs, store=str(store))))

    assert sorted(server.prompts) == ["fail one", "fail two"]  # only the failed ones ran
    assert server.requests == 5 + 2
    assert (second[0], second[2]) == (first[0], first[2])  # whole values, messages included
    assert all(isinstance(m, ac.AgentMessage.__args__) for m in second[2].messages)
    assert [second[1].error, second[3].error] == ["400 bad prompt"] * 2
    del server.prompts[:]

    changed = ["hello again", *inputs[1:]]
    third = by_index(list(run_batch(agents(server), changed, store=store)))

    assert sorted(server.prompts) == ["fail one", "fail two", "hello again"]
    assert (third[0].text, third[2]) == ("echo: hello again", first[2])
    assert stored_rows(store) == [(0, '"hello again"'), (0, '"hello"'), (2, '"weather Rome"')]


def test_run_batch_store_compares_message_inputs_as_json(
    server: ChatServer, tmp_path: Path,
) -> None:
    store = tmp_path / "batch.db"
    inputs: list[Any] = [ac.UserMessage("hello", timestamp=1),
                         [ac.UserMessage("weather Rome", timestamp=2)]]

    first = by_index(list(run_batch(agents(server), inputs, store=store)))
    requests = server.requests
    again: list[Any] = [ac.UserMessage("hello", timestamp=1),
                        (ac.UserMessage("weather Rome", timestamp=2),)]
    second = by_index(list(run_batch(agents(server), again, store=store)))
    other = by_index(list(run_batch(agents(server), [ac.UserMessage("hello", timestamp=3)],
                                    store=store)))

    assert [first[0].text, first[1].text] == ["echo: hello", weather_text("Rome")]
    assert server.requests == requests + 1  # only the one with another timestamp ran
    assert (second[0].messages, second[1].messages) == (first[0].messages, first[1].messages)
    assert second[1].input == again[1]  # the input given, not the stored one
    assert other[0].messages[0] == ac.UserMessage("hello", timestamp=3)


def test_run_batch_store_gives_back_typed_outputs(server: ChatServer, tmp_path: Path) -> None:
    store = tmp_path / "batch.db"
    first = by_index(list(run_batch(agents(server), ["Rome", "Oslo"], output_type=City,
                                    store=store)))
    requests = server.requests

    second = by_index(list(run_batch(agents(server), ["Rome", "Oslo"], output_type=City,
                                     store=store)))

    assert server.requests == requests
    assert [second[i].output for i in range(2)] == [City("Rome", 4), City("Oslo", 4)]
    for i in range(2):
        assert attrs.evolve(second[i], messages=[]) == attrs.evolve(first[i], messages=[])
        # the messages as JSON: the final_result's `details` (a City here) comes back as a dict
        assert ac.to_json(second[i].messages) == ac.to_json(first[i].messages)
        final = second[i].messages[-1]
        assert isinstance(final, ac.ToolResultMessage)
        assert final.details == {"name": first[i].input, "population": 4}


def test_run_batch_store_under_another_output_type_runs_again(
    server: ChatServer, tmp_path: Path,
) -> None:
    store = tmp_path / "batch.db"
    list(run_batch(agents(server), ["Rome"], output_type=City, store=store))
    requests = server.requests

    [result] = run_batch(agents(server), ["Rome"], output_type=int, store=store)

    assert server.requests > requests  # the stored City is no int: it ran again
    assert result.input == "Rome"


def test_run_batch_store_that_is_not_sqlite_raises_at_the_call(
    server: ChatServer, tmp_path: Path,
) -> None:
    store = tmp_path / "notes.txt"
    store.write_text("these are not the results you are looking for\n" * 100)

    with pytest.raises(ValueError, match=r"^'store': cannot open .*notes\.txt"):
        run_batch(agents(server), ["hello"], store=store)
    with pytest.raises(ValueError, match="'store'"):
        run_batch(agents(server), ["hello"], store=tmp_path)  # a directory
    assert server.requests == 0


# --- progress ----------------------------------------------------------------------------------


def test_run_batch_progress_callable_gets_each_result_on_the_iterating_thread(
    server: ChatServer, tmp_path: Path,
) -> None:
    calls: list[tuple[int, int, BatchResult, threading.Thread]] = []
    store = tmp_path / "batch.db"
    list(run_batch(agents(server), ["a", "b"], store=store))

    def progress(done: int, total: int, result: BatchResult) -> None:
        calls.append((done, total, result, threading.current_thread()))

    results = list(run_batch(agents(server), ["a", "b", "fail", "weather Rome", "d"],
                             store=store, progress=progress))

    assert [(done, total) for done, total, _, _ in calls] == [(i, 5) for i in range(1, 6)]
    assert [result for _, _, result, _ in calls] == results  # stored ones first
    assert [r.index for r in results[:2]] == [0, 1]
    assert {thread for *_, thread in calls} == {threading.current_thread()}


def test_run_batch_progress_callable_that_raises_is_logged_once(
    server: ChatServer, caplog: pytest.LogCaptureFixture,
) -> None:
    def progress(done: int, total: int, result: BatchResult) -> None:
        raise RuntimeError("no screen")

    with caplog.at_level(logging.ERROR, logger="agentcore.batch"):
        results = list(run_batch(agents(server), ["a", "b", "c"], progress=progress))

    assert len(results) == 3
    [record] = caplog.records
    assert "progress callback" in record.getMessage()
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "no screen"


def test_run_batch_progress_true_without_tqdm_draws_one_line_on_stderr(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # `import tqdm` raises ImportError

    results = list(run_batch(agents(server), ["a", "fail", "c", "d", "e"], progress=True))

    out, err = capfd.readouterr()
    assert len(results) == 5
    assert out == ""
    assert err.startswith("\rbatch: 0/5 runs, ")
    assert err.endswith(" s\n")
    assert "\n" not in err[:-1]  # one line, redrawn in place
    last = err[:-1].rsplit("\r", 1)[1]
    assert re.fullmatch(r"batch: 5/5 runs, 1 failed, \d+\.\d s", last)


def test_run_batch_progress_true_draws_a_tqdm_bar_without_a_monitor_thread(
    server: ChatServer, capfd: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("tqdm")

    results = list(run_batch(agents(server), ["a", "b", "fail", "d"], progress=True))

    err = capfd.readouterr().err
    assert len(results) == 4
    assert "batch: 100%" in err
    assert "4/4" in err
    assert "failed=1" in err
    assert not [t for t in threading.enumerate() if type(t).__name__ == "TMonitor"]


# --- leaving early -----------------------------------------------------------------------------


def test_run_batch_break_aborts_the_runs_in_flight() -> None:
    held = quick(ChatServer(delay_s=3600.0))  # an echo run's first chunk is an hour away
    try:
        inputs = ["fail fast"] + [f"hello {i}" for i in range(20)]  # a 400 comes at once
        for result in run_batch(agents(held), inputs, max_concurrency=4):
            first = result
            break  # the generator, no longer referenced, is closed here
        # the server still holds the other runs' streams: only their abort can end them
        ended = _wait_until(lambda: not [t for t in threading.enumerate()
                                         if t.name.startswith("agentcore")])
        requests = held.requests
    finally:
        held.close()

    assert first.error == "400 bad prompt"
    assert ended, "the runs in flight went on after the break"
    assert requests <= 4  # no run started after the break


def test_run_batch_an_exception_in_the_batch_aborts_the_runs_at_once() -> None:
    """Ctrl-C, say, during a store write: its traceback keeps the batch's frame alive."""
    slow = quick(ChatServer(delay_s=1.0))
    try:
        results = run_batch(agents(slow), ["fail fast"] + [f"hello {i}" for i in range(8)],
                            max_concurrency=4)
        assert isinstance(results, Generator)
        assert next(results).error == "400 bad prompt"
        with pytest.raises(KeyboardInterrupt) as raised:
            results.throw(KeyboardInterrupt())
        batch_threads = [t for t in threading.enumerate() if t.name.startswith("agentcore-")]
        for thread in batch_threads:
            thread.join(3.0)
        assert [t.name for t in batch_threads if t.is_alive()] == []  # while still raised
        del raised
    finally:
        slow.close()


def test_run_batch_closed_before_iterating_runs_nothing(server: ChatServer) -> None:
    results = run_batch(agents(server), ["hello", "weather Rome"])
    assert isinstance(results, Generator)
    results.close()

    assert list(results) == []
    assert (server.accepted, server.requests) == (0, 0)


# --- a caller's executor -----------------------------------------------------------------------


def test_run_batch_on_the_callers_thread_pool_leaves_it_running(server: ChatServer) -> None:
    with ThreadPoolExecutor(3, thread_name_prefix="caller-pool") as pool:
        results = list(run_batch(agents(server), [f"hello {i}" for i in range(10)],
                                 executor=pool))
        assert pool.submit(abs, -7).result(WAIT_S) == 7  # not shut down by the batch

    assert sorted(r.text for r in results) == sorted(f"echo: hello {i}" for i in range(10))
    assert server.max_streaming <= 3
    assert server.accepted <= 3  # the batch's session, shared by the pool's threads


# --- bad input ---------------------------------------------------------------------------------

_URL = "http://127.0.0.1:9/v1"  # never called: every case raises before anything runs


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        pytest.param({"make_agent": 42}, TypeError, "^'make_agent' must be a function",
                     id="make_agent-not-callable"),
        pytest.param({"make_agent": "agent"}, TypeError, "^'make_agent' must be .* not an Agent",
                     id="make_agent-an-agent"),
        pytest.param({"inputs": "hello"}, TypeError, "^'inputs' .* wrap it in a list",
                     id="inputs-a-str"),
        pytest.param({"inputs": 42}, TypeError, "^'inputs' must be an iterable",
                     id="inputs-not-iterable"),
        pytest.param({"inputs": ["a", "b", "c", 42]}, TypeError, r"^'inputs\[3\]' must be",
                     id="inputs-bad-item"),
        pytest.param({"inputs": [["a"]]}, TypeError, r"^'inputs\[0\]' must be",
                     id="inputs-list-of-str"),
        pytest.param({"executor": "pool"}, TypeError, "^'executor' must be",
                     id="executor-not-an-executor"),
        pytest.param({"max_concurrency": 0}, ValueError, "^'max_concurrency' must be",
                     id="max_concurrency-0"),
        pytest.param({"max_concurrency": True}, ValueError, "^'max_concurrency' must be",
                     id="max_concurrency-bool"),
        pytest.param({"max_concurrency": 1.5}, ValueError, "^'max_concurrency' must be",
                     id="max_concurrency-float"),
        pytest.param({"output_type": set[int]}, TypeError, "^'output_type' set",
                     id="output_type-unsupported"),
        pytest.param({"output_mode": "json"}, ValueError, "^'output_mode' must be 'tool' or",
                     id="output_mode-unknown"),
        pytest.param({"output_mode": "native"}, ValueError,
                     "^'output_mode' 'native' needs an 'output_type'",
                     id="output_mode-native-without-output_type"),
        pytest.param({"store": 42}, TypeError, "^'store' must be a path",
                     id="store-not-a-path"),
        pytest.param({"progress": "yes"}, TypeError, "^'progress' must be",
                     id="progress-not-callable"),
    ],
)
def test_run_batch_bad_argument_raises_at_the_call_naming_it(
    changes: dict[str, Any], error: type[Exception], match: str,
) -> None:
    arguments: dict[str, Any] = {"make_agent": functools.partial(make_agent, _URL),
                                 "inputs": ["hello"]}
    arguments.update(changes)
    if arguments["make_agent"] == "agent":
        arguments["make_agent"] = make_agent(_URL)

    with pytest.raises(error, match=match):
        run_batch(**arguments)  # raises before iterating


# --- a process pool ----------------------------------------------------------------------------


class RecordingPool(ProcessPoolExecutor):
    """A spawn-context process pool that records how many inputs each task it gets holds."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers, mp_context=multiprocessing.get_context("spawn"))
        self.groups: list[int] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        self.groups.append(len(args[1]))  # run_group(make_agent, items, output_type)
        return super().submit(fn, *args, **kwargs)


@pytest.mark.slow
def test_run_batch_on_a_process_pool_runs_inputs_in_groups(server: ChatServer) -> None:
    inputs = [f"weather City{i}" if i % 2 else f"hello {i}" for i in range(12)]

    with RecordingPool(2) as pool:
        results = by_index(list(run_batch(agents(server), inputs, executor=pool,
                                          max_concurrency=6)))
        typed = by_index(list(run_batch(agents(server), ["Rome", "fail"], executor=pool,
                                        output_type=City)))

    assert pool.groups == [3, 3, 3, 3, 1, 1]  # 6 runs at once on 2 workers: 3 per task
    pids = set()
    for index, result in results.items():
        assert result.error is None
        assert isinstance(result.messages[0], ac.UserMessage)
        if index % 2:
            match = re.fullmatch(rf"weather: sunny in City{index} \(pid (\d+)\)", result.text)
            assert match is not None, result.text
            pids.add(int(match[1]))
            assert roles(result) == ["user", "assistant", "toolResult", "assistant"]
        else:
            assert result.text == f"echo: hello {index}"
    assert os.getpid() not in pids  # the tools ran in the workers
    assert (typed[0].output, typed[0].error) == (City("Rome", 4), None)
    assert (typed[1].output, typed[1].error) == (None, "400 bad prompt")


@pytest.mark.slow
def test_run_batch_unpicklable_make_agent_or_output_type_raises_for_a_process_pool() -> None:
    @ac.tool
    def local(city: str) -> str:
        """A tool defined in a function: not picklable by reference."""
        return city

    @attrs.frozen
    class Local:
        """A class defined in a function: not picklable by reference."""

        name: str

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(TypeError, match=r"^'make_agent' cannot be pickled.*ProcessPool"):
            run_batch(lambda: make_agent(_URL), ["hello"], executor=pool)
        with pytest.raises(TypeError, match=r"^'make_agent' cannot be pickled"):
            run_batch(functools.partial(make_agent, _URL, [local]), ["hello"], executor=pool)
        with pytest.raises(TypeError, match=r"^'output_type' cannot be pickled"):
            run_batch(functools.partial(make_agent, _URL), ["hello"], executor=pool,
                      output_type=Local)


# --- Jupyter -----------------------------------------------------------------------------------

NOTEBOOK_CELL = """\
import sys
sys.modules["ipywidgets"] = None  # the library's own display line, not tqdm's widget
import agentcore as ac
from agentcore.batch import run_batch
from agentcore.providers.faux import faux_assistant_message, register_faux_provider

faux = register_faux_provider()
faux.set_responses([faux_assistant_message(f"answer {i}") for i in range(5)])
results = list(run_batch(lambda: ac.Agent(faux.get_model()), [f"q{i}" for i in range(5)],
                         progress=True))
faux.unregister()
"""


@pytest.mark.slow
def test_run_batch_progress_in_jupyter_is_a_live_display(jupyter_env: str) -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (test extra)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (test extra)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (test extra)")
    cell = nbformat.v4.new_code_cell(NOTEBOOK_CELL)
    check = nbformat.v4.new_code_cell("print(sorted(r.text for r in results))")
    notebook = nbformat.v4.new_notebook(cells=[cell, check])
    received: list[str] = []

    class Client(nbclient.NotebookClient):
        def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
            received.append(msg["msg_type"])
            return super().process_message(msg, cell, cell_index)

    Client(notebook, kernel_name=jupyter_env, timeout=60).execute()

    [shown] = cell.outputs
    assert shown.output_type == "display_data"
    assert re.fullmatch(r"batch: 5/5 runs, \d+\.\d s", shown.data["text/plain"])
    assert received.count("display_data") == 1
    assert received.count("update_display_data") >= 1
    assert [o.get("text") for o in check.outputs] == [
        f"{[f'answer {i}' for i in range(5)]}\n"]


# --- Dask --------------------------------------------------------------------------------------
# `dask_client`: the session's cluster, and `quick_server` (both tests/conftest.py).


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_run_batch_on_a_dask_cluster_runs_on_both_workers(
    dask_client: Any, quick_server: ChatServer,
) -> None:
    server = quick_server
    executor: Executor = dask_client.get_executor()
    inputs = [f"weather City{i}" if i % 2 else f"hello {i}" for i in range(20)]

    results = by_index(list(run_batch(agents(server), inputs, executor=executor)))
    typed = by_index(list(run_batch(agents(server), ["Rome", "Oslo", "fail"],
                                    executor=executor, output_type=City)))

    assert sorted(results) == list(range(20))
    pids = set()
    for index, result in results.items():
        assert result.error is None
        assert result.input == inputs[index]
        assert isinstance(result.messages[0], ac.UserMessage)
        assert result.messages[0].content == inputs[index]
        if index % 2:
            match = re.fullmatch(rf"weather: sunny in City{index} \(pid (\d+)\)", result.text)
            assert match is not None, result.text
            pids.add(int(match[1]))
            assert roles(result) == ["user", "assistant", "toolResult", "assistant"]
            assert isinstance(result.messages[2], ac.ToolResultMessage)
        else:
            assert result.text == f"echo: hello {index}"
            assert roles(result) == ["user", "assistant"]
        assert result.usage.total_tokens > 0
    assert len(pids) == 2  # both worker processes ran runs
    assert os.getpid() not in pids
    assert [typed[i].output for i in range(2)] == [City("Rome", 4), City("Oslo", 4)]
    assert (typed[2].output, typed[2].error) == (None, "400 bad prompt")


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_run_batch_on_a_dask_cluster_refuses_an_unpicklable_make_agent(
    dask_client: Any,
) -> None:
    lock = threading.Lock()

    def locked_agent() -> ac.Agent:
        with lock:
            return make_agent(_URL)

    with pytest.raises(TypeError, match=r"^'make_agent' cannot be pickled.*ClientExecutor"):
        run_batch(locked_agent, ["hello"], executor=dask_client.get_executor())


EXAMPLE_OUTPUT = [
    "here: 100 answers, 0 failed, 1661 tokens",
    "  What is 0 + 0? -> 0 + 0 = 0",
    "  What is 1 + 2? -> 1 + 2 = 3",
    "  What is 2 + 4? -> 2 + 4 = 6",
]


def run_example(*args: str) -> subprocess.CompletedProcess[str]:
    """`python examples/batch.py *args`, checked to succeed."""
    done = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True,
                          text=True, timeout=50, check=False)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_batch_example_runs_offline_with_a_progress_bar() -> None:
    done = run_example()

    assert done.stdout.splitlines() == EXAMPLE_OUTPUT
    assert "batch: 100%" in done.stderr
    assert "100/100" in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_batch_example_runs_the_same_call_on_a_local_cluster() -> None:
    done = run_example("--dask")

    assert done.stdout.splitlines() == [
        *EXAMPLE_OUTPUT, "on a LocalCluster: 100 answers, 0 failed, 1661 tokens"]
    assert done.stderr.count("batch: 100%") >= 2  # a bar for each batch (tqdm may redraw)


def test_run_batch_a_task_the_callers_pool_cancels_is_a_failed_result(
        server: ChatServer) -> None:
    """The caller shuts its own pool down with `cancel_futures` while the batch waits: the
    inputs never run are results with an error, and the iterator raises nothing."""
    pool = ThreadPoolExecutor(1)
    gate = threading.Event()
    pool.submit(gate.wait, WAIT_S)  # the pool's one thread is busy: the batch's tasks queue
    results = run_batch(agents(server), ["a", "b"], executor=pool)
    threading.Timer(0.2, lambda: (pool.shutdown(wait=False, cancel_futures=True),
                                  gate.set())).start()
    got = sorted(results, key=lambda r: r.index)
    pool.shutdown()
    assert [r.index for r in got] == [0, 1]
    assert all(r.error is not None and "Cancelled" in r.error for r in got), got
