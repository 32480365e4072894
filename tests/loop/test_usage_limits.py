"""Usage limits (API §14): `UsageLimits` on `AgentLoopConfig` and `Agent`, counted per run.

Every limit ends the run as data (an assistant message, `stop_reason` `"error"`,
`"usage limit reached: <name>=<value>"`), which `raise_for_error()` turns into
`UsageLimitExceeded`; no tool call is ever left without its result.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs
import pytest
from _internals import run_error, unanswered_tool_calls

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from agentcore.testing import scripted_model, tool_call

WAIT = 5.0
MODEL = ac.Model("fixed-1", "Fixed", "fixed", "fixed", "http://localhost:0")
OTHER = ac.Model("fixed-2", "Fixed 2", "fixed", "fixed", "http://localhost:0")
USAGE = ac.Usage(input=10, output=5, total_tokens=15, cost=ac.Cost(total=0.25))
"""What every reply of `FixedModel` used: three replies make 30/15/45 tokens and $0.75."""


@ac.tool
def noop() -> str:
    """Do nothing."""
    return "ok"


class FixedModel:
    """A stream function whose every reply calls `noop` `calls` times and used `USAGE`.

    It records the model of each call, so that a test sees how many calls were made.
    """

    def __init__(self, calls: int = 1) -> None:
        self.calls = calls
        self.models: list[ac.Model] = []
        self._ids = iter(range(10**6))

    def __call__(self, model: ac.Model, context: ac.Context,
                 options: ac.StreamOptions) -> ac.AssistantMessageEventStream:
        self.models.append(model)
        blocks: list[ac.TextContent | ac.ThinkingContent | ac.ToolCall] = [
            ac.ToolCall(f"call_{next(self._ids)}", "noop", {}) for _ in range(self.calls)]
        reply = ac.AssistantMessage(blocks, model.api, model.provider, model.id, usage=USAGE,
                                    stop_reason=ac.StopReason.TOOL_USE)
        out = ac.AssistantMessageEventStream()
        out.push(ac.StartEvent(ac.AssistantMessage([], model.api, model.provider, model.id)))
        out.push(ac.DoneEvent(ac.StopReason.TOOL_USE, reply))
        return out


class Recorder:
    """An EventSink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


def run_loop(limits: ac.UsageLimits | None, model: FixedModel,
             **config: Any) -> tuple[list[ac.AgentMessage], Recorder]:
    sink = Recorder()
    context = ac.AgentContext("", [], [noop])
    out = ac.run_agent_loop([ac.UserMessage("go")], context,
                            ac.AgentLoopConfig(model=MODEL, limits=limits, **config), sink,
                            stream_fn=model)
    return out, sink


def limit_reply(text: str, model: ac.Model = MODEL) -> ac.AssistantMessage:
    """The message a run ends with when it reaches a limit (its timestamp aside)."""
    return ac.AssistantMessage([], model.api, model.provider, model.id,
                               stop_reason=ac.StopReason.ERROR, error_message=text)


def same_but_time(message: ac.AgentMessage, expected: ac.AssistantMessage) -> bool:
    return isinstance(message, ac.AssistantMessage) and message == attrs.evolve(
        expected, timestamp=message.timestamp)


# (limits, the message, how many model calls are made before the run ends)
EVERY_LIMIT = [
    (ac.UsageLimits(max_turns=3), "usage limit reached: max_turns=3", 3),
    (ac.UsageLimits(max_model_calls=3), "usage limit reached: max_model_calls=3", 3),
    (ac.UsageLimits(max_tool_calls=3), "usage limit reached: max_tool_calls=3", 4),
    (ac.UsageLimits(max_input_tokens=30), "usage limit reached: max_input_tokens=30", 3),
    (ac.UsageLimits(max_output_tokens=15), "usage limit reached: max_output_tokens=15", 3),
    (ac.UsageLimits(max_total_tokens=45), "usage limit reached: max_total_tokens=45", 3),
    (ac.UsageLimits(max_cost=0.75), "usage limit reached: max_cost=0.75", 3),
]
LIMIT_IDS = [text.split(": ")[1].split("=")[0] for _, text, _ in EVERY_LIMIT]


