"""Run conveniences and async adapters (API §12): `AgentRun.text`, `usage`, `error`,
`raise_for_error()`, `text_stream()`, the error in `repr(run)`, and `async for event in run`,
`await run.wait_async()`, `await agent.prompt_async(...)`."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.testing import Reply, ScriptedModel, scripted_model, tool_call

WAIT = 5.0
ABORTED = "Request was aborted"  # the error text of an aborted run


@ac.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _blocked(faux: FauxProvider, before_tool: str = "",
             ) -> tuple[ac.Agent, threading.Event, threading.Event]:
    """An agent whose run stops in a tool until `release` is set; `started` once it is there.

    The first reply says `before_tool` (if any) and calls the tool; the second says "done".
    """
    started, release = threading.Event(), threading.Event()

    @ac.tool
    def hold() -> str:
        """Wait until the test lets go."""
        started.set()
        release.wait(WAIT)
        return "held"

    first: list[ac.TextContent | ac.ToolCall] = [faux_text(before_tool)] if before_tool else []
    faux.set_responses([faux_assistant_message([*first, faux_tool_call("hold", {})]),
                        faux_assistant_message([faux_text("done")])])
    return ac.Agent(faux.get_model(), tools=[hold]), started, release


def _replies(run: ac.AgentRun) -> list[ac.AssistantMessage]:
    return [m for m in run.result(WAIT) if isinstance(m, ac.AssistantMessage)]


# --- text, usage, error, raise_for_error ----------------------------------------------------


def test_run_text_is_the_last_replys_text_across_a_tool_turn() -> None:
    replies: list[Reply] = [[ac.TextContent("Let me add. "), tool_call("add", {"a": 1, "b": 2})],
                            "The answer is 3"]
    with scripted_model(replies) as fake:
        run = ac.Agent(fake.model, tools=[add]).prompt("What is 1 + 2?")
        text: str = run.text  # blocks until the run has ended
        assert run.done()
    assert text == "The answer is 3"
    assert [m.text for m in _replies(run)] == ["Let me add. ", "The answer is 3"]


def test_run_usage_sums_the_usage_of_every_model_call_cost_included() -> None:
    priced = ac.Model("priced", "Priced", "faux", "faux", "http://faux.invalid",
                      cost=ac.ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75))
    with scripted_model([tool_call("add", {"a": 1, "b": 2}), "The answer is 3"],
                        model=priced) as fake:
        run = ac.Agent(fake.model, tools=[add]).prompt("What is 1 + 2?")
        usage = run.usage
    first, second = (m.usage for m in _replies(run))
    assert first != second
    assert usage == ac.Usage(
        first.input + second.input, first.output + second.output,
        first.cache_read + second.cache_read, first.cache_write + second.cache_write,
        first.total_tokens + second.total_tokens,
        ac.Cost(first.cost.input + second.cost.input, first.cost.output + second.cost.output,
                first.cost.cache_read + second.cost.cache_read,
                first.cost.cache_write + second.cost.cache_write,
                first.cost.total + second.cost.total))
    assert usage.cost.total > 0


def test_run_without_error_has_none_and_raise_for_error_returns() -> None:
    with scripted_model(["fine"]) as fake:
        run = ac.Agent(fake.model).prompt("hi")
        assert run.error is None
        run.raise_for_error()
    assert run.text == "fine"
    assert repr(run) == f"<AgentRun done, {len(list(run))} events>"


def test_run_out_of_replies_is_an_error_and_raise_for_error_raises_run_error() -> None:
    with scripted_model([]) as fake:
        run = ac.Agent(fake.model).prompt("hi")
        with pytest.raises(ac.RunError) as caught:
            run.raise_for_error()
    assert run.error == "No more faux responses queued"
    assert caught.value.stop_reason is ac.StopReason.ERROR
    assert caught.value.message == "No more faux responses queued"
    assert isinstance(caught.value, ac.AgentcoreError)
    assert run.text == ""
    assert repr(run) == (f"<AgentRun done, {len(list(run))} events, "
                         f"error: 'No more faux responses queued'>")


def test_run_error_reply_from_the_model_is_the_runs_error() -> None:
    with scripted_model([faux_assistant_message([faux_text("partial")], "error", "boom")]) as fake:
        run = ac.Agent(fake.model).prompt("hi")
        assert run.error == "boom"
    with pytest.raises(ac.RunError, match="'error': boom") as caught:
        run.raise_for_error()
    assert (caught.value.stop_reason, caught.value.message) == (ac.StopReason.ERROR, "boom")
    assert run.text == "partial"  # the text it streamed before failing, as the message has it


def test_run_aborted_while_streaming_raises_run_error_aborted() -> None:
    provider = register_faux_provider(tokens_per_second=200, token_size=(1, 1))
    try:
        provider.set_responses([faux_assistant_message("a long reply " * 20)])
        agent = ac.Agent(provider.get_model())
        agent.subscribe(lambda e, s: agent.abort() if e.type == "message_update" else None)
        run = agent.prompt("hi")
        with pytest.raises(ac.RunError) as caught:
            run.raise_for_error()
    finally:
        provider.unregister()
    assert caught.value.stop_reason is ac.StopReason.ABORTED
    assert run.error == caught.value.message == ABORTED
    assert _replies(run)[-1].stop_reason is ac.StopReason.ABORTED
    assert repr(run).endswith(f", aborted: {ABORTED!r}>")


def test_run_aborted_while_its_tool_runs_is_aborted_too(faux: FauxProvider) -> None:
    agent, started, release = _blocked(faux)
    run = agent.prompt("go")
    assert started.wait(WAIT)
    run.abort()
    release.set()
    assert _replies(run)[-1].stop_reason is ac.StopReason.TOOL_USE  # no reply after the tool
    assert run.error == ABORTED
    with pytest.raises(ac.RunError) as caught:
        run.raise_for_error()
    assert caught.value.stop_reason is ac.StopReason.ABORTED


def test_run_abort_after_the_end_changes_nothing(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("ok")])
    run = ac.Agent(faux.get_model()).prompt("hi")
    assert run.wait(WAIT)
    run.abort()
    assert run.error is None
    run.raise_for_error()


def test_run_repr_truncates_a_long_error() -> None:
    message = "x" * 200
    with scripted_model([faux_assistant_message([], "error", message)]) as fake:
        run = ac.Agent(fake.model).prompt("hi")
        assert run.wait(WAIT)
    shown = "x" * 77 + "..."
    assert repr(run) == f"<AgentRun done, {len(list(run))} events, error: {shown!r}>"
    assert run.error == message  # only the repr is cut short


def test_run_conveniences_wait_for_the_run(faux: FauxProvider) -> None:
    agent, started, release = _blocked(faux, before_tool="Holding. ")
    run = agent.prompt("go")
    assert started.wait(WAIT)
    assert repr(run).startswith("<AgentRun running, ")
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(run.text), name="test-reader")
    reader.start()
    reader.join(0.05)
    assert reader.is_alive()  # still waiting: the run is held in its tool
    release.set()
    reader.join(WAIT)
    assert got == ["done"]


def test_run_conveniences_from_the_runs_own_thread_raise() -> None:
    runs: list[ac.AgentRun] = []
    ready = threading.Event()
    caught: list[str] = []

    @ac.tool
    def peek() -> str:
        """Read the run's outcome from inside the run."""
        assert ready.wait(WAIT)
        for attempt in (lambda: runs[0].text, lambda: runs[0].usage, lambda: runs[0].error,
                        runs[0].raise_for_error, lambda: next(runs[0].text_stream()),
                        lambda: asyncio.run(runs[0].wait_async())):
            try:
                attempt()
            except RuntimeError as exc:
                caught.append(str(exc))
        return "peeked"

    with scripted_model([tool_call("peek"), "done"]) as fake:
        runs.append(ac.Agent(fake.model, tools=[peek]).prompt("go"))
        ready.set()
        assert runs[0].text == "done"
    assert len(caught) == 6
    assert all("from its own thread" in text for text in caught)


