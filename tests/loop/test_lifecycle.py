"""Run lifecycle (API §11): tool timeouts, abandoning tools that ignore an abort, tool threads
waiting for their own run, closing or dropping an `agent_loop` stream, early ends."""

from __future__ import annotations

import gc
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sse_server import HOLD, SSEServer

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

WAIT = 5.0
"""Every wait's timeout. How soon a timeout, an abort or the grace ends a call is measured by
benchmarks/lifecycle.py; these tests show what ends it, and what is left behind."""


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown: lets tools that ignore their signal end, so no thread outlives a test."""
    event = threading.Event()
    yield event
    event.set()


def one_call(name: str, id: str = "call-1") -> ac.AssistantMessage:
    return faux_assistant_message([faux_tool_call(name, {}, id=id)], stop_reason="toolUse")


def result_texts(messages: list[ac.AgentMessage]) -> dict[str, tuple[str, bool]]:
    return {m.tool_call_id: (m.content[0].text, m.is_error)  # type: ignore[union-attr]
            for m in messages if isinstance(m, ac.ToolResultMessage)}


def run_loop(faux: FauxProvider, tools: list[ac.AgentTool], **config: Any,
             ) -> tuple[list[ac.AgentMessage], list[ac.AgentEvent]]:
    events: list[ac.AgentEvent] = []
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools),
                            ac.AgentLoopConfig(model=faux.get_model(), **config), events.append)
    return out, events


# --- tool timeouts -------------------------------------------------------------------------------


def test_timeout_aborts_the_call_and_the_run_goes_on(faux: FauxProvider) -> None:
    seen: list[ac.AbortSignal] = []

    @ac.tool(timeout=0.2)
    def slow(signal: ac.AbortSignal) -> str:
        """Wait for the abort."""
        seen.append(signal)
        signal.wait(WAIT)
        return "too late"

    assert slow.timeout == 0.2
    faux.set_responses([one_call("slow"), faux_assistant_message("done")])
    out, events = run_loop(faux, [slow])
    assert result_texts(out) == {"call-1": ("tool 'slow' timed out after 0.2 s", True)}
    assert out[-1].text == "done"  # type: ignore[union-attr]
    assert seen[0].aborted
    assert seen[0].reason == "tool 'slow' timed out after 0.2 s"
    end = next(e for e in events if isinstance(e, ac.ToolExecutionEndEvent))
    assert end.is_error


def test_timeout_abandons_a_tool_that_ignores_its_signal(faux: FauxProvider,
                                                         release: threading.Event) -> None:
    finished = threading.Event()

    def stubborn(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        release.wait(30)  # ignores `signal`
        finished.set()
        return ac.AgentToolResult([ac.TextContent("late")])

    tool = ac.AgentTool("stubborn", "Ignores aborts.", {"type": "object"}, stubborn, timeout=0.1)
    faux.set_responses([one_call("stubborn"), faux_assistant_message("done")])
    out, _ = run_loop(faux, [tool])
    assert result_texts(out) == {"call-1": ("tool 'stubborn' timed out after 0.1 s", True)}
    assert not finished.is_set()  # never waited for the thread, not even when the run ended


def test_tool_timeout_is_the_default_and_a_tool_own_timeout_wins(faux: FauxProvider,
                                                                 release: threading.Event,
                                                                 ) -> None:
    def sleeper(seconds: float) -> Any:
        def run(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
            signal.wait(seconds)
            return ac.AgentToolResult([ac.TextContent("slept")])
        return run

    default = ac.AgentTool("default", "Uses the default.", {"type": "object"}, sleeper(WAIT))
    own = ac.AgentTool("own", "Has its own.", {"type": "object"}, sleeper(0.3), timeout=WAIT)
    reply = faux_assistant_message([faux_tool_call("default", {}, id="a"),
                                    faux_tool_call("own", {}, id="b")], stop_reason="toolUse")
    faux.set_responses([reply, faux_assistant_message("done")])
    out, _ = run_loop(faux, [default, own], tool_timeout=0.1)
    assert result_texts(out) == {"a": ("tool 'default' timed out after 0.1 s", True),
                                 "b": ("slept", False)}


def test_timeout_in_a_batch_aborts_only_the_late_call(faux: FauxProvider) -> None:
    signals: dict[str, ac.AbortSignal] = {}

    def make(name: str, seconds: float) -> ac.AgentTool:
        def run(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
            signals[name] = signal
            signal.wait(seconds)
            return ac.AgentToolResult([ac.TextContent(name)])
        return ac.AgentTool(name, name, {"type": "object"}, run, timeout=0.2)

    reply = faux_assistant_message([faux_tool_call("slow", {}, id="a"),
                                    faux_tool_call("fast", {}, id="b")], stop_reason="toolUse")
    faux.set_responses([reply, faux_assistant_message("done")])
    out, events = run_loop(faux, [make("slow", WAIT), make("fast", 0.01)])
    assert result_texts(out) == {"a": ("tool 'slow' timed out after 0.2 s", True),
                                 "b": ("fast", False)}
    assert signals["slow"].aborted
    assert not signals["fast"].aborted
    ends = [e.tool_call_id for e in events if isinstance(e, ac.ToolExecutionEndEvent)]
    assert ends == ["b", "a"]  # in completion order; the messages stay in call order
    assert [m.tool_call_id for m in out if isinstance(m, ac.ToolResultMessage)] == ["a", "b"]


def test_after_tool_call_sees_the_timeout(faux: FauxProvider) -> None:
    seen: list[tuple[str, bool]] = []

    def after(ctx: ac.AfterToolCallContext, signal: ac.AbortSignal) -> None:
        seen.append((ctx.result.content[0].text, ctx.is_error))  # type: ignore[union-attr]

    @ac.tool(timeout=0.05)
    def slow(signal: ac.AbortSignal) -> str:
        """Wait."""
        signal.wait(WAIT)
        return "late"

    faux.set_responses([one_call("slow"), faux_assistant_message("done")])
    run_loop(faux, [slow], after_tool_call=after)
    assert seen == [("tool 'slow' timed out after 0.05 s", True)]


def test_agent_tool_timeout_applies_to_its_runs(faux: FauxProvider) -> None:
    @ac.tool
    def slow(signal: ac.AbortSignal) -> str:
        """Wait."""
        signal.wait(WAIT)
        return "late"

    faux.set_responses([one_call("slow"), faux_assistant_message("done")])
    with ac.Agent(faux.get_model(), tools=[slow], tool_timeout=0.1) as agent:
        out = agent.prompt("go").result(WAIT)
        assert result_texts(out) == {"call-1": ("tool 'slow' timed out after 0.1 s", True)}
        with pytest.raises(ValueError, match="'tool_timeout'"):
            agent.tool_timeout = 0
        agent.tool_timeout = None
        assert agent.tool_timeout is None


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "1", True])
def test_bad_timeouts_are_refused_naming_the_field(faux: FauxProvider, bad: Any) -> None:
    def noop(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return ac.AgentToolResult()

    error = (TypeError, ValueError)
    with pytest.raises(error, match="'timeout'"):
        ac.AgentTool("t", "T.", {"type": "object"}, noop, timeout=bad)
    def fn() -> None:
        """Do nothing."""

    with pytest.raises(error, match="'timeout'"):
        ac.tool(timeout=bad)(fn)
    with pytest.raises(error, match="'tool_timeout'"):
        ac.AgentLoopConfig(model=faux.get_model(), tool_timeout=bad)
    with pytest.raises(error, match="'tool_timeout'"):
        ac.Agent(faux.get_model(), tool_timeout=bad)


# --- abort: tools that ignore it are abandoned ---------------------------------------------------


def test_abort_abandons_a_tool_that_ignores_it(faux: FauxProvider, release: threading.Event,
                                               abort_grace: Callable[[float], None]) -> None:
    abort_grace(0.05)
    started, finished = threading.Event(), threading.Event()

    def stubborn(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        started.set()
        release.wait(30)
        finished.set()
        return ac.AgentToolResult([ac.TextContent("late")])

    tool = ac.AgentTool("stubborn", "Ignores aborts.", {"type": "object"}, stubborn)
    faux.set_responses([one_call("stubborn"), faux_assistant_message("never")])
    agent = ac.Agent(faux.get_model(), tools=[tool])
    run = agent.prompt("go")
    assert started.wait(WAIT)
    agent.abort()
    out = run.result(WAIT)
    assert not finished.is_set()  # the run ended while the tool went on: it was abandoned
    assert result_texts(out) == {"call-1": ("Operation aborted", True)}
    assert isinstance(list(run)[-1], ac.AgentEndEvent)
    assert faux.call_count == 1


# --- every tool runs off the run's thread; a tool waiting for its own run raises ---------------


def test_a_lone_tool_runs_on_a_worker_thread(faux: FauxProvider) -> None:
    threads: list[threading.Thread] = []

    @ac.tool
    def where() -> str:
        """Say where."""
        threads.append(threading.current_thread())
        return "here"

    faux.set_responses([one_call("where"), one_call("where", "call-2"),
                        faux_assistant_message("done")])
    agent = ac.Agent(faux.get_model(), tools=[where])
    run = agent.prompt("go")
    run.result(WAIT)
    assert threads[0] is not threading.main_thread()
    assert threads[0].name != run.name
    assert threads[0].daemon
    assert threads[0] is threads[1]  # the run's worker is reused from one turn to the next


def test_a_tool_in_a_batch_waiting_for_its_own_run_gets_an_error(faux: FauxProvider) -> None:
    holder: list[ac.Agent] = []

    @ac.tool
    def wait_for_everything() -> str:
        """Wait for the agent."""
        holder[0].wait_for_idle()
        return "unreachable"

    @ac.tool
    def other() -> str:
        """Do nothing."""
        return "ok"

    reply = faux_assistant_message([faux_tool_call("wait_for_everything", {}, id="a"),
                                    faux_tool_call("other", {}, id="b")], stop_reason="toolUse")
    faux.set_responses([reply, faux_assistant_message("done")])
    holder.append(ac.Agent(faux.get_model(), tools=[wait_for_everything, other]))
    out = holder[0].prompt("go").result(WAIT)
    text, is_error = result_texts(out)["a"]
    assert is_error
    assert "cannot wait for a run from its own thread" in text
    assert result_texts(out)["b"] == ("ok", False)


def test_a_nested_agent_inside_a_tool_may_be_waited_for(faux: FauxProvider) -> None:
    @ac.tool
    def ask_inner() -> str:
        """Ask another agent."""
        faux.set_responses([faux_assistant_message("inner says hi")])
        inner = ac.Agent(faux.get_model())
        return inner.prompt("hi").result(WAIT)[-1].text  # type: ignore[union-attr,no-any-return]

    faux.set_responses([one_call("ask_inner")])
    outer = ac.Agent(faux.get_model(), tools=[ask_inner])
    run = outer.prompt("go")
    for _ in range(200):  # the tool queues the inner reply; the outer's last reply comes next
        if faux.call_count >= 1:
            break
        time.sleep(0.01)
    out = run.result(WAIT)
    assert result_texts(out)["call-1"] == ("inner says hi", False)


# --- agent_loop streams: close() and dropping abort the run ----------------------------------


def _loop_in_a_tool(faux: FauxProvider, signals: list[bool],
                    ) -> ac.EventStream[ac.AgentEvent, list[ac.AgentMessage]]:
    """An `agent_loop` stream read up to its tool's start; the tool waits for its signal."""
    started = threading.Event()

    def run(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        started.set()
        signals.append(signal.wait(WAIT))
        return ac.AgentToolResult([ac.TextContent("stopped")])

    tool = ac.AgentTool("block", "Blocks.", {"type": "object"}, run)
    faux.set_responses([one_call("block"), faux_assistant_message("never")])
    stream = ac.agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], [tool]),
                           ac.AgentLoopConfig(model=faux.get_model()))
    next(e for e in stream if isinstance(e, ac.ToolExecutionStartEvent))
    assert started.wait(WAIT)
    return stream


