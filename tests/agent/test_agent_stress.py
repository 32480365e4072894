"""The Agent under stress: many threads queueing messages mid-run, many runs aborted at random.

Both tests check the "nothing is lost" principle (API.md §0): a steering or follow-up message is
injected exactly once, in order; every tool call of a completed assistant message has exactly
one tool result, however the run was cut short.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)

pytestmark = pytest.mark.slow  # stress tests: hundreds of runs and threads each

WAIT_S = 30.0
SCHEMA = {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}

SENDERS = 8
SENDS_PER_SENDER = 50
MAX_TURNS = 3000  # a safety bound: far more than the ~400 turns the slowest mode needs
CALLS_PER_TURN = 3

ABORT_RUNS = 120
THREAD_CHECK_EVERY = 50
THREAD_GRACE_S = 2.0
MAX_ABORT_LATENCY_S = 2.0  # generous for a loaded CI machine; observed is milliseconds


def sleeper_tool(
    name: str,
    mode: ac.ToolExecutionMode | None = None,
    starts: list[tuple[float, bool]] | None = None,
) -> ac.AgentTool:
    """A tool that waits `ms` milliseconds, or less when the run is aborted.

    With `starts`, it logs when each execution began and whether on the run's own thread.
    """

    def execute(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        if starts is not None:
            on_run_thread = threading.current_thread().name.startswith("agentcore-run-")
            starts.append((time.monotonic(), on_run_thread))
        on_update(ac.AgentToolResult([ac.TextContent("working")]))
        interrupted = signal.wait(args["ms"] / 1000)
        return ac.AgentToolResult([ac.TextContent("interrupted" if interrupted else "done")])

    return ac.AgentTool(name, f"The {name} tool", SCHEMA, execute, execution_mode=mode)


def check_tool_results(transcript: list[Any]) -> None:
    """Each completed assistant message's calls are answered exactly once, right after it."""
    calls: dict[str, int] = {}
    for i, message in enumerate(transcript):
        if not isinstance(message, ac.AssistantMessage):
            continue
        if message.stop_reason in (ac.StopReason.ERROR, ac.StopReason.ABORTED):
            continue
        expected = [c.id for c in message.tool_calls]
        following = transcript[i + 1 : i + 1 + len(expected)]
        answered = [m.tool_call_id for m in following if isinstance(m, ac.ToolResultMessage)]
        assert answered == expected, f"tool results after message {i}: {answered} != {expected}"
        for call_id in expected:
            assert call_id not in calls, f"tool call id {call_id!r} used twice"
            calls[call_id] = i
    results = Counter(m.tool_call_id for m in transcript if isinstance(m, ac.ToolResultMessage))
    orphans = sorted(set(results) - set(calls))
    assert not orphans, f"tool results without a call: {orphans}"
    repeated = sorted(call_id for call_id, n in results.items() if n != 1)
    assert not repeated, f"tool calls answered more than once: {repeated}"


def join_new_threads(before: set[threading.Thread], grace: float) -> list[str]:
    """Wait up to `grace` seconds for threads started since `before`; name the survivors."""
    deadline = time.monotonic() + grace
    for thread in threading.enumerate():
        if thread not in before:
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in threading.enumerate() if t not in before and t.is_alive()]


# --- many threads queueing messages during a run -----------------------------------------------