# --- text_stream ------------------------------------------------------------------------------


def test_text_stream_yields_the_deltas_live_and_in_order(faux: FauxProvider) -> None:
    agent, started, release = _blocked(faux, before_tool="Let me hold this for you. ")
    run = agent.prompt("go")
    stream = run.text_stream(timeout=WAIT)
    first_reply = ""
    while first_reply != "Let me hold this for you. ":  # streamed while the run is held
        first_reply += next(stream)
    assert started.wait(WAIT)
    assert not run.done()
    release.set()
    rest = list(stream)
    assert rest == ["done"]  # one-token chunks: "done" is one token
    assert first_reply + "".join(rest) == "".join(m.text for m in _replies(run))


def test_text_stream_called_late_yields_every_delta(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message([faux_text("Adding now. "),
                                                faux_tool_call("add", {"a": 2, "b": 2})]),
                        faux_assistant_message("It is four.")])
    run = ac.Agent(faux.get_model(), tools=[add]).prompt("2 + 2?")
    assert run.wait(WAIT)
    deltas = list(run.text_stream())
    deltas_from_events = [e.assistant_message_event.delta for e in run
                          if isinstance(e, ac.MessageUpdateEvent)
                          and isinstance(e.assistant_message_event, ac.TextDeltaEvent)]
    assert deltas == deltas_from_events
    assert len(deltas) > 2
    assert "".join(deltas) == "Adding now. It is four."