def test_closing_an_agent_loop_stream_aborts_its_run(faux: FauxProvider) -> None:
    signals: list[bool] = []
    stream = _loop_in_a_tool(faux, signals)
    stream.close()
    stream.close()  # twice is fine
    out = stream.result(WAIT)
    assert signals == [True]
    assert isinstance(out[-1], ac.ToolResultMessage)  # no model call after the abort
    assert faux.call_count == 1


def test_dropping_an_agent_loop_stream_aborts_its_run(faux: FauxProvider) -> None:
    signals: list[bool] = []
    _loop_in_a_tool(faux, signals)  # and dropped at once
    gc.collect()
    deadline = time.monotonic() + WAIT
    while not signals and time.monotonic() < deadline:
        time.sleep(0.01)
    assert signals == [True]
    assert faux.call_count == 1


CHUNK = (b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m-1",'
         b'"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},'
         b'"finish_reason":null}]}\n\n')


@pytest.mark.parametrize("how", ["close", "drop"])
def test_letting_an_agent_loop_stream_go_ends_its_http_request_at_once(
    sse_server: SSEServer, how: str,
) -> None:
    """The provider's signal aborts with the run's: the server sees the request end, which
    nothing else would end (it holds the stream open, the read timeout is ten minutes).

    Hooks see their signal aborted too; the caller's own signal is left alone."""
    gone = sse_server.slow_sse([CHUNK], interval_s=HOLD)  # one chunk, then silence
    model = ac.Model("m-1", "M", "openai-completions", "openai", sse_server.url + "/v1")
    hook_signals: list[ac.AbortSignal] = []

    def transform(messages: list[ac.AgentMessage], signal: ac.AbortSignal) -> Any:
        hook_signals.append(signal)
        return messages

    caller = ac.AbortController()
    stream = ac.agent_loop([ac.UserMessage("hi")], ac.AgentContext(),
                           ac.AgentLoopConfig(model=model, api_key="sk-test",
                                              transform_context=transform), caller.signal)
    next(e for e in stream if isinstance(e, ac.MessageUpdateEvent))  # the reply is streaming
    let_go = time.monotonic()
    if how == "close":
        stream.close()
    else:
        collected: list[float] = []
        weakref.finalize(stream, lambda: collected.append(time.monotonic()))
        del stream
        gc.collect()
        assert len(collected) == 1  # the stream was collected by then
    assert gone.seen.wait(WAIT), "the server never saw the request end"
    assert gone.at is not None
    assert gone.at >= let_go  # after the stream was let go
    assert [s.aborted for s in hook_signals] == [True]
    assert not caller.signal.aborted