class Senders:
    """Eight threads that each queue 50 distinct messages, alternating steer and follow-up."""

    def __init__(self, agent: ac.Agent, seed: int) -> None:
        self.agent = agent
        self.seed = seed
        self.sent: dict[tuple[int, str], list[ac.UserMessage]] = defaultdict(list)
        self.follow_ups_sent = 0
        self.done = threading.Event()
        self.news = threading.Event()  # a message was sent, or the last sender ended
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._go = threading.Event()
        self._running = SENDERS
        self._threads = [
            threading.Thread(target=self._send, args=(n,), name=f"sender-{n}")
            for n in range(SENDERS)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()
        self._go.set()  # released together, for the most contention

    def join(self) -> None:
        for thread in self._threads:
            thread.join(WAIT_S)
        assert not any(t.is_alive() for t in self._threads), "a sender hung"

    def all_messages(self) -> Iterator[ac.UserMessage]:
        for messages in self.sent.values():
            yield from messages

    def _send(self, n: int) -> None:
        rng = random.Random(self.seed * 100 + n)
        assert self._go.wait(WAIT_S)
        try:
            for seq in range(SENDS_PER_SENDER):
                kind = "steer" if (seq + n) % 2 == 0 else "follow_up"
                message = ac.UserMessage(f"{kind}:{n}:{seq}")
                self.sent[(n, kind)].append(message)  # one writer per key
                if kind == "steer":
                    self.agent.steer(message)
                else:
                    self.agent.follow_up(message)
                    with self._lock:
                        self.follow_ups_sent += 1
                self.news.set()
                if rng.random() < 0.5:
                    time.sleep(rng.random() / 100)  # jitter: spread the sends over the run
        except BaseException as exc:  # pragma: no cover - reported by the test
            self.errors.append(exc)
        finally:
            with self._lock:
                self._running -= 1
                if not self._running:
                    self.done.set()  # set after the last send returned: nothing comes later
                    self.news.set()


@pytest.mark.parametrize("mode", [ac.QueueMode.ALL, ac.QueueMode.ONE_AT_A_TIME])
@pytest.mark.parametrize("runs", ["one-run", "many-runs", "aborted-runs"])
def test_agent_queues_keep_every_message_sent_from_many_threads(
    faux: FauxProvider, mode: ac.QueueMode, runs: str
) -> None:
    """"one-run": the model keeps calling tools until every message is sent, so all of them
    arrive during one run. "many-runs": the model also stops at random, so messages also
    arrive as runs end and between runs; `continue_()` picks them up. "aborted-runs": as
    "many-runs", and each run is aborted at a random moment while messages are still coming,
    so some are taken from a queue but never injected and must go back to it."""
    agent = ac.Agent(faux.get_model(), tools=[sleeper_tool("nap")], steering_mode=mode,
                     follow_up_mode=mode, limits=None)  # "one-run" may take > 50 model calls
    senders = Senders(agent, seed=7 if mode is ac.QueueMode.ALL else 11)
    rng = random.Random(3)
    abort_rng = random.Random(5)
    listener_rng = random.Random(9)
    tools_running = threading.Event()
    follow_ups_injected = [0]
    turns = [0]

    def on_event(event: Any, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.ToolExecutionStartEvent):
            tools_running.set()
        elif isinstance(event, ac.MessageStartEvent) and isinstance(event.message, ac.UserMessage):
            if str(event.message.content).startswith("follow_up:"):
                follow_ups_injected[0] += 1
            sent = str(event.message.content).startswith(("steer:", "follow_up:"))
            if runs == "aborted-runs" and sent and listener_rng.random() < 0.1:
                agent.abort()  # mid-injection: messages of the same poll are left in flight

    def respond(context: Any, options: Any, model: Any) -> ac.AssistantMessage:
        """Call tools while messages are being sent; now and then stop instead: in "one-run"
        only when a follow-up is surely queued (so the run goes on), in the others anyway."""
        turns[0] += 1
        follow_up_queued = senders.follow_ups_sent > follow_ups_injected[0]
        may_stop = turns[0] > 1 and (follow_up_queued or runs != "one-run")
        if turns[0] < MAX_TURNS and not senders.done.is_set() and not (
            may_stop and rng.random() < 0.3
        ):
            calls = [faux_tool_call("nap", {"ms": rng.randrange(2)}) for _ in range(CALLS_PER_TURN)]
            return faux_assistant_message([faux_text("calling"), *calls])
        return faux_assistant_message("idle")

    faux.set_responses([respond] * (MAX_TURNS + 2 * SENDERS * SENDS_PER_SENDER))
    agent.subscribe(on_event)

    run = agent.prompt("start")
    assert tools_running.wait(WAIT_S)
    senders.start()
    run_count, aborted, fresh = 1, 0, True
    while True:
        if fresh and runs == "aborted-runs" and not senders.done.is_set():
            time.sleep(abort_rng.uniform(0, 0.004))  # the random moment, not a synchronisation
            run.abort()
            aborted += 1
        fresh = False
        run.result(WAIT_S)
        finished = senders.done.is_set()  # read before the queues: no send comes after it
        if agent.has_queued_messages():  # only this thread starts runs: none took them since
            run, fresh = agent.continue_(), True
            run_count += 1
            assert run_count <= 2 * SENDERS * SENDS_PER_SENDER
        elif finished:
            break
        else:
            assert senders.news.wait(WAIT_S)
            senders.news.clear()
    senders.join()
    assert not senders.errors

    transcript = agent.messages
    assert not agent.has_queued_messages()
    assert not agent.state.is_streaming
    if runs == "one-run":
        assert run_count == 1
    positions: dict[int, list[int]] = defaultdict(list)
    for i, message in enumerate(transcript):
        positions[id(message)].append(i)
    for message in senders.all_messages():
        count = len(positions[id(message)])
        assert count == 1, f"{message.content} is in the transcript {count} times"
    for (n, kind), messages in senders.sent.items():
        order = [positions[id(m)][0] for m in messages]
        assert order == sorted(order), f"{kind} messages of sender {n} out of order"
    assert len(senders.sent) == 2 * SENDERS
    assert sum(map(len, senders.sent.values())) == SENDERS * SENDS_PER_SENDER
    check_tool_results(transcript)
    if runs != "aborted-runs":
        assert isinstance(transcript[-1], ac.AssistantMessage)
        assert transcript[-1].stop_reason == ac.StopReason.STOP
    print(f"\nqueues[{mode.value}, {runs}]: {turns[0]} model calls, {run_count} runs "
          f"({aborted} aborted), {len(transcript)} messages")


# --- many runs aborted at random moments -------------------------------------------------------


def plan_reply(rng: random.Random) -> Callable[[Any, Any, Any], ac.AssistantMessage]:
    """A response function: one to three tool turns (parallel, sequential or mixed), then text."""

    def respond(context: Any, options: Any, model: Any) -> ac.AssistantMessage:
        tool_turns = 0
        for message in reversed(context.messages):
            if message.role == "user":
                break
            tool_turns += message.role == "assistant"
        if tool_turns >= rng.randint(1, 3):
            return faux_assistant_message("final answer " * rng.randint(1, 6))
        shape = rng.choice(["parallel", "sequential", "single", "mixed"])
        names = {"parallel": ["par", "par", "par"], "sequential": ["seq", "seq"],
                 "single": ["par"], "mixed": ["par", "seq", "par"]}[shape]
        calls = [faux_tool_call(name, {"ms": rng.randrange(12)}) for name in names]
        return faux_assistant_message([faux_text("let me check " * rng.randint(0, 3)), *calls])

    return respond


class Trial:
    """What one run of the abort stress test saw; written by its listener and by the test."""

    def __init__(self, abort_at_event: int | None) -> None:
        self.abort_at_event = abort_at_event
        self.events = 0
        self.aborted_at: float | None = None
        self.calls_at_abort: int | None = None
        self.ended_at: float | None = None


def test_agent_survives_many_runs_aborted_at_random_moments() -> None:
    """Runs are aborted after a random delay (from the test's thread), or at a random event
    (from a listener, on the run's thread). The runs mix parallel, sequential and lone tool
    calls, and one to three tool turns; every run is checked, and the threads every 50 runs."""
    faux = register_faux_provider(tokens_per_second=4000, token_size=(1, 2))
    rng = random.Random(20240601)
    tool_starts: list[tuple[float, bool]] = []
    tools = [sleeper_tool("par", starts=tool_starts),
             sleeper_tool("seq", ac.ToolExecutionMode.SEQUENTIAL, starts=tool_starts)]
    agent = ac.Agent(faux.get_model(), tools=tools)
    faux.set_responses([plan_reply(random.Random(rng.random()))] * (ABORT_RUNS * 8))
    baseline = set(threading.enumerate())
    baseline_count = threading.active_count()
    trial = Trial(None)

    def on_event(event: Any, signal: ac.AbortSignal) -> None:
        trial.events += 1
        if trial.events == trial.abort_at_event:
            trial.calls_at_abort = faux.call_count
            trial.aborted_at = time.monotonic()
            agent.abort()  # on the run's own thread
        if isinstance(event, ac.AgentEndEvent):
            trial.ended_at = time.monotonic()

    agent.subscribe(on_event)
    latencies: list[float] = []
    cut_short = 0
    started = time.monotonic()
    try:
        for n in range(1, ABORT_RUNS + 1):
            by_listener = n % 3 == 0
            trial = Trial(rng.randint(1, 80) if by_listener else None)
            agent.tool_execution = rng.choice(list(ac.ToolExecutionMode))
            tool_starts.clear()
            run = agent.prompt(f"run {n}")
            if not by_listener:
                delay = 0.0 if n % 10 == 1 else rng.uniform(0, 0.05)
                if delay:
                    time.sleep(delay)  # the random moment of the abort, not a synchronisation
                trial.aborted_at = time.monotonic()
                (run.abort if n % 2 else agent.abort)()
            messages = run.result(WAIT_S)

            state = agent.state
            assert not state.is_streaming
            assert state.pending_tool_calls == frozenset()
            assert state.streaming_message is None
            assert messages[0] == ac.UserMessage(f"run {n}", timestamp=messages[0].timestamp)
            assert state.messages[-len(messages):] == messages
            check_tool_results(state.messages)
            assert trial.ended_at is not None
            assert all(t <= trial.ended_at for t, _ in tool_starts), "tool started after agent_end"
            if trial.aborted_at is not None and trial.aborted_at <= trial.ended_at:
                latency = trial.ended_at - trial.aborted_at
                latencies.append(latency)
                assert latency < MAX_ABORT_LATENCY_S, f"run {n}: agent_end {latency:.3f} s late"
                final = messages[-1]
                if isinstance(final, ac.AssistantMessage) and final.stop_reason == "aborted":
                    cut_short += 1
            if trial.calls_at_abort is not None:  # aborted on the run's thread: nothing since
                assert trial.aborted_at is not None
                assert faux.call_count == trial.calls_at_abort, f"run {n}: model called after abort"
                late = [t for t, on_run_thread in tool_starts
                        if on_run_thread and t > trial.aborted_at]
                assert not late, f"run {n}: a tool started on the run's thread after the abort"
            if n % THREAD_CHECK_EVERY == 0:
                survivors = join_new_threads(baseline, THREAD_GRACE_S)
                assert not survivors, f"after {n} runs, threads remain: {survivors}"
                assert threading.active_count() == baseline_count
                agent.reset()
        trial = Trial(None)  # disarm: the last run's listener abort must not carry into this one
        faux.set_responses([faux_assistant_message("still fine")])
        assert agent.prompt("after it all").result(WAIT_S)[-1].text == "still fine"
    finally:
        faux.unregister()

    elapsed = time.monotonic() - started
    print(f"\nabort stress: {ABORT_RUNS} runs in {elapsed:.2f} s; {len(latencies)} aborted "
          f"before agent_end, {cut_short} ending 'aborted'; max abort->agent_end latency "
          f"{max(latencies) * 1000:.1f} ms")
    assert len(latencies) >= ABORT_RUNS // 2, "too few runs were aborted while running"
    assert cut_short >= ABORT_RUNS // 5, "too few aborts cut a model reply short"