def test_text_stream_times_out_after_yielding_what_arrived(faux: FauxProvider) -> None:
    agent, started, release = _blocked(faux, before_tool="Waiting.")
    run = agent.prompt("go")
    assert started.wait(WAIT)
    got: list[str] = []
    began = time.monotonic()
    with pytest.raises(TimeoutError, match=r"did not end within 0\.1 s"):
        got.extend(run.text_stream(timeout=0.1))
    assert 0.1 <= time.monotonic() - began < WAIT
    assert "".join(got) == "Waiting."
    release.set()
    assert run.wait(WAIT)


def test_text_stream_deadline_holds_against_a_producer_that_never_pauses(
    faux: FauxProvider,
) -> None:
    agent, started, release = _blocked(faux)
    run = agent.prompt("go")
    assert started.wait(WAIT)
    stream = run.text_stream(timeout=0.05)
    with pytest.raises(TimeoutError):
        for _ in stream:
            pass
    release.set()
    assert run.wait(WAIT)


# --- async adapters -----------------------------------------------------------------------------


def test_prompt_async_returns_the_finished_run() -> None:
    async def main(agent: ac.Agent) -> ac.AgentRun:
        return await agent.prompt_async("hi")

    with scripted_model(["hello"]) as fake:
        agent = ac.Agent(fake.model)
        run = asyncio.run(main(agent))
        assert run.done()
        assert run.text == "hello"
        assert agent.wait_for_idle(WAIT)
        fake.assert_called(times=1)


def test_wait_async_returns_the_runs_messages(faux: FauxProvider) -> None:
    agent, started, release = _blocked(faux)

    async def main() -> list[ac.AgentMessage]:
        run = agent.prompt("go")
        waiting = asyncio.create_task(run.wait_async())
        await asyncio.to_thread(started.wait, WAIT)
        assert not waiting.done()
        release.set()
        messages = await waiting
        assert messages == run.result(0)
        assert await run.wait_async() == messages  # once finished: at once
        return messages

    messages = asyncio.run(main())
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]


async def _until_waiting(run: ac.AgentRun) -> None:
    for _ in range(1000):
        if run._log.async_waiters or run._log.async_end_waiters:
            return
        await asyncio.sleep(0)
    raise AssertionError("no waiter ever registered")


def test_wait_async_cancelled_leaves_no_waiter_and_the_run_going(faux: FauxProvider) -> None:
    agent, started, release = _blocked(faux)
    run = agent.prompt("go")
    assert started.wait(WAIT)

    async def main() -> None:
        waiting = asyncio.create_task(run.wait_async())
        await _until_waiting(run)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert run._log.async_waiters == run._log.async_end_waiters == {}
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(run.wait_async(), 0.02)
        assert run._log.async_waiters == run._log.async_end_waiters == {}

    asyncio.run(main())
    assert not run.signal.aborted
    release.set()
    assert run.text == "done"


def test_async_for_cancelled_leaves_no_waiter(faux: FauxProvider) -> None:
    agent, started, release = _blocked(faux)
    run = agent.prompt("go")
    assert started.wait(WAIT)

    async def consume() -> None:
        async for _ in run:
            pass

    async def main() -> None:
        task = asyncio.create_task(consume())
        await _until_waiting(run)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert run._log.async_waiters == {}

    asyncio.run(main())
    release.set()
    assert run.wait(WAIT)


def test_prompt_async_cancelled_aborts_the_run(faux: FauxProvider) -> None:
    agent, started, release = _blocked(faux)

    async def main() -> None:
        task = asyncio.create_task(agent.prompt_async("go"))
        await asyncio.to_thread(started.wait, WAIT)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    signal = agent.signal
    assert signal is not None
    assert signal.aborted
    release.set()
    assert agent.wait_for_idle(WAIT)
    last = [m for m in agent.state.messages if isinstance(m, ac.AssistantMessage)][-1]
    assert last.stop_reason is ac.StopReason.TOOL_USE  # the run stopped after its tool


def test_async_for_late_gives_every_event(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("hello there")])
    run = ac.Agent(faux.get_model()).prompt("hi")
    assert run.wait(WAIT)

    async def main() -> list[ac.AgentEvent]:
        return [event async for event in run]

    assert asyncio.run(main()) == list(run)