def test_event_stream_close_calls_on_close_once_and_closes_a_source() -> None:
    closed: list[str] = []
    stream: ac.EventStream[int, None] = ac.EventStream(on_close=lambda: closed.append("x"))
    stream.close()
    stream.close()
    assert closed == ["x"]

    def source() -> Iterator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed.append("source")

    pulled: ac.EventStream[int, None] = ac.EventStream.from_iterator(source())
    assert next(iter(pulled)) == 1
    pulled.close()
    assert closed == ["x", "source"]
    with pytest.raises(TypeError, match="'on_close'"):
        ac.EventStream(on_close="nope")  # type: ignore[arg-type]


# --- early ends --------------------------------------------------------------------------------


def test_early_end_waits_at_most_the_grace_for_a_tool_ignoring_its_abort(
    faux: FauxProvider, release: threading.Event, abort_grace: Callable[[float], None],
) -> None:
    abort_grace(0.05)
    started, finished = threading.Event(), threading.Event()

    def stubborn(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        started.set()
        on_update(ac.AgentToolResult([ac.TextContent("working")]))
        release.wait(30)
        finished.set()
        return ac.AgentToolResult([ac.TextContent("late")])

    tool = ac.AgentTool("stubborn", "Ignores aborts.", {"type": "object"}, stubborn)
    faux.set_responses([one_call("stubborn")])

    def sink(event: ac.AgentEvent) -> None:
        if isinstance(event, ac.ToolExecutionUpdateEvent):
            raise RuntimeError("sink broke")

    with pytest.raises(RuntimeError, match="sink broke"):
        ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], [tool]),
                          ac.AgentLoopConfig(model=faux.get_model()), sink)
    assert not finished.is_set()  # it ended while the tool still ignored its abort
