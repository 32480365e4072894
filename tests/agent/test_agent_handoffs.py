"""Handoffs (API §25): `handoff(agent)`, the `handoff` event, `Agent.active_agent`, max_depth."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from replies import completions_reply
from sse_server import SSEServer

import agentcore as ac
from agentcore.testing import ScriptedModel, scripted_model, tool_call


@ac.tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@ac.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


@pytest.fixture
def models() -> Iterator[tuple[ScriptedModel, ScriptedModel]]:
    with scripted_model() as a, scripted_model() as b:
        yield a, b


def kinds(events: list[ac.AgentEvent]) -> list[str]:
    return [e.type for e in events if e.type != "message_update"]


def handoffs(events: list[ac.AgentEvent]) -> list[tuple[str, str]]:
    return [(e.from_agent, e.to_agent) for e in events if isinstance(e, ac.HandoffEvent)]


# --- the tool -----------------------------------------------------------------------------


def test_handoff_makes_a_tool_without_parameters_named_after_the_agent(models) -> None:
    _, b = models
    billing = ac.Agent(b.model, name="billing")
    made = ac.handoff(billing)
    assert isinstance(made, ac.AgentTool)
    assert made.name == "transfer_to_billing"
    assert made.parameters == {"type": "object", "properties": {}}
    assert made.description == "Hand the conversation over to billing."
    assert ac.handoff(billing, "For refunds").description == "For refunds"


@pytest.mark.parametrize("target", [None, "billing", ac.AgentTool])
def test_handoff_to_something_else_than_an_agent_is_a_type_error(target) -> None:
    with pytest.raises(TypeError, match="'agent' must be an Agent"):
        ac.handoff(target)


def test_handoff_bad_description_or_max_depth(models) -> None:
    _, b = models
    billing = ac.Agent(b.model, name="billing")
    with pytest.raises(TypeError, match="'description'"):
        ac.handoff(billing, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'max_depth'"):
        ac.handoff(billing, max_depth=True)
    with pytest.raises(ValueError, match="'max_depth' must be at least 1"):
        ac.handoff(billing, max_depth=0)


# --- a run that hands off -----------------------------------------------------------------


def test_the_next_turn_runs_with_the_targets_model_prompt_tools_and_thinking(models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing", system_prompt="You do billing.", tools=[refund],
                       thinking_level="high")
    triage = ac.Agent(a.model, name="triage", system_prompt="You triage.",
                      tools=[lookup, ac.handoff(billing)])
    a.add_replies([tool_call("transfer_to_billing", id="h1")])
    b.add_replies(["Billing here."])
    heard: list[ac.AgentEvent] = []
    triage.subscribe(lambda event, signal: heard.append(event))
    run = triage.prompt("I want a refund")
    events = list(run)  # the run's own stream sees it too
    assert run.text == "Billing here."
    assert kinds(events) == [
        "agent_start", "turn_start", "message_start", "message_end",  # the prompt
        "message_start", "message_end",  # triage's reply: the call
        "tool_execution_start", "tool_execution_end", "message_start", "message_end",
        "handoff",  # after the call's result, before the turn ends
        "turn_end", "turn_start", "message_start", "message_end", "turn_end", "agent_end"]
    assert kinds(heard) == kinds(events)
    assert handoffs(events) == [("triage", "billing")]
    result = triage.messages[2]
    assert isinstance(result, ac.ToolResultMessage)
    assert (result.text, result.is_error) == ("Transferred to billing.", False)
    # triage's model served the first turn only; billing's the second, with its settings
    assert a.call_count == 1
    assert a.last_call.system_prompt == "You triage."
    assert a.last_call.tool_names == ["lookup", "transfer_to_billing"]
    assert a.last_call.options.reasoning is None
    sent = b.last_call
    assert sent.system_prompt == "You do billing."
    assert sent.tool_names == ["refund"]
    assert sent.options.reasoning == ac.ThinkingLevel.HIGH
    assert [m.role for m in sent.messages] == ["user", "assistant", "toolResult"]  # same transcript
    assert triage.active_agent is billing
    assert billing.messages == []  # the target's own transcript is untouched
    assert reply_model(triage.messages[-1]) == b.model.id


def reply_model(message: ac.AgentMessage) -> str:
    assert isinstance(message, ac.AssistantMessage)
    return message.model


def test_the_target_keeps_working_with_its_tools_in_the_same_run(models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing", tools=[refund])
    triage = ac.Agent(a.model, name="triage", tools=[ac.handoff(billing)])
    a.add_replies([tool_call("transfer_to_billing")])
    b.add_replies([tool_call("refund", {"order": "42"}), "Refunded."])
    run = triage.prompt("refund 42")
    run.raise_for_error()
    assert run.text == "Refunded."
    assert b.sent_tool_results()[-1].text == "refunded 42"


def test_a_later_prompt_is_answered_by_the_active_agent_on_the_original_transcript(
        models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing", system_prompt="You do billing.", tools=[refund])
    triage = ac.Agent(a.model, name="triage", system_prompt="You triage.",
                      tools=[ac.handoff(billing)])
    a.add_replies([tool_call("transfer_to_billing"), "Triage again."])
    b.add_replies(["Billing here.", "Still billing."])
    triage.prompt("refund please").wait()
    assert triage.active_agent is billing
    assert triage.state.model == a.model  # the state shows the agent's own settings
    second = triage.prompt("and the other order?")
    assert second.text == "Still billing."
    assert b.call_count == 2
    assert b.last_call.system_prompt == "You do billing."
    assert [m.role for m in b.last_call.messages] == [
        "user", "assistant", "toolResult", "assistant", "user"]
    assert len(triage.messages) == 6
    # assigning the agent itself goes back
    triage.active_agent = triage
    assert triage.active_agent is triage
    assert triage.prompt("who is there?").text == "Triage again."
    assert a.last_call.system_prompt == "You triage."
    assert len(a.last_call.messages) == 7


def test_reset_goes_back_to_the_agent_itself(models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing")
    triage = ac.Agent(a.model, name="triage", tools=[ac.handoff(billing)])
    a.add_replies([tool_call("transfer_to_billing")])
    b.add_replies(["Billing here."])
    triage.prompt("hi").wait()
    assert triage.active_agent is billing
    triage.reset()
    assert triage.active_agent is triage


def test_active_agent_takes_only_an_agent(models) -> None:
    a, _ = models
    triage = ac.Agent(a.model, name="triage")
    with pytest.raises(TypeError, match="'active_agent' must be an Agent"):
        triage.active_agent = "billing"  # type: ignore[assignment]


# --- several handoffs, cycles --------------------------------------------------------------


def test_several_handoffs_in_one_reply_the_first_wins(models) -> None:
    a, b = models
    with scripted_model() as c:
        billing = ac.Agent(b.model, name="billing")
        sales = ac.Agent(c.model, name="sales")
        triage = ac.Agent(a.model, name="triage",
                          tools=[ac.handoff(billing), ac.handoff(sales)])
        a.add_replies([[tool_call("transfer_to_sales", id="s"),
                        tool_call("transfer_to_billing", id="b")]])
        c.add_replies(["Sales here."])
        run = triage.prompt("hi")
        events = list(run)
        assert run.text == "Sales here."
        assert handoffs(events) == [("triage", "sales")]
        results = {m.tool_call_id: m for m in triage.messages
                   if isinstance(m, ac.ToolResultMessage)}
        assert (results["s"].text, results["s"].is_error) == ("Transferred to sales.", False)
        assert results["b"].is_error
        assert "only the first handoff of a reply counts" in results["b"].text
        assert b.call_count == 0
        assert triage.active_agent is sales


def test_a_cycle_of_handoffs_stops_at_max_depth(models) -> None:
    a, b = models
    first = ac.Agent(a.model, name="first")
    second = ac.Agent(b.model, name="second")
    first.tools = [ac.handoff(second, max_depth=3)]
    second.tools = [ac.handoff(first, max_depth=3)]
    # first -> second -> first -> second, then second's fourth handoff is refused
    a.add_replies([tool_call("transfer_to_second"), tool_call("transfer_to_second")])
    b.add_replies([tool_call("transfer_to_first"), tool_call("transfer_to_first", id="deep"),
                   "Second answers."])
    run = first.prompt("go")
    events = list(run)
    assert handoffs(events) == [("first", "second"), ("second", "first"), ("first", "second")]
    refused = next(m for m in first.messages
                   if isinstance(m, ac.ToolResultMessage) and m.tool_call_id == "deep")
    assert refused.is_error
    assert "max_depth 3" in refused.text
    assert "stays with second" in refused.text
    assert run.text == "Second answers."  # the run went on with the current agent
    assert first.active_agent is second
    # the count is per run: a new run may hand off again
    b.add_replies([tool_call("transfer_to_first")])
    a.add_replies(["First again."])
    assert first.prompt("once more").text == "First again."
    assert first.active_agent is first


def test_a_target_the_run_cannot_use_is_an_error_result(models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing")  # has no `lookup`, the run's tool_choice
    triage = ac.Agent(a.model, name="triage", tools=[lookup, ac.handoff(billing)],
                      tool_choice="lookup")
    a.add_replies([tool_call("transfer_to_billing", id="h"), "Triage answers."])
    run = triage.prompt("hi")
    events = list(run)
    assert handoffs(events) == []
    result = triage.messages[2]
    assert isinstance(result, ac.ToolResultMessage)
    assert result.is_error
    assert result.text.startswith("Handoff to billing failed: ")
    assert triage.active_agent is triage


def test_a_blocked_handoff_call_does_not_hand_off(models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing")

    def block(context, signal):
        return ac.BeforeToolCallResult(block=True, reason="not now")

    triage = ac.Agent(a.model, name="triage", tools=[ac.handoff(billing)],
                      before_tool_call=block)
    a.add_replies([tool_call("transfer_to_billing"), "Still triage."])
    run = triage.prompt("hi")
    assert handoffs(list(run)) == []
    assert run.text == "Still triage."
    assert triage.active_agent is triage


def test_an_output_type_run_keeps_final_result_after_the_handoff(models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing", tools=[refund])
    triage = ac.Agent(a.model, name="triage", tools=[ac.handoff(billing)])
    a.add_replies([tool_call("transfer_to_billing")])
    b.add_replies([tool_call("final_result", {"response": 7})])
    run = triage.prompt("a number", output_type=int)
    run.raise_for_error()
    assert run.output == 7
    assert b.last_call.tool_names == ["refund", "final_result"]


# --- without an Agent, serialisation -------------------------------------------------------


def test_run_agent_loop_hands_off_from_its_agent_name(models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing", system_prompt="You do billing.")
    a.add_replies([tool_call("transfer_to_billing")])
    b.add_replies(["Billing here."])
    events: list[ac.AgentEvent] = []
    context = ac.AgentContext("You triage.", [], [ac.handoff(billing)])
    messages = ac.run_agent_loop([ac.UserMessage("hi")], context,
                                 ac.AgentLoopConfig(model=a.model), events.append)
    assert handoffs(events) == [("agent", "billing")]
    assert isinstance(messages[-1], ac.AssistantMessage)
    assert messages[-1].text == "Billing here."
    assert context.system_prompt == "You triage."  # the caller's context is not mutated
    a.add_replies([tool_call("transfer_to_billing")])
    b.add_replies(["Billing again."])
    events.clear()
    ac.run_agent_loop([ac.UserMessage("hi")], context,
                      ac.AgentLoopConfig(model=a.model, agent_name="triage"), events.append)
    assert handoffs(events) == [("triage", "billing")]


def test_the_event_and_the_result_serialise(models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing")
    triage = ac.Agent(a.model, name="triage", tools=[ac.handoff(billing)])
    a.add_replies([tool_call("transfer_to_billing")])
    b.add_replies(["Billing here."])
    run = triage.prompt("hi")
    event = next(e for e in run if isinstance(e, ac.HandoffEvent))
    assert ac.to_dict(event) == {"type": "handoff", "fromAgent": "triage", "toAgent": "billing"}
    assert ac.from_json(ac.AgentEvent, ac.to_json(event)) == event
    # the result's details name the target, and nothing of the agent itself
    assert ac.to_dict(triage.messages[2])["details"] == {"agent": "billing"}
    restored = ac.from_json(list[ac.AgentMessage], ac.to_json(triage.messages))
    assert [m.role for m in restored] == ["user", "assistant", "toolResult", "assistant"]


# --- over HTTP -----------------------------------------------------------------------------


def test_a_handoff_over_http_sends_the_next_request_to_the_targets_model() -> None:
    first, second = SSEServer(), SSEServer()
    try:
        def model_at(server: SSEServer, name: str) -> ac.Model:
            return ac.Model(name, name, "openai-completions", "openai", f"{server.url}/v1")

        billing = ac.Agent(model_at(second, "billing-model"), name="billing",
                           system_prompt="You do billing.", tools=[refund], api_key="k")
        triage = ac.Agent(model_at(first, "triage-model"), name="triage",
                          system_prompt="You triage.", tools=[ac.handoff(billing)],
                          api_key="k", max_retries=0)
        first.sse(completions_reply(calls=[("call_1", "transfer_to_billing", {})]))
        second.sse(completions_reply(text="Billing here."))
        run = triage.prompt("refund please")
        events = list(run)
        run.raise_for_error()
        assert run.text == "Billing here."
        assert handoffs(events) == [("triage", "billing")]
        assert len(first.requests) == 1
        assert len(second.requests) == 1
        body = second.requests[0].json
        assert body["model"] == "billing-model"
        assert body["messages"][0] == {"role": "system", "content": "You do billing."}
        assert [t["function"]["name"] for t in body["tools"]] == ["refund"]
        assert body["messages"][-1]["role"] == "tool"
        assert body["messages"][-1]["content"] == "Transferred to billing."
        assert [t["function"]["name"] for t in first.requests[0].json["tools"]] == [
            "transfer_to_billing"]
    finally:
        first.close()
        second.close()
    assert not first.errors
    assert not second.errors


@ac.tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


def test_a_call_of_the_targets_tool_waits_for_approval_and_resumes_as_the_target(
        models) -> None:
    a, b = models
    billing = ac.Agent(b.model, name="billing", tools=[pay])
    triage = ac.Agent(a.model, name="triage", tools=[ac.handoff(billing)])
    a.add_replies([tool_call("transfer_to_billing")])
    b.add_replies([tool_call("pay", {"amount": 3}, id="p1"), "Paid."])
    run = triage.prompt("pay 3")
    run.wait()
    assert [c.id for c in run.pending_approvals] == ["p1"]
    assert [c.id for c in triage.state.pending_approvals] == ["p1"]
    resumed = triage.continue_(approvals={"p1": True})
    assert resumed.text == "Paid."
    assert b.sent_tool_results()[-1].text == "paid 3"
