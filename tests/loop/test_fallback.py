"""Fallback models and the circuit breaker (API §24), over real HTTP.

Each model is an OpenAI-compatible server on 127.0.0.1 (`SSEServer`), so a failure is a real
answer: a 503, a stream cut short or an error event in the stream. Tests read the order of
events and what each server received, never the clock.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from _internals import default_breaker
from replies import completions_reply
from sse_server import SSEServer

import agentcore as ac

NO_RETRIES = {"max_retries": 0}


def _data(obj: Any) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def broken_reply(text: str) -> bytes:
    """A stream that says `text`, reports its usage, then fails with an error event."""
    return (_data({**BASE, "choices": [{"index": 0, "delta": {"content": text}}]})
            + _data({**BASE, "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}})
            + _data({"error": {"message": "the model is overloaded", "type": "server_error"}}))


def model_at(server: SSEServer, name: str, provider: str = "openai") -> ac.Model:
    return ac.Model(name, name, "openai-completions", provider, f"{server.url}/v1",
                    cost=ac.ModelCost(input=1.0, output=2.0))


@pytest.fixture
def servers() -> Iterator[tuple[SSEServer, SSEServer, SSEServer]]:
    made = [SSEServer() for _ in range(3)]
    try:
        yield made[0], made[1], made[2]
    finally:
        for server in made:
            server.close()
    for server in made:
        assert not server.errors, server.errors


def run_loop(config: ac.AgentLoopConfig, prompt: str = "hi") -> tuple[list[ac.AgentEvent],
                                                                      list[ac.AgentMessage]]:
    events: list[ac.AgentEvent] = []
    messages = ac.run_agent_loop([ac.UserMessage(prompt)], ac.AgentContext("", [], []), config,
                                 events.append)
    return events, messages


def kinds(events: list[ac.AgentEvent]) -> list[str]:
    return [e.type for e in events if e.type not in ("message_update",)]


def test_fallback_a_503_goes_to_the_next_model_which_ends_the_turn(servers) -> None:
    first, second, _ = servers
    first.status(503, '{"error": {"message": "unavailable"}}')
    second.sse(completions_reply(text="from the fallback"))
    primary, fallback = model_at(first, "primary"), model_at(second, "backup")
    config = ac.AgentLoopConfig(model=primary, fallback_models=[fallback], **NO_RETRIES)
    events, messages = run_loop(config)
    assert kinds(events) == ["agent_start", "turn_start", "message_start", "message_end",
                             "model_fallback", "message_start", "message_end", "turn_end",
                             "agent_end"]
    fallback_event = next(e for e in events if isinstance(e, ac.ModelFallbackEvent))
    assert fallback_event.failed is not None
    assert fallback_event.failed.model == "primary"
    assert fallback_event.failed.error_message.startswith("503")
    assert fallback_event.model == fallback
    assert "openai/primary failed: 503" in fallback_event.reason
    reply = messages[-1]
    assert isinstance(reply, ac.AssistantMessage)
    assert (reply.text, reply.model, reply.provider) == ("from the fallback", "backup", "openai")
    assert [m.role for m in messages] == ["user", "assistant"]  # the failure left no trace
    assert len(first.requests) == 1
    assert len(second.requests) == 1
    # the fallback got the same turn: the same user message
    assert second.requests[0].json["messages"][-1]["content"] == "hi"


def test_fallback_a_failure_mid_stream_drops_the_partial_reply_and_counts_its_usage(
        servers) -> None:
    first, second, _ = servers
    first.sse(broken_reply("Once upon"))
    second.sse(completions_reply(text="A whole story."))
    with ac.Agent(model_at(first, "primary"), fallback_models=[model_at(second, "backup")],
                  **NO_RETRIES) as agent:
        seen: list[ac.AgentEvent] = []
        streaming_after_fallback: list[object] = []

        def listener(event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
            seen.append(event)
            if isinstance(event, ac.ModelFallbackEvent):
                streaming_after_fallback.append(agent.state.streaming_message)

        agent.subscribe(listener)
        run = agent.prompt("tell me a story")
        run.raise_for_error()
    # The partial streamed (message_start, updates) and got no message_end
    started = [e.message for e in seen if isinstance(e, ac.MessageStartEvent)]
    ended = [e.message for e in seen if isinstance(e, ac.MessageEndEvent)]
    partial_start = started[1]
    assert isinstance(partial_start, ac.AssistantMessage)
    assert partial_start.model == "primary"
    assert all(getattr(m, "model", None) != "primary" for m in ended)
    fallback_event = next(e for e in seen if isinstance(e, ac.ModelFallbackEvent))
    assert fallback_event.failed is not None
    assert fallback_event.failed.text == "Once upon"
    assert streaming_after_fallback == [None]  # the agent's state dropped it too
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    assert agent.messages[-1].text == "A whole story."  # type: ignore[union-attr]
    # run.usage counts the failed attempt (7 in, 3 out) and the reply (10 in, 5 out)
    assert (run.usage.input, run.usage.output) == (17, 8)
    assert run.usage.cost.total == pytest.approx((17 * 1.0 + 8 * 2.0) / 1e6)


def test_fallback_every_model_failing_names_each_one_and_why(servers) -> None:
    first, second, third = servers
    first.status(500, '{"error": {"message": "boom"}}')
    second.sse(broken_reply("half"))
    third.status(503, "down")
    config = ac.AgentLoopConfig(model=model_at(first, "a"),
                                fallback_models=[model_at(second, "b"), model_at(third, "c")],
                                **NO_RETRIES)
    events, messages = run_loop(config)
    assert [e.model.id for e in events if isinstance(e, ac.ModelFallbackEvent)] == ["b", "c"]
    last = messages[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert last.stop_reason == ac.StopReason.ERROR
    text = last.error_message or ""
    assert text.startswith("all 3 models failed: openai/a: 500")
    assert "openai/b: the model is overloaded" in text
    assert "openai/c: 503 down" in text
    assert last.model == "c"
    assert [m.role for m in messages] == ["user", "assistant"]


def test_fallback_an_empty_list_and_fallback_on_false_leave_the_failure(servers) -> None:
    first, second, _ = servers
    first.status(500, "boom")
    events, messages = run_loop(ac.AgentLoopConfig(model=model_at(first, "a"),
                                                   fallback_models=[], **NO_RETRIES))
    assert not [e for e in events if isinstance(e, ac.ModelFallbackEvent)]
    first.status(500, "boom")
    asked: list[ac.AssistantMessage] = []

    def only_overloads(message: ac.AssistantMessage) -> bool:
        asked.append(message)
        return "overloaded" in (message.error_message or "")

    config = ac.AgentLoopConfig(model=model_at(first, "a"), fallback_models=[
        model_at(second, "b")], fallback_on=only_overloads, **NO_RETRIES)
    events, messages = run_loop(config)
    assert [m.error_message for m in asked] == ["500 boom"]
    assert not second.requests
    assert messages[-1].error_message == "500 boom"  # type: ignore[union-attr]


def test_fallback_on_that_raises_leaves_the_failure_standing(servers) -> None:
    first, second, _ = servers
    first.status(500, "boom")

    def broken(message: ac.AssistantMessage) -> bool:
        raise RuntimeError("bug")

    config = ac.AgentLoopConfig(model=model_at(first, "a"), fallback_models=[
        model_at(second, "b")], fallback_on=broken, **NO_RETRIES)
    _, messages = run_loop(config)
    assert messages[-1].error_message == "500 boom"  # type: ignore[union-attr]
    assert not second.requests


def test_fallback_never_follows_an_abort(servers) -> None:
    first, second, _ = servers
    from sse_server import HOLD

    first.slow_sse([_data({**BASE, "choices": [{"index": 0, "delta": {"content": "x"}}]})], HOLD)
    controller = ac.AbortController()
    config = ac.AgentLoopConfig(model=model_at(first, "a"), fallback_models=[
        model_at(second, "b")])

    def sink(event: ac.AgentEvent) -> None:
        if isinstance(event, ac.MessageUpdateEvent):
            controller.abort()

    messages = ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext("", [], []), config,
                                 sink, signal=controller.signal)
    assert messages[-1].stop_reason == ac.StopReason.ABORTED  # type: ignore[union-attr]
    assert not second.requests


def test_fallback_another_provider_gets_its_own_key_never_the_run_s(servers) -> None:
    first, second, third = servers
    for _ in range(2):
        first.status(503, "down")
    second.sse(completions_reply(text="ok"))
    third.sse(completions_reply(text="ok"))
    primary = model_at(first, "a")
    same_provider = model_at(second, "b")
    other = model_at(third, "c", provider="groq")
    config = ac.AgentLoopConfig(model=primary, fallback_models=[same_provider],
                                api_key="sk-primary-secret",
                                headers={"X-Api-Key": "sk-header-secret", "X-Trace": "t1"},
                                **NO_RETRIES)
    run_loop(config)
    assert second.requests[0].header("Authorization") == "Bearer sk-primary-secret"
    config = ac.AgentLoopConfig(model=primary, fallback_models=[other],
                                api_key="sk-primary-secret",
                                headers={"X-Api-Key": "sk-header-secret", "X-Trace": "t1"},
                                **NO_RETRIES)
    run_loop(config)
    sent = third.requests[0]
    assert "sk-primary-secret" not in json.dumps(sent.headers)
    assert "sk-header-secret" not in json.dumps(sent.headers)
    assert sent.header("X-Trace") == "t1"


def test_fallback_get_api_key_is_asked_for_each_model_s_provider(servers) -> None:
    first, second, _ = servers
    first.status(503, "down")
    second.sse(completions_reply(text="ok"))
    asked: list[str] = []

    def keys(provider: str) -> str:
        asked.append(provider)
        return f"key-of-{provider}"

    config = ac.AgentLoopConfig(model=model_at(first, "a"), get_api_key=keys,
                                fallback_models=[model_at(second, "b", provider="mistral")],
                                **NO_RETRIES)
    run_loop(config)
    assert asked == ["openai", "mistral"]
    assert second.requests[0].header("Authorization") == "Bearer key-of-mistral"


def test_fallback_bad_input_is_refused_when_the_config_is_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = ac.Model("a", "a", "openai-completions", "openai", "http://127.0.0.1:9/v1")
    with pytest.raises(TypeError, match=r"'fallback_models\[0\]' must be a Model.*get_model"):
        ac.AgentLoopConfig(model=model, fallback_models=["openai/gpt-4o"])
    with pytest.raises(TypeError, match="'fallback_models' must be a list of Model"):
        ac.AgentLoopConfig(model=model, fallback_models=model)
    with pytest.raises(TypeError, match="'fallback_on' must accept 1 argument"):
        ac.AgentLoopConfig(model=model, fallback_on=lambda: True)
    with pytest.raises(TypeError, match="'circuit_breaker' must be"):
        ac.AgentLoopConfig(model=model, circuit_breaker=3)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    remote = ac.get_model("anthropic", "claude-sonnet-4-5")
    with pytest.raises(ac.MissingApiKeyError,
                       match=r"'fallback_models\[0\]' \(anthropic/claude-sonnet-4-5\) has no "
                             r"API key.*ANTHROPIC_API_KEY") as info:
        ac.Agent(model, fallback_models=[remote])
    assert isinstance(info.value, ValueError)
    # a key from get_api_key, or the environment, will do
    ac.AgentLoopConfig(model=model, fallback_models=[remote], get_api_key=lambda p: "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert ac.Agent(model, fallback_models=(remote,)).fallback_models == [remote]


# The circuit breaker


def test_breaker_opens_after_the_threshold_and_then_skips_the_model_without_a_request(
        servers) -> None:
    first, second, _ = servers
    breaker = ac.CircuitBreaker(failure_threshold=2, cooldown=3600)
    primary, backup = model_at(first, "a"), model_at(second, "b")
    config = ac.AgentLoopConfig(model=primary, fallback_models=[backup],
                                circuit_breaker=breaker, **NO_RETRIES)
    for _ in range(2):
        first.status(503, "down")
        second.sse(completions_reply(text="ok"))
        run_loop(config)
        assert breaker.state(backup) == "closed"
    assert breaker.state(primary) == "open"
    second.sse(completions_reply(text="ok"))
    events, messages = run_loop(config)
    skipped = [e for e in events if isinstance(e, ac.ModelFallbackEvent)]
    assert len(skipped) == 1
    assert skipped[0].failed is None
    assert skipped[0].model == backup
    assert skipped[0].reason.startswith("circuit open for openai/a after 2 failed calls")
    assert len(first.requests) == 2  # none for the third run
    assert messages[-1].text == "ok"  # type: ignore[union-attr]
    # No fallback left: the open circuit is the run's error, still without a request
    _, messages = run_loop(ac.AgentLoopConfig(model=primary, circuit_breaker=breaker))
    assert messages[-1].error_message.startswith("circuit open for openai/a")  # type: ignore
    assert len(first.requests) == 2


def test_breaker_half_open_trial_closes_on_success_and_reopens_on_failure(servers) -> None:
    first, second, _ = servers
    breaker = ac.CircuitBreaker(failure_threshold=1, cooldown=0)
    clock = [0.0]
    breaker._clock = lambda: clock[0]  # type: ignore[attr-defined]  # the test's clock
    breaker.cooldown = 10.0
    primary, backup = model_at(first, "a"), model_at(second, "b")
    config = ac.AgentLoopConfig(model=primary, fallback_models=[backup],
                                circuit_breaker=breaker, **NO_RETRIES)
    first.status(503, "down")
    second.sse(completions_reply(text="ok"))
    run_loop(config)
    assert breaker.state(primary) == "open"
    clock[0] = 10.0
    assert breaker.state(primary) == "half_open"
    first.status(503, "still down")  # the trial fails: open again for another cooldown
    second.sse(completions_reply(text="ok"))
    run_loop(config)
    assert breaker.state(primary) == "open"
    assert len(first.requests) == 2
    clock[0] = 20.0
    first.sse(completions_reply(text="back"))  # the trial succeeds: closed
    _, messages = run_loop(config)
    assert messages[-1].text == "back"  # type: ignore[union-attr]
    assert breaker.state(primary) == "closed"


def test_breaker_lets_one_trial_through_while_others_fall_back() -> None:
    breaker = ac.CircuitBreaker(failure_threshold=1, cooldown=0.0)
    model = ac.Model("a", "a", "openai-completions", "openai", "http://127.0.0.1:9")
    permit = breaker.permit(model)
    assert permit is not None
    assert not permit.trial
    permit.settle(False)
    assert breaker.state(model) == "half_open"  # a cooldown of 0 has passed at once
    trial = breaker.permit(model)
    assert trial is not None
    assert trial.trial
    assert breaker.permit(model) is None  # the trial decides; meanwhile others fall back
    assert "a trial call is deciding" in breaker.refusal(model)
    trial.settle(None)  # an aborted trial says nothing: the next call may try
    again = breaker.permit(model)
    assert again is not None
    assert again.trial
    again.settle(True)
    assert breaker.state(model) == "closed"


def test_breaker_counts_per_endpoint_and_only_failures_of_the_model(servers) -> None:
    breaker = ac.CircuitBreaker(failure_threshold=2, cooldown=3600)
    first, second, _ = servers
    a, b = model_at(first, "a"), model_at(second, "a")  # same id, another base URL
    config = ac.AgentLoopConfig(model=a, circuit_breaker=breaker, **NO_RETRIES)
    for answer in (400, 404, 413):  # the request's fault: the model is up
        first.status(answer, "bad request")
        run_loop(config)
    assert breaker.state(a) == "closed"
    first.status(500, "boom")
    run_loop(config)
    first.status(429, "slow down")  # a rate limit counts: the model cannot serve now
    run_loop(config)
    assert breaker.state(a) == "open"
    assert breaker.state(b) == "closed"
    breaker.reset()
    assert breaker.state(a) == "closed"


def test_breaker_of_the_process_watches_only_runs_with_fallbacks(servers) -> None:
    first, _, _ = servers
    config = ac.AgentLoopConfig(model=model_at(first, "a"), **NO_RETRIES)
    for _ in range(5):
        first.status(503, "down")
        run_loop(config)
    assert len(first.requests) == 5
    assert default_breaker().state(config.model) == "closed"


def test_breaker_threshold_zero_never_opens(servers) -> None:
    first, second, _ = servers
    breaker = ac.CircuitBreaker(failure_threshold=0)
    config = ac.AgentLoopConfig(model=model_at(first, "a"), circuit_breaker=breaker,
                                fallback_models=[model_at(second, "b")], **NO_RETRIES)
    for _ in range(4):
        first.status(503, "down")
        second.sse(completions_reply(text="ok"))
        run_loop(config)
    assert len(first.requests) == 4
    assert breaker.state(config.model) == "closed"


def test_breaker_bad_input_and_no_pickling() -> None:
    import pickle

    with pytest.raises(ValueError, match="'failure_threshold' must be 0"):
        ac.CircuitBreaker(failure_threshold=-1)
    with pytest.raises(TypeError, match="'failure_threshold' must be an int"):
        ac.CircuitBreaker(failure_threshold=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'cooldown' must be a finite, non-negative"):
        ac.CircuitBreaker(cooldown=-1)
    with pytest.raises(TypeError, match="'cooldown' must be a number of seconds"):
        ac.CircuitBreaker(cooldown="30")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'model' must be a Model"):
        ac.CircuitBreaker().state("openai/gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(ac.CircuitBreaker())
    assert repr(ac.CircuitBreaker(2, 5)) == (
        "CircuitBreaker(failure_threshold=2, cooldown=5, open=0)")


def test_breaker_is_thread_safe_under_concurrent_failures() -> None:
    breaker = ac.CircuitBreaker(failure_threshold=1000, cooldown=3600)
    model = ac.Model("a", "a", "openai-completions", "openai", "http://127.0.0.1:9")

    def fail() -> None:
        for _ in range(250):
            permit = breaker.permit(model)
            if permit is not None:
                permit.settle(False)

    threads = [threading.Thread(target=fail) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert breaker.state(model) == "open"  # exactly the 1000th failure opened it


def test_model_fallback_event_round_trips_without_secrets() -> None:
    model = ac.Model("b", "b", "openai-completions", "openai", "http://h/v1",
                     headers={"Authorization": "Bearer sk-secret"})
    failed = ac.AssistantMessage([ac.TextContent("half")], "openai-completions", "openai", "a",
                                 stop_reason="error", error_message="503 down")
    event = ac.ModelFallbackEvent(failed, model, "openai/a failed: 503 down")
    text = ac.to_json(event)
    assert "sk-secret" not in text
    back = ac.from_json(ac.AgentEvent, text)
    assert isinstance(back, ac.ModelFallbackEvent)
    assert back.failed == failed
    assert back.reason == event.reason
    assert ac.from_json(ac.AgentEvent, ac.to_json(ac.ModelFallbackEvent(None, model, "r"))
                        ).failed is None


def test_breaker_trial_is_given_back_when_the_call_never_got_to_decide(servers) -> None:
    first, second, _ = servers
    breaker = ac.CircuitBreaker(failure_threshold=1, cooldown=0)
    primary = model_at(first, "a")
    first.status(503, "down")
    run_loop(ac.AgentLoopConfig(model=primary, circuit_breaker=breaker, **NO_RETRIES))
    assert breaker.state(primary) == "half_open"

    def broken(messages: list[ac.AgentMessage], signal: ac.AbortSignal) -> list[ac.AgentMessage]:
        raise RuntimeError("transform failed")

    config = ac.AgentLoopConfig(model=primary, circuit_breaker=breaker, transform_context=broken,
                                fallback_models=[model_at(second, "b")], **NO_RETRIES)
    _, messages = run_loop(config)  # the trial's context could not be built: no verdict
    assert messages[-1].error_message == "transform failed"  # type: ignore[union-attr]
    trial = breaker.permit(primary)
    assert trial is not None
    assert trial.trial  # the next call may still try

    def raising_sink(event: ac.AgentEvent) -> None:
        if isinstance(event, ac.MessageStartEvent) and event.message.role == "assistant":
            raise KeyError("listener bug")

    trial.settle(None)
    first.sse(completions_reply(text="ok"))
    with pytest.raises(KeyError):
        ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext("", [], []),
                          ac.AgentLoopConfig(model=primary, circuit_breaker=breaker,
                                             **NO_RETRIES), raising_sink)
    again = breaker.permit(primary)  # the sink's failure said nothing of the model
    assert again is not None
    assert again.trial