@pytest.mark.parametrize(("limits", "text", "calls"), EVERY_LIMIT, ids=LIMIT_IDS)
def test_usage_limits_every_limit_ends_the_loop_with_its_message(
    limits: ac.UsageLimits, text: str, calls: int
) -> None:
    model = FixedModel()
    out, sink = run_loop(limits, model)
    assert len(model.models) == calls
    assert same_but_time(out[-1], limit_reply(text))
    assert unanswered_tool_calls(out) == []
    assert sink.types[-5:] == ["turn_start", "message_start", "message_end", "turn_end",
                               "agent_end"]
    assert sink.events[-2] == ac.TurnEndEvent(out[-1], [])
    assert sink.events[-1] == ac.AgentEndEvent(out)
    assert sink.types.count("turn_start") == calls + 1


@pytest.mark.parametrize(("limits", "text", "calls"), EVERY_LIMIT, ids=LIMIT_IDS)
def test_usage_limits_every_limit_raises_usage_limit_exceeded_from_the_agent(
    limits: ac.UsageLimits, text: str, calls: int
) -> None:
    model = FixedModel()
    agent = ac.Agent(MODEL, tools=[noop], stream_fn=model, limits=limits)
    run = agent.prompt("go")
    with pytest.raises(ac.UsageLimitExceeded) as caught:
        run.raise_for_error()
    assert isinstance(caught.value, ac.RunError)
    assert caught.value.message == text
    assert caught.value.stop_reason is ac.StopReason.ERROR
    assert run.error == text
    assert agent.state.error_message == text
    assert len(model.models) == calls


def test_usage_limits_agent_default_stops_a_runaway_model_at_50_calls(
    faux: FauxProvider,
) -> None:
    faux.set_responses([faux_assistant_message(faux_tool_call("noop", {}))
                        for _ in range(60)])
    agent = ac.Agent(faux.get_model(), tools=[noop])
    assert agent.limits == ac.UsageLimits(max_model_calls=50)
    run = agent.prompt("loop forever")
    with pytest.raises(ac.UsageLimitExceeded, match="usage limit reached: max_model_calls=50"):
        run.raise_for_error()
    assert faux.call_count == 50
    assert faux.pending_response_count() == 10
    last = agent.messages[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert last.error_message == "usage limit reached: max_model_calls=50"
    assert unanswered_tool_calls(agent.messages) == []


def test_usage_limits_none_on_the_agent_means_no_limit(faux: FauxProvider) -> None:
    faux.set_responses([*(faux_assistant_message(faux_tool_call("noop", {}))
                          for _ in range(60)), faux_assistant_message("done")])
    run = ac.Agent(faux.get_model(), tools=[noop], limits=None).prompt("go")
    run.raise_for_error()
    assert run.text == "done"
    assert faux.call_count == 61


def test_usage_limits_the_loop_has_no_limit_by_default() -> None:
    assert ac.AgentLoopConfig(model=MODEL).limits is None
    replies = [tool_call("noop")] * 60 + ["done"]
    with scripted_model(replies) as fake:
        sink = Recorder()
        out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], [noop]),
                                ac.AgentLoopConfig(model=fake.model), sink)
        fake.assert_called(times=61)
    assert isinstance(out[-1], ac.AssistantMessage)
    assert out[-1].text == "done"


def test_usage_limits_a_refused_batch_answers_every_call() -> None:
    model = FixedModel(calls=2)  # 2 calls run, then a batch of 2 would make 4 > 3
    out, sink = run_loop(ac.UsageLimits(max_tool_calls=3), model)
    text = "usage limit reached: max_tool_calls=3"
    results = [m for m in out if isinstance(m, ac.ToolResultMessage)]
    assert [(r.is_error, r.text) for r in results] == [
        (False, "ok"), (False, "ok"), (True, text), (True, text)]
    refused = out[-4]
    assert isinstance(refused, ac.AssistantMessage)
    assert [r.tool_call_id for r in results[2:]] == [c.id for c in refused.tool_calls]
    assert unanswered_tool_calls(out) == []
    assert unanswered_tool_calls(out[:-1]) == []  # answered before the run's last message
    assert len(model.models) == 2
    assert same_but_time(out[-1], limit_reply(text))
    ends = [e for e in sink.events if isinstance(e, ac.ToolExecutionEndEvent)]
    assert [(e.is_error, e.result.content) for e in ends[2:]] == [
        (True, [ac.TextContent(text)])] * 2
    assert sink.types.count("tool_execution_start") == 4
    turn_ends = [e for e in sink.events if isinstance(e, ac.TurnEndEvent)]
    assert turn_ends[-2] == ac.TurnEndEvent(refused, results[2:])
    assert turn_ends[-1] == ac.TurnEndEvent(out[-1], [])


