"""A run keeps at most `max_events` events, dropping the oldest `message_update`s (API §11)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from _internals import EventLog

import agentcore as ac
from agentcore import notebook
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)

WAIT_S = 10
TEXT = "abcd" * 300  # 300 text chunks with the `faux` fixture's one-token chunks


def _is_update(event: ac.AgentEvent) -> bool:
    return event.type == "message_update"


def _others(events: list[ac.AgentEvent]) -> list[ac.AgentEvent]:
    return [e for e in events if not _is_update(e)]


def _is_ordered_subsequence(part: list[Any], whole: list[Any]) -> bool:
    """Whether `part` is `whole` with items left out (compared by identity), order kept."""
    rest = iter(whole)
    return all(any(item is other for other in rest) for item in part)


def _tool_run(faux: FauxProvider, max_events: int, release: threading.Event | None = None,
              ) -> tuple[ac.Agent, list[ac.AgentEvent], threading.Event]:
    """An agent that streams a long reply with a tool call, runs the tool, then streams again.

    Returns the agent, every event its runs publish (recorded by a listener) and an event
    set when the tool starts. The tool waits for `release` when given.
    """
    started = threading.Event()

    @ac.tool
    def lookup(query: str) -> str:
        """Look something up."""
        started.set()
        if release is not None:
            release.wait(WAIT_S)
        return f"found {query}"

    faux.set_responses([
        faux_assistant_message([faux_text(TEXT), faux_tool_call("lookup", {"query": "x" * 40})],
                               stop_reason="toolUse"),
        faux_assistant_message([faux_text(TEXT)]),
    ])
    agent = ac.Agent(faux.get_model(), tools=[lookup], max_events=max_events)
    recorded: list[ac.AgentEvent] = []
    agent.subscribe(lambda event, signal: recorded.append(event))
    return agent, recorded, started


def _update(text: str = "x") -> ac.MessageUpdateEvent:
    reply = faux_assistant_message([faux_text(text)])
    return ac.MessageUpdateEvent(reply, ac.TextDeltaEvent(0, text, reply))


def test_agent_max_events_defaults_to_100_000(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    assert agent.max_events == 100_000
    faux.set_responses([faux_assistant_message("hi")])
    run = agent.prompt("hi")
    run.result(WAIT_S)
    assert run.max_events == 100_000


def test_agent_max_events_bounds_the_run_and_keeps_every_other_event(faux: FauxProvider) -> None:
    agent, recorded, _ = _tool_run(faux, max_events=50)
    run = agent.prompt("go")
    run.result(WAIT_S)

    kept, ended = run.snapshot()
    assert ended
    assert len(recorded) > 600  # two replies of 300 chunks each: most were dropped
    assert len(kept) <= 50
    assert _others(kept) == _others(recorded)
    assert {e.type for e in _others(kept)} >= {
        "agent_start", "turn_start", "message_start", "message_end", "tool_execution_start",
        "tool_execution_end", "turn_end", "agent_end"}
    assert _is_ordered_subsequence(kept, recorded)
    updates = [e for e in recorded if _is_update(e)]
    kept_updates = [e for e in kept if _is_update(e)]
    assert kept_updates  # the newest are kept: the oldest go first
    assert all(a is b for a, b in zip(kept_updates, updates[-len(kept_updates):], strict=True))
    assert repr(run) == f"<AgentRun done, {len(recorded)} events, {len(kept)} kept>"


def test_agent_run_late_iteration_yields_the_kept_events_in_order(faux: FauxProvider) -> None:
    agent, recorded, _ = _tool_run(faux, max_events=40)
    run = agent.prompt("go")
    run.result(WAIT_S)

    late = list(run)
    assert late == run.snapshot()[0]
    assert all(a is b for a, b in zip(late, run.snapshot()[0], strict=True))
    assert list(run) == late  # again, as often as you like
    assert _is_ordered_subsequence(late, recorded)
    assert _others(late) == _others(recorded)
    assert late[0] == ac.AgentStartEvent()
    assert isinstance(late[-1], ac.AgentEndEvent)


def test_agent_run_live_iterator_that_lags_sees_every_other_event_once(
    faux: FauxProvider,
) -> None:
    release = threading.Event()
    agent, recorded, started = _tool_run(faux, max_events=30, release=release)
    run = agent.prompt("go")
    events = iter(run)
    got = [next(events)]
    assert got == [ac.AgentStartEvent()]
    assert started.wait(WAIT_S)  # the run waits in the tool: the iterator catches up, live
    for event in events:
        got.append(event)
        if event.type == "tool_execution_start":
            break
    release.set()
    run.result(WAIT_S)  # the iterator lags behind the whole second reply
    got.extend(events)  # then reads on, and ends

    assert _is_ordered_subsequence(got, recorded)  # nothing twice, nothing out of order
    assert _others(got) == _others(recorded)
    assert len(recorded) - len(got) >= 300 - 30  # the second reply's updates, bar the newest
    assert isinstance(got[-1], ac.AgentEndEvent)


def test_agent_run_wait_for_news_counts_published_events_not_kept_ones() -> None:
    run = ac.AgentRun(ac.AbortController(), max_events=10)
    run.publish(ac.AgentStartEvent())
    for _ in range(30):
        run.publish(_update())

    kept, ended, published = run.counted_snapshot()
    assert (len(kept) <= 10, ended, published) == (True, False, 31)
    assert run.snapshot() == (kept, False)
    assert run.wait_for_news(published, 0) is False  # no news, though fewer are kept
    assert run.wait_for_news(published - 1, 0) is True
    assert repr(run) == f"<AgentRun running, 31 events, {len(kept)} kept>"

    run.publish(ac.AgentEndEvent([]))
    run.finish([])
    assert run.counted_snapshot()[1:] == (True, 32)
    events = list(run)
    assert events == run.snapshot()[0]
    assert (events[0], events[-1]) == (ac.AgentStartEvent(), ac.AgentEndEvent([]))


def test_agent_run_memory_stays_bounded_over_200k_updates() -> None:
    run = ac.AgentRun(ac.AbortController(), max_events=1000)
    reply = faux_assistant_message([faux_text("x")])
    update = _update()
    run.publish(ac.AgentStartEvent())
    run.publish(ac.MessageStartEvent(reply))
    most = 0
    for i in range(200_000):
        run.publish(update)
        if i % 997 == 0:
            most = max(most, len(run.snapshot()[0]))
    run.publish(ac.MessageEndEvent(reply))
    run.publish(ac.AgentEndEvent([reply]))
    run.finish([reply])

    kept, ended, published = run.counted_snapshot()
    assert (ended, published) == (True, 200_004)
    assert 900 <= most <= 1000
    assert 900 <= len(kept) <= 1000
    assert _others(kept) == [ac.AgentStartEvent(), ac.MessageStartEvent(reply),
                             ac.MessageEndEvent(reply), ac.AgentEndEvent([reply])]
    assert list(run) == kept


def test_agent_run_full_of_other_kinds_keeps_them_and_drops_updates_in_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passes: list[EventLog] = []
    drop = EventLog._drop_updates

    def counted(log: EventLog) -> None:
        passes.append(log)
        drop(log)

    monkeypatch.setattr(EventLog, "_drop_updates", counted)
    run = ac.AgentRun(ac.AbortController(), max_events=10)
    others = [ac.TurnStartEvent() for _ in range(1000)]
    for event in others:
        run.publish(event)
    for _ in range(1000):
        run.publish(_update())

    kept, _, published = run.counted_snapshot()
    assert published == 2000
    assert all(a is b for a, b in zip(_others(kept), others, strict=True))  # over the bound
    assert len(kept) - 1000 <= 1000 // 9  # updates go once they are a tenth of the log
    assert len(passes) <= 20  # one pass per ~100 updates, not one per publish
    run.finish([])


@pytest.mark.parametrize("how", ["init", "setattr"])
@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True, None])
def test_agent_bad_max_events_raises_naming_the_field(
    faux: FauxProvider, how: str, value: Any,
) -> None:
    if how == "init":
        with pytest.raises((TypeError, ValueError), match="'max_events' must be"):
            ac.Agent(faux.get_model(), max_events=value)
        return
    agent = ac.Agent(faux.get_model(), max_events=7)
    with pytest.raises((TypeError, ValueError), match="'max_events' must be"):
        agent.max_events = value
    assert agent.max_events == 7


@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True])
def test_agent_run_bad_max_events_raises_naming_the_field(value: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="'max_events' must be"):
        ac.AgentRun(ac.AbortController(), max_events=value)


def test_agent_max_events_set_between_runs_applies_to_the_next(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message(TEXT), faux_assistant_message(TEXT)])
    agent = ac.Agent(faux.get_model())
    first = agent.prompt("one")
    first.result(WAIT_S)
    agent.max_events = 20
    second = agent.prompt("two")
    second.result(WAIT_S)
    assert (first.max_events, second.max_events) == (100_000, 20)
    assert len(first.snapshot()[0]) > 300
    assert len(second.snapshot()[0]) <= 20


class _Recorder:
    """A `publish(markdown, final)` that records every view with its time."""

    def __init__(self) -> None:
        self.views: list[tuple[float, str, bool]] = []

    def __call__(self, markdown: str, final: bool) -> None:
        self.views.append((time.monotonic(), markdown, final))


def test_notebook_follows_a_bounded_run_to_its_final_view() -> None:
    paced = register_faux_provider(tokens_per_second=2000, token_size=(1, 1))
    try:
        paced.set_responses([faux_assistant_message("many small tokens " * 60)])
        run = ac.Agent(paced.get_model(), max_events=20).prompt("hi")
        recorder = _Recorder()
        notebook._display_run(run, recorder, wait=True)
    finally:
        paced.unregister()

    _, views, finals = zip(*recorder.views, strict=True)
    assert finals == (*[False] * (len(views) - 1), True)
    assert len(views) >= 2
    assert views[-1] == run._repr_markdown_()
    assert "✅ done" in views[-1]
    assert "many small tokens " * 3 in views[-1]
    assert len(run.snapshot()[0]) <= 20


def test_notebook_counts_published_events_so_a_drop_never_hides_the_end() -> None:
    run = ac.AgentRun(ac.AbortController(), max_events=10)
    reply = faux_assistant_message([faux_text("the whole reply")])
    views: list[tuple[str, bool]] = []
    shown = threading.Semaphore(0)

    def publish(markdown: str, final: bool) -> None:
        views.append((markdown, final))
        shown.release()

    run.publish(ac.AgentStartEvent())
    run.publish(ac.MessageStartEvent(reply))
    for _ in range(8):
        run.publish(_update())  # 10 events: the bound
    notebook._display_run(run, publish, wait=False)
    assert shown.acquire(timeout=WAIT_S)
    run.publish(_update())  # over the bound: 9 kept of 11
    assert shown.acquire(timeout=WAIT_S)  # the display follows the run
    run.publish(ac.MessageEndEvent(reply))
    run.publish(ac.AgentEndEvent([reply]))  # 9 kept of 13: as many as the last view showed
    run.finish([reply])  # waits for the display's final view

    assert len(run.snapshot()[0]) == 9
    assert views[-1] == (run._repr_markdown_(), True)
    assert [final for _, final in views] == [False] * (len(views) - 1) + [True]


def test_a_subclassed_message_update_is_kept_and_the_count_stays_true() -> None:
    class Marked(ac.MessageUpdateEvent):  # a hook's own kind of update: never dropped
        pass

    message = ac.AssistantMessage([], "a", "p", "m")
    delta = ac.TextDeltaEvent(0, "x", message)
    log = EventLog(max_events=20)
    marked = []
    for i in range(200):
        if i % 3 == 0:
            event: ac.AgentEvent = Marked(message, delta)
            marked.append(event)
        else:
            event = ac.MessageUpdateEvent(message, delta)
        log.publish(event)
        kept = log.take(0)[0]
        assert log._updates == sum(e.__class__ is ac.MessageUpdateEvent for e in kept)
    kept = log.take(0)[0]
    assert [e for e in kept if isinstance(e, Marked)] == marked