CONSUMERS = 20
MAX_LAG_S = 0.020
TICK_S = 0.005
ATTEMPTS = 3


def _serve_twenty(arrival_s: float) -> tuple[list[ac.AgentRun], list[list[ac.AgentEvent]],
                                             float, int]:
    """20 requests arriving `arrival_s` apart, each streaming its own run with `async for`.

    Returns the runs, the events each consumer saw, the event loop's worst lateness (a task
    sleeping `TICK_S` in a loop) and how many ticks it measured.
    """
    reply = "streamed word by word to a web client " * 4

    async def request(i: int, agent: ac.Agent) -> tuple[ac.AgentRun, list[ac.AgentEvent]]:
        await asyncio.sleep(i * arrival_s)
        run = agent.prompt(f"request {i}")
        return run, [event async for event in run]

    async def main(agents: list[ac.Agent]) -> tuple[list[tuple[ac.AgentRun,
                                                               list[ac.AgentEvent]]], float, int]:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        lag, ticks = 0.0, 0

        async def watch() -> None:
            nonlocal lag, ticks
            while not stop.is_set():
                before = loop.time()
                await asyncio.sleep(TICK_S)
                lag = max(lag, loop.time() - before - TICK_S)
                ticks += 1

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0)
        served = await asyncio.gather(*(request(i, a) for i, a in enumerate(agents)))
        stop.set()
        await watcher
        return served, lag, ticks

    with contextlib.ExitStack() as stack:
        fakes: list[ScriptedModel] = [
            stack.enter_context(scripted_model(
                [[ac.TextContent(reply), tool_call("add", {"a": i, "b": 1})], reply],
                tokens_per_second=400, token_size=(1, 1)))
            for i in range(CONSUMERS)]
        agents = [ac.Agent(fake.model, tools=[add]) for fake in fakes]
        served, lag, ticks = asyncio.run(main(agents))
    for run, events in served:
        assert run.done()
        assert events == list(run)  # every consumer saw its run's every event, in order
        assert isinstance(events[-1], ac.AgentEndEvent)
        assert run.text == reply
        run.raise_for_error()
    return [run for run, _ in served], [events for _, events in served], lag, ticks


def test_async_for_twenty_runs_in_one_event_loop_never_block_it() -> None:
    """A web app's shape: 20 requests in one event loop, each streaming its run's events.

    The loop must never be late by more than 20 ms (the runs last ~0.3 s; the adapters wake
    the loop, they never wait in it). Two things that stall every thread of a process, not
    the adapters, are kept out of the figure: the cyclic garbage collector, off while the
    runs stream (a full collection of a test process's heap takes 15-100 ms here), and a
    scheduler that, with 40 threads on 2 CPUs under other load, now and then hands the
    interpreter lock back late (about one attempt in fifty, with no consumer at all too):
    the measurement is retried, up to 3 attempts, and a consumer that blocked the loop would
    fail all three, as its cost is in every attempt.
    """
    lags: list[float] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(ATTEMPTS):
            _, seen, lag, ticks = _serve_twenty(arrival_s=0.003)
            assert sum(len(events) for events in seen) > CONSUMERS * 80  # really streamed
            assert ticks > 10
            lags.append(lag)
            if lag < MAX_LAG_S:
                break
    finally:
        if enabled:
            gc.enable()
    shown = ", ".join(f"{lag * 1e3:.1f} ms" for lag in lags)
    assert min(lags) < MAX_LAG_S, f"the event loop was late by {shown}"


@pytest.mark.slow
def test_import_agentcore_does_not_load_asyncio() -> None:
    code = "import sys, agentcore; print('asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_a_thread_waiting_for_the_end_is_not_woken_by_each_event(
        faux: FauxProvider, run_in_thread: Callable[[Callable[[], None]], None]) -> None:
    """`run.wait()` waits on the end's own condition: the run's events wake only news waiters."""
    agent, started, release = _blocked(faux)
    run = agent.prompt("go")
    assert started.wait(WAIT)
    run_in_thread(lambda: run.wait(WAIT))
    for _ in range(1000):
        if run._log._end_waiting:
            break
        time.sleep(0.001)
    assert (run._log._end_waiting, run._log._waiting) == (1, 0)
    woken = []
    cond = run._log._end_cond
    original = cond.notify_all
    cond.notify_all = lambda: (woken.append(1), original())[1]  # type: ignore[method-assign]
    release.set()
    assert run.text == "done"
    assert len(woken) <= 2  # agent_end and finish, not every event of the reply