def test_usage_limits_calls_of_a_truncated_reply_are_not_run_so_not_counted(
    faux: FauxProvider,
) -> None:
    truncated = faux_assistant_message([faux_tool_call("noop", {}), faux_tool_call("noop", {})],
                                       stop_reason="length")
    faux.set_responses([truncated, faux_assistant_message(faux_tool_call("noop", {})),
                        faux_assistant_message(faux_tool_call("noop", {}))])
    run = ac.Agent(faux.get_model(), tools=[noop],
                   limits=ac.UsageLimits(max_tool_calls=1)).prompt("go")
    assert run.error == "usage limit reached: max_tool_calls=1"
    results = [m for m in run.result(WAIT) if isinstance(m, ac.ToolResultMessage)]
    assert [(r.is_error, r.text.split(":")[0]) for r in results] == [
        (True, 'Tool call "noop" was not executed'), (True, 'Tool call "noop" was not executed'),
        (False, "ok"), (True, "usage limit reached")]
    assert faux.call_count == 3


def test_usage_limits_count_follow_ups_in_the_run_and_start_from_zero_per_prompt(
    faux: FauxProvider,
) -> None:
    faux.set_responses([faux_assistant_message(text) for text in ("one", "two", "three")])
    agent = ac.Agent(faux.get_model(), limits=ac.UsageLimits(max_model_calls=2))
    agent.follow_up("first follow-up")
    agent.follow_up("second follow-up")
    first = agent.prompt("go")
    with pytest.raises(ac.UsageLimitExceeded, match="max_model_calls=2"):
        first.raise_for_error()
    assert faux.call_count == 2
    assert [m.role for m in first.result(WAIT)] == [
        "user", "assistant", "user", "assistant", "user", "assistant"]
    second = agent.prompt("again")
    second.raise_for_error()
    assert second.text == "three"
    assert faux.call_count == 3


def test_usage_limits_count_steering_turns_in_the_run(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("a"), faux_assistant_message("b")])
    agent = ac.Agent(faux.get_model(), limits=ac.UsageLimits(max_turns=1))
    steered = threading.Event()

    def steer_once(event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.MessageEndEvent) and event.message.role == "assistant" \
                and not steered.is_set():
            steered.set()
            agent.steer("one more thing")

    agent.subscribe(steer_once)
    run = agent.prompt("go")
    assert run.error == "usage limit reached: max_turns=1"
    assert faux.call_count == 1
    assert [m.role for m in run.result(WAIT)] == ["user", "assistant", "user", "assistant"]
    steering = run.result(WAIT)[2]
    assert isinstance(steering, ac.UserMessage)
    assert steering.content == "one more thing"


def test_usage_limits_follow_a_model_switched_by_prepare_next_turn() -> None:
    model = FixedModel()

    def switch(turn: ac.PrepareNextTurnContext, signal: ac.AbortSignal) -> ac.AgentLoopTurnUpdate:
        return ac.AgentLoopTurnUpdate(model=OTHER)

    out, _ = run_loop(ac.UsageLimits(max_model_calls=2), model, prepare_next_turn=switch)
    assert model.models == [MODEL, OTHER]
    assert same_but_time(out[-1], limit_reply("usage limit reached: max_model_calls=2", OTHER))


def test_usage_limits_an_abort_still_ends_the_run_as_aborted(faux: FauxProvider) -> None:
    started, release = threading.Event(), threading.Event()

    @ac.tool
    def hold() -> str:
        """Wait until the test lets go."""
        started.set()
        release.wait(WAIT)
        return "held"

    faux.set_responses([faux_assistant_message(faux_tool_call("hold", {})),
                        faux_assistant_message("never")])
    agent = ac.Agent(faux.get_model(), tools=[hold], limits=ac.UsageLimits(max_model_calls=1))
    run = agent.prompt("go")
    assert started.wait(WAIT)
    run.abort()
    release.set()
    with pytest.raises(ac.RunError) as caught:
        run.raise_for_error()
    assert not isinstance(caught.value, ac.UsageLimitExceeded)
    assert caught.value.stop_reason is ac.StopReason.ABORTED
    assert faux.call_count == 1


