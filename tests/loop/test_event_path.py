"""The loop's cheaper event path (issue 26): each fast path gives exactly what the general one does.

- A reply's events: the classes that only grow the reply are told by a set lookup; any other
  event (a subclass, say) takes the isinstance chain. Both give the same `message_update`s.
- A tool call's hand-off: on the run's own pool the result comes back as the worker's
  hand-back; on an executor, or under an observer, the work item delivers it itself. All give
  the same events and results.
- The run's pool: a hand-back runs once its thread counts as idle; a new thread starts with
  its first work item, an idle one takes the next from the queue and keeps nothing alive.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import pytest
from _internals import RunStart, WorkerPool, observe

import agentcore as ac

WAIT_S = 10.0
MODEL = ac.Model("m", "M", "test-api", "test", "http://localhost:0")


def _reply(*content: Any, stop: ac.StopReason = ac.StopReason.STOP) -> ac.AssistantMessage:
    return ac.AssistantMessage(list(content), "test-api", "test", "m", stop_reason=stop,
                               timestamp=1)


class LateDelta(ac.TextDeltaEvent):
    """A provider's own subclass of a growth event: not in the set, so the general path."""


def _growth_events() -> list[Any]:
    """Every kind of event a reply streams, one subclassed, and one before `start`."""
    empty, call = _reply(), ac.ToolCall("c1", "echo", {"value": "x"})
    text, thought = _reply(ac.TextContent("hi")), _reply(ac.ThinkingContent("hm"))
    called = _reply(ac.TextContent("hi"), call)
    final = _reply(ac.TextContent("hi"), stop=ac.StopReason.STOP)
    return [
        ac.TextDeltaEvent(0, "early", text),  # before `start`: no message to update, ignored
        ac.StartEvent(empty),
        ac.ThinkingStartEvent(0, thought), ac.ThinkingDeltaEvent(0, "hm", thought),
        ac.ThinkingEndEvent(0, "hm", thought),
        ac.TextStartEvent(0, text), ac.TextDeltaEvent(0, "hi", text),
        LateDelta(0, "!", text), ac.TextEndEvent(0, "hi", text),
        ac.ToolCallStartEvent(1, called), ac.ToolCallDeltaEvent(1, "{}", called),
        ac.ToolCallEndEvent(1, call, called),
        ac.DoneEvent(ac.StopReason.STOP, final),
    ]


