"""AbortController and AbortSignal: state, waiting, listeners, and thread safety."""

from __future__ import annotations

import logging
import threading

import pytest

from agentcore import AbortController, AbortError, AbortSignal, AgentcoreError

WAIT_S = 10.0


def test_abort_signal_starts_not_aborted():
    controller = AbortController()
    signal = controller.signal

    assert isinstance(signal, AbortSignal)
    assert controller.signal is signal
    assert signal.aborted is False
    assert signal.reason is None


def test_abort_controller_abort_sets_aborted_and_reason():
    controller = AbortController()
    controller.abort("user pressed stop")

    assert controller.signal.aborted is True
    assert controller.signal.reason == "user pressed stop"


def test_abort_controller_abort_without_reason_leaves_reason_none():
    controller = AbortController()
    controller.abort()

    assert controller.signal.aborted is True
    assert controller.signal.reason is None


def test_abort_controller_abort_is_idempotent_and_keeps_first_reason():
    controller = AbortController()
    calls: list[str] = []
    controller.signal.add_listener(lambda: calls.append("called"))

    controller.abort("first")
    controller.abort("second")

    assert controller.signal.reason == "first"
    assert calls == ["called"]


def test_abort_signal_wait_returns_false_then_true():
    controller = AbortController()

    assert controller.signal.wait(0.01) is False
    controller.abort()
    assert controller.signal.wait(0) is True
    assert controller.signal.wait() is True


def test_abort_signal_wait_wakes_when_another_thread_aborts():
    controller = AbortController()
    waiting = threading.Event()

    def abort_later() -> None:
        assert waiting.wait(WAIT_S)
        controller.abort("from a thread")

    thread = threading.Thread(target=abort_later, daemon=True)
    thread.start()
    waiting.set()
    assert controller.signal.wait(WAIT_S) is True
    thread.join(WAIT_S)
    assert controller.signal.reason == "from a thread"


def test_abort_signal_listener_is_called_once_on_abort():
    controller = AbortController()
    calls: list[int] = []
    controller.signal.add_listener(lambda: calls.append(1))

    assert calls == []
    controller.abort()
    controller.abort()
    assert calls == [1]


def test_abort_signal_listeners_see_the_signal_already_aborted():
    controller = AbortController()
    seen: list[tuple[bool, object]] = []
    controller.signal.add_listener(
        lambda: seen.append((controller.signal.aborted, controller.signal.reason))
    )

    controller.abort("why")
    assert seen == [(True, "why")]


def test_abort_signal_listener_added_after_abort_is_called_at_once():
    controller = AbortController()
    controller.abort()
    calls: list[int] = []

    remove = controller.signal.add_listener(lambda: calls.append(1))

    assert calls == [1]
    remove()
    controller.abort()
    assert calls == [1]


def test_abort_signal_removed_listener_is_not_called():
    controller = AbortController()
    calls: list[str] = []
    remove_a = controller.signal.add_listener(lambda: calls.append("a"))
    controller.signal.add_listener(lambda: calls.append("b"))

    remove_a()
    remove_a()
    controller.abort()

    assert calls == ["b"]


def test_abort_signal_remove_after_abort_is_harmless():
    controller = AbortController()
    calls: list[int] = []
    remove = controller.signal.add_listener(lambda: calls.append(1))

    controller.abort()
    remove()

    assert calls == [1]


def test_abort_signal_raising_listener_is_logged_and_others_still_run(caplog):
    controller = AbortController()
    calls: list[str] = []

    def broken() -> None:
        raise RuntimeError("listener failed")

    controller.signal.add_listener(lambda: calls.append("before"))
    controller.signal.add_listener(broken)
    controller.signal.add_listener(lambda: calls.append("after"))

    with caplog.at_level(logging.ERROR, logger="agentcore"):
        controller.abort()

    assert sorted(calls) == ["after", "before"]
    assert controller.signal.aborted
    failures = [r for r in caplog.records if r.exc_info is not None]
    assert len(failures) == 1
    assert isinstance(failures[0].exc_info[1], RuntimeError)
    assert str(failures[0].exc_info[1]) == "listener failed"