def test_usage_limits_a_structured_output_retry_is_a_model_call() -> None:
    with scripted_model(["no tool", "still no tool", "nor now"]) as fake:
        agent = ac.Agent(fake.model, limits=ac.UsageLimits(max_model_calls=2))
        run = agent.prompt("a number", output_type=int, output_retries=5)
        with pytest.raises(ac.UsageLimitExceeded, match="max_model_calls=2"):
            run.raise_for_error()
        fake.assert_called(times=2)


def test_usage_limits_final_result_is_not_a_tool_call() -> None:
    with scripted_model([tool_call("final_result", {"response": 3})]) as fake:
        agent = ac.Agent(fake.model, limits=ac.UsageLimits(max_tool_calls=0))
        assert agent.prompt("a number", output_type=int).output == 3


BAD_VALUES = [
    ("max_turns", True, TypeError, "'max_turns' must be a non-negative int or None, got True"),
    ("max_model_calls", -1, ValueError, "'max_model_calls' must be a non-negative int"),
    ("max_tool_calls", 1.5, TypeError, "'max_tool_calls' must be a non-negative int"),
    ("max_input_tokens", "10", TypeError, "'max_input_tokens' must be a non-negative int"),
    ("max_output_tokens", False, TypeError, "'max_output_tokens' must be a non-negative int"),
    ("max_total_tokens", -5, ValueError, "'max_total_tokens' must be a non-negative int"),
    ("max_cost", True, TypeError, "'max_cost' must be a number of dollars or None, got True"),
    ("max_cost", "1", TypeError, "'max_cost' must be a number of dollars or None"),
    ("max_cost", -0.01, ValueError, "'max_cost' must be a non-negative, finite number"),
    ("max_cost", float("inf"), ValueError, "'max_cost' must be a non-negative, finite number"),
    ("max_cost", float("nan"), ValueError, "'max_cost' must be a non-negative, finite number"),
]


@pytest.mark.parametrize(("field", "value", "error", "text"), BAD_VALUES)
def test_usage_limits_bad_values_raise_naming_the_field(
    field: str, value: object, error: type[Exception], text: str
) -> None:
    with pytest.raises(error) as caught:
        ac.UsageLimits(**{field: value})  # type: ignore[arg-type]
    assert str(caught.value).startswith(text)
    assert "\n" not in str(caught.value)


def test_usage_limits_zero_and_whole_dollars_are_accepted() -> None:
    limits = ac.UsageLimits(max_turns=0, max_model_calls=0, max_tool_calls=0,
                            max_input_tokens=0, max_output_tokens=0, max_total_tokens=0,
                            max_cost=1)
    assert limits.max_cost == 1
    with pytest.raises(TypeError):
        ac.UsageLimits(5)  # type: ignore[call-arg]  # keyword only: which limit would 5 be?


def test_usage_limits_config_and_agent_reject_what_is_not_usage_limits() -> None:
    with pytest.raises(TypeError, match="'limits' must be a UsageLimits or None, got 50"):
        ac.AgentLoopConfig(model=MODEL, limits=50)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'limits' must be a UsageLimits or None"):
        ac.Agent(MODEL, limits={"max_model_calls": 5})  # type: ignore[arg-type]
    agent = ac.Agent(MODEL)
    with pytest.raises(TypeError, match="'limits' must be a UsageLimits or None"):
        agent.limits = 5  # type: ignore[assignment]
    agent.limits = None
    assert agent.limits is None


def test_usage_limits_serialize_and_so_does_the_transcript_they_end() -> None:
    limits = ac.UsageLimits(max_model_calls=3, max_cost=5.0)
    assert ac.to_dict(limits) == {"maxModelCalls": 3, "maxCost": 5.0}
    assert ac.from_json(ac.UsageLimits, ac.to_json(limits)) == limits
    agent = ac.Agent(MODEL, tools=[noop], stream_fn=FixedModel(), limits=limits)
    run = agent.prompt("go")
    run.wait(WAIT)
    transcript = agent.messages
    text = ac.to_json(transcript)
    assert "usage limit reached: max_model_calls=3" in text
    restored = ac.from_json(list[ac.AgentMessage], text)
    assert restored == transcript
    last = restored[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert isinstance(run_error(last.stop_reason, last.error_message or ""),
                      ac.UsageLimitExceeded)