@pytest.mark.parametrize("how", ["pushed", "pulled", "iterable"])
def test_event_path_every_growth_event_becomes_the_same_message_update(how: str) -> None:
    events = _growth_events()

    def stream_fn(model: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        if how == "pulled":  # a provider's stream: watched for an abort between events
            return ac.AssistantMessageEventStream.from_iterator(iter(events))
        if how == "iterable":
            return iter(events)
        stream = ac.AssistantMessageEventStream()
        for event in events:
            stream.push(event)
        return stream

    seen: list[Any] = []
    config = ac.AgentLoopConfig(model=MODEL)
    out = ac.run_agent_loop([ac.UserMessage("go", timestamp=1)], ac.AgentContext(), config,
                            seen.append, stream_fn=stream_fn)
    start, done = events[1], events[-1]
    reply = [e for e in seen if getattr(e, "message", None) is not None
             and e.message.role == "assistant"]
    assert reply == [
        ac.MessageStartEvent(start.partial),
        *(ac.MessageUpdateEvent(e.partial, e) for e in events[2:-1]),
        ac.MessageEndEvent(done.message),
        ac.TurnEndEvent(done.message, []),
    ]
    assert out[-1] is done.message


def _calls_and_results(executor: Any) -> tuple[dict[Any, list[str]], list[Any]]:
    """One run of two batches (a parallel one, then a sequential one) on `executor`.

    Returns each call's events in order (None: the run's own, in order), and the results.
    Parallel calls end in whatever order they finish, so calls are not ordered among each
    other.
    """

    def progress(call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        on_update(ac.AgentToolResult([ac.TextContent(f"half {args['value']}")]))
        return ac.AgentToolResult([ac.TextContent(f"done {args['value']}")], details=args)

    def broken(call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        raise KeyError(args["value"])

    schema = {"type": "object", "properties": {"value": {"type": "string"}}}
    tools = [ac.AgentTool("progress", "p", schema, progress),
             ac.AgentTool("broken", "b", schema, broken),
             ac.AgentTool("one", "o", schema, progress,
                          execution_mode=ac.ToolExecutionMode.SEQUENTIAL)]
    replies = iter([
        _reply(ac.ToolCall("a", "progress", {"value": "1"}),
               ac.ToolCall("b", "broken", {"value": "2"}),
               ac.ToolCall("c", "missing", {}), stop=ac.StopReason.TOOL_USE),
        _reply(ac.ToolCall("d", "one", {"value": "3"}),
               ac.ToolCall("e", "progress", {"value": 4}), stop=ac.StopReason.TOOL_USE),
        _reply(ac.TextContent("bye")),
    ])

    def stream_fn(model: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        message = next(replies)
        return iter([ac.StartEvent(message), ac.DoneEvent(message.stop_reason, message)])

    seen: list[Any] = []
    config = ac.AgentLoopConfig(model=MODEL, tool_executor=executor)
    out = ac.run_agent_loop([ac.UserMessage("go", timestamp=1)],
                            ac.AgentContext(tools=tools), config, seen.append,
                            stream_fn=stream_fn)
    by_call: dict[Any, list[str]] = {}
    for event in seen:
        by_call.setdefault(getattr(event, "tool_call_id", None), []).append(event.type)
    results = [attrs.evolve(m, timestamp=0) for m in out if m.role == "toolResult"]
    return by_call, results


def test_event_path_hand_back_executor_and_observer_give_the_same_run() -> None:
    pool_run = _calls_and_results(None)  # the run's own pool: the worker's hand-back
    with ThreadPoolExecutor(2) as executor:
        executor_run = _calls_and_results(executor)  # the work item delivers its result

    class Trace:
        def event(self, event: Any) -> None: ...
        def model_call(self, model: Any, context: Any) -> None: ...
        def end(self, error: Any) -> None: ...

        def tool_work(self, tool_call_id: str, work: Any) -> Any:
            return work  # an observer's wrapper: the pool runs it without a hand-back

    def observer(start: RunStart) -> Any:
        return Trace()

    remove = observe(observer)
    try:
        observed_run = _calls_and_results(None)
    finally:
        remove()
    assert executor_run == pool_run
    assert observed_run == pool_run
    by_call, results = pool_run
    ran = ["tool_execution_start", "tool_execution_update", "tool_execution_end"]
    assert by_call == {
        None: ["agent_start", "turn_start", "message_start", "message_end",  # the prompt
               *(["message_start", "message_end"] * 4),  # the reply, 3 tool results
               "turn_end", "turn_start", *(["message_start", "message_end"] * 3), "turn_end",
               "turn_start", "message_start", "message_end", "turn_end", "agent_end"],
        "a": ran, "b": ["tool_execution_start", "tool_execution_end"],
        "c": ["tool_execution_start", "tool_execution_end"], "d": ran, "e": ran,
    }
    assert [r.text for r in results] == ["done 1", "KeyError: '2'", "Tool missing not found",
                                         "done 3", "done 4"]


def test_worker_pool_hands_back_once_its_thread_counts_as_idle() -> None:
    pool = WorkerPool()
    done = threading.Event()
    threads: list[int] = []

    def second() -> None:
        done.set()

    def hand_back() -> None:  # the thread counts as idle now: more work needs no new thread
        threads.append(len(pool._threads))
        pool.submit(second)
        threads.append(len(pool._threads))

    pool.submit(lambda: hand_back)
    assert done.wait(WAIT_S)
    pool.shutdown()
    assert threads == [1, 1]


def test_worker_pool_logs_a_raising_hand_back_and_keeps_serving(
        caplog: pytest.LogCaptureFixture) -> None:
    pool = WorkerPool(max_workers=1)
    done = threading.Event()

    def hand_back() -> None:
        raise RuntimeError("lost")

    with caplog.at_level(logging.ERROR, logger=WorkerPool.__module__):
        pool.submit(lambda: hand_back)
        pool.submit(lambda: done.set())
        assert done.wait(WAIT_S)
        pool.shutdown()
    assert "hand-back raised" in caplog.text


def test_worker_pool_without_a_thread_runs_work_and_hand_back_here(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    pool = WorkerPool()
    ran: list[str] = []
    here = threading.get_ident()

    def hand_back() -> None:
        ran.append("hand-back" if threading.get_ident() == here else "elsewhere")

    pool.submit(lambda: ran.append("work") or hand_back)
    pool.shutdown()
    assert ran == ["work", "hand-back"]



def test_worker_pool_gives_a_new_thread_its_first_work_and_an_idle_one_the_next() -> None:
    pool = WorkerPool()
    release = threading.Event()
    started = [threading.Event(), threading.Event()]
    ran: list[tuple[str, int]] = []

    def busy(i: int) -> None:
        ran.append(("busy", threading.get_ident()))
        started[i].set()
        assert release.wait(WAIT_S)

    pool.submit(lambda: busy(0))
    assert started[0].wait(WAIT_S)
    pool.submit(lambda: busy(1))  # the first thread is busy: a second one starts with this
    assert started[1].wait(WAIT_S)
    release.set()
    waited = threading.Event()
    while pool._idle < 2 and not waited.wait(0.001):  # both threads count as idle
        pass
    for _ in range(20):  # one at a time, each handed back once its thread is idle: the
        finished = threading.Event()  # queue brings them to the two threads, no third starts

        def queued(finished: threading.Event = finished) -> Any:
            ran.append(("queued", threading.get_ident()))
            return finished.set

        pool.submit(queued)
        assert finished.wait(WAIT_S)
    threads = {ident for _, ident in ran}
    pool.shutdown()
    assert len(pool._threads) == 2
    assert len(threads) == 2
    assert not any(thread.is_alive() for thread in pool._threads)


def test_an_idle_worker_keeps_no_result_alive() -> None:
    import gc
    import weakref

    class Result:
        pass

    pool = WorkerPool(max_workers=1)
    delivered = threading.Event()
    refs: list[weakref.ref[Result]] = []

    def work() -> Any:
        result = Result()
        refs.append(weakref.ref(result))
        return lambda: delivered.set() if result else None

    pool.submit(work)
    assert delivered.wait(WAIT_S)
    pause = threading.Event()
    for _ in range(500):  # the thread drops its work and hand-back before it waits again
        gc.collect()
        if refs[0]() is None:
            break
        pause.wait(0.01)
    alive = refs[0]() is not None
    pool.shutdown()
    assert not alive


def test_worker_pool_submit_racing_shutdown_runs_or_refuses_every_work() -> None:
    import sys

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for _ in range(1000):
            pool = WorkerPool(max_workers=4)
            ran: list[int] = []
            refused: list[int] = []
            failures: list[BaseException] = []
            go = threading.Barrier(2)

            def submitter(pool: WorkerPool = pool, ran: list[int] = ran,
                          refused: list[int] = refused, go: threading.Barrier = go) -> None:
                go.wait()
                for i in range(8):
                    try:
                        pool.submit(lambda i=i: ran.append(i))
                    except RuntimeError:
                        refused.append(i)

            thread = threading.Thread(target=submitter)
            thread.start()
            go.wait()
            try:
                pool.shutdown(wait=True, timeout=WAIT_S)
            except BaseException as exc:  # joining a listed thread not started yet, say
                failures.append(exc)
            thread.join(WAIT_S)
            assert not failures
            assert sorted(ran + refused) == list(range(8))  # queued work runs before the stop
            assert not any(t.is_alive() for t in pool._threads)
    finally:
        sys.setswitchinterval(interval)