def test_abort_signal_raising_listener_added_after_abort_is_logged_not_raised(caplog):
    controller = AbortController()
    controller.abort()

    def broken() -> None:
        raise ValueError("late listener failed")

    with caplog.at_level(logging.ERROR, logger="agentcore"):
        controller.signal.add_listener(broken)

    assert [str(r.exc_info[1]) for r in caplog.records if r.exc_info] == ["late listener failed"]


def test_abort_signal_add_listener_rejects_non_callable():
    controller = AbortController()
    with pytest.raises(TypeError, match="'fn'"):
        controller.signal.add_listener("not callable")  # type: ignore[arg-type]


def test_abort_signal_listener_runs_on_the_aborting_thread():
    controller = AbortController()
    listener_threads: list[int] = []
    controller.signal.add_listener(lambda: listener_threads.append(threading.get_ident()))
    aborter_thread: list[int] = []

    def abort() -> None:
        aborter_thread.append(threading.get_ident())
        controller.abort()

    thread = threading.Thread(target=abort, daemon=True)
    thread.start()
    thread.join(WAIT_S)

    assert listener_threads == aborter_thread


def test_abort_signal_throw_if_aborted():
    controller = AbortController()
    controller.signal.throw_if_aborted()

    controller.abort("deadline")
    with pytest.raises(AbortError, match="deadline") as info:
        controller.signal.throw_if_aborted()
    assert isinstance(info.value, AgentcoreError)


def test_abort_signal_throw_if_aborted_without_reason():
    controller = AbortController()
    controller.abort()
    with pytest.raises(AbortError, match="aborted"):
        controller.signal.throw_if_aborted()


def test_abort_controller_concurrent_abort_calls_each_listener_exactly_once():
    threads_n, listeners_n = 16, 50
    controller = AbortController()
    counts = [0] * listeners_n
    counts_lock = threading.Lock()

    def make_listener(i: int):
        def listener() -> None:
            with counts_lock:
                counts[i] += 1
        return listener

    for i in range(listeners_n):
        controller.signal.add_listener(make_listener(i))

    start = threading.Barrier(threads_n)

    def abort(i: int) -> None:
        start.wait(WAIT_S)
        controller.abort(i)

    threads = [threading.Thread(target=abort, args=(i,), daemon=True) for i in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)

    assert counts == [1] * listeners_n
    assert controller.signal.reason in range(threads_n)


def test_abort_signal_listeners_added_while_aborting_are_each_called_once():
    adders_n, per_adder = 8, 100
    controller = AbortController()
    counts: dict[tuple[int, int], int] = {}
    counts_lock = threading.Lock()
    start = threading.Barrier(adders_n + 1)

    def make_listener(key: tuple[int, int]):
        def listener() -> None:
            with counts_lock:
                counts[key] = counts.get(key, 0) + 1
        return listener

    def add(a: int) -> None:
        start.wait(WAIT_S)
        for i in range(per_adder):
            controller.signal.add_listener(make_listener((a, i)))

    def abort() -> None:
        start.wait(WAIT_S)
        controller.abort()

    threads = [threading.Thread(target=add, args=(a,), daemon=True) for a in range(adders_n)]
    threads.append(threading.Thread(target=abort, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)

    assert counts == {(a, i): 1 for a in range(adders_n) for i in range(per_adder)}


def test_abort_controller_and_signal_reprs_show_state():
    controller = AbortController()
    assert repr(controller) == "AbortController(aborted=False)"
    assert repr(controller.signal) == "AbortSignal(aborted=False)"
    controller.abort()
    assert repr(controller) == "AbortController(aborted=True)"
    assert repr(controller.signal) == "AbortSignal(aborted=True)"


def test_abort_error_from_a_stream_past_its_grace_is_an_agentcore_error():
    from agentcore import EventStream

    controller = AbortController()
    controller.abort("stop")
    stream: EventStream[int, None] = EventStream()  # its producer never ends it

    with pytest.raises(AgentcoreError) as info:
        list(stream.iter_until(controller.signal, 0.0))
    assert type(info.value) is AbortError
    assert str(info.value) == "Request was aborted"
