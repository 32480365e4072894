"""Agents made of agents (API §25): `agent.as_tool()` and the `subagent` events of its runs.

Scripted models for the event orders, and a child on a real HTTP server (`sse_server`) for the
abort and the stream. Tests read orders and what each model was asked, never the clock.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs
import pytest
from replies import completions_reply
from sse_server import HOLD, SSEServer

import agentcore as ac
from agentcore.testing import scripted_model, tool_call


def unwrap(event: ac.AgentEvent) -> tuple[list[list[str]], ac.AgentEvent]:
    """The paths of a (nested) subagent event, outermost first, and the child's own event."""
    paths = []
    while isinstance(event, ac.SubagentEvent):
        paths.append(event.path)
        event = event.event
    return paths, event


def test_as_tool_runs_a_fresh_copy_and_streams_its_events_into_the_parent(
        ) -> None:
    with scripted_model(["Paris is the capital."]) as child_model, scripted_model(
            [tool_call("researcher", {"input": "capital of France?"}, id="c1"),
             "It is Paris."]) as parent_model:
        researcher = ac.Agent(child_model.model, name="researcher", system_prompt="Research.")
        tool = researcher.as_tool()
        assert (tool.name, tool.parameters["required"]) == ("researcher", ["input"])
        coordinator = ac.Agent(parent_model.model, name="coordinator", tools=[tool])
        heard: list[ac.AgentEvent] = []
        coordinator.subscribe(lambda event, signal: heard.append(event))
        run = coordinator.prompt("What is the capital of France?")
        assert run.text == "It is Paris."
        events = list(run)
    assert researcher.messages == []  # the original is untouched
    assert child_model.calls[0].context.system_prompt == "Research."
    assert child_model.calls[0].context.messages[-1].content == "capital of France?"
    # Between the call's start and its end, every child event in the child's order
    kinds = [e.type if not isinstance(e, ac.SubagentEvent) else f"sub:{e.event.type}"
             for e in events if unwrap(e)[1].type != "message_update"]
    start, end = kinds.index("tool_execution_start"), kinds.index("tool_execution_end")
    assert kinds[start + 1:end] == [
        "sub:agent_start", "sub:turn_start", "sub:message_start", "sub:message_end",
        "sub:message_start", "sub:message_end", "sub:turn_end", "sub:agent_end"]
    subs = [e for e in events if isinstance(e, ac.SubagentEvent)]
    assert {(e.tool_call_id, e.agent_name, tuple(e.path)) for e in subs} == {
        ("c1", "researcher", ("coordinator", "researcher"))}
    assert [e for e in heard if isinstance(e, ac.SubagentEvent)] == subs  # listeners too
    result = coordinator.messages[2]
    assert isinstance(result, ac.ToolResultMessage)
    assert result.content == [ac.TextContent("Paris is the capital.")]
    assert not result.is_error
    # run.usage counts the child's reply as well as the parent's two
    replies = [m for m in coordinator.messages if isinstance(m, ac.AssistantMessage)]
    child_reply = unwrap(next(e for e in subs if e.event.type == "message_end"
                              and e.event.message.role == "assistant"))[1]
    assert run.usage == sum((m.usage for m in replies), child_reply.message.usage)  # type: ignore
    # text_stream() is the parent's own text
    assert "Paris is the capital." not in "".join(run.text_stream())


def test_grandchildren_nest_with_their_path_from_the_outermost_agent() -> None:
    with scripted_model(["leaf answer"]) as leaf_model, scripted_model(
            [tool_call("leaf", {"input": "deep"}), "middle answer"]) as middle_model, \
            scripted_model([tool_call("middle", {"input": "go"}), "top answer"]) as top_model:
        leaf = ac.Agent(leaf_model.model, name="leaf")
        middle = ac.Agent(middle_model.model, name="middle", tools=[leaf.as_tool()])
        top = ac.Agent(top_model.model, name="top", tools=[middle.as_tool()])
        run = top.prompt("start")
        assert run.text == "top answer"
        events = list(run)
    nested = [unwrap(e) for e in events if isinstance(e, ac.SubagentEvent)]
    deep = [(paths, inner.type) for paths, inner in nested if len(paths) == 2]
    assert deep[0] == ([["top", "middle"], ["top", "middle", "leaf"]], "agent_start")
    assert deep[-1][1] == "agent_end"
    # every model call of all three agents counts in the top run's usage
    assert run.usage.output > 0
    assert run.usage.input >= sum(
        unwrap(e)[1].message.usage.input for e in events  # type: ignore[union-attr]
        if isinstance(e, ac.SubagentEvent) and unwrap(e)[1].type == "message_end"
        and unwrap(e)[1].message.role == "assistant")  # type: ignore[union-attr]


def test_two_children_in_one_reply_run_in_parallel() -> None:
    both = threading.Barrier(2, timeout=10)

    @ac.tool
    def meet() -> str:
        """Wait for the other child."""
        both.wait()  # returns only when both children's tools run at once
        return "met"

    def child_reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
        if context.messages[-1].role == "toolResult":
            return "done"
        return tool_call("meet", {})

    with scripted_model([child_reply] * 4) as child_model, scripted_model(
            [[tool_call("helper", {"input": "a"}), tool_call("helper", {"input": "b"})],
             "both done"]) as parent_model:
        helper = ac.Agent(child_model.model, name="helper", tools=[meet])
        parent = ac.Agent(parent_model.model, tools=[helper.as_tool()])
        run = parent.prompt("go")
        assert run.text == "both done"
        assert [m.text for m in parent.messages if isinstance(m, ac.ToolResultMessage)] == [
            "done", "done"]


def test_a_failing_child_is_an_error_result_and_the_parent_goes_on() -> None:
    failed = ac.AssistantMessage([], "x", "x", "x", stop_reason="error",
                                 error_message="the model is overloaded")
    with scripted_model([failed]) as child_model, scripted_model(
            [tool_call("flaky", {"input": "try"}), "I will manage."]) as parent_model:
        flaky = ac.Agent(child_model.model, name="flaky")
        parent = ac.Agent(parent_model.model, tools=[flaky.as_tool()])
        run = parent.prompt("go")
        assert run.error is None
        assert run.text == "I will manage."
    result = parent.messages[2]
    assert isinstance(result, ac.ToolResultMessage)
    assert result.is_error
    assert result.text == ("SubagentFailed: agent 'flaky' failed: the model is overloaded")


def test_output_type_makes_the_result_the_child_s_output_as_json() -> None:
    @attrs.frozen
    class City:
        name: str
        population: int

    with scripted_model([tool_call("final_result", {"name": "Paris", "population": 2})]) as \
            child_model, scripted_model([tool_call("census", {"input": "Paris"}),
                                         "ok"]) as parent_model:
        census = ac.Agent(child_model.model, name="census")
        parent = ac.Agent(parent_model.model, tools=[census.as_tool(output_type=City)])
        parent.prompt("go").raise_for_error()
    result = parent.messages[2]
    assert isinstance(result, ac.ToolResultMessage)
    assert result.text == '{"name": "Paris", "population": 2}'
    assert result.details == {"name": "Paris", "population": 2}


def test_an_agent_among_its_own_tools_stops_at_max_depth() -> None:
    with scripted_model([tool_call("echo", {"input": "again"})] * 10 + ["unreached"] * 10) \
            as model:
        echo = ac.Agent(model.model, name="echo", limits=None)
        echo.tools = [echo.as_tool(max_depth=3)]
        run = echo.prompt("go")
        run.wait()
        events = list(run)
    results = [unwrap(e)[1] for e in events if isinstance(unwrap(e)[1], ac.MessageEndEvent)
               and unwrap(e)[1].message.role == "toolResult"]  # type: ignore[union-attr]
    refused = [r.message for r in results if "max_depth" in r.message.text]  # type: ignore
    assert refused
    assert refused[0].text == (  # the fourth nested run is refused, naming the depth
        "RecursionError: agent 'echo' would run 4 deep, past max_depth=3 (an agent among "
        "its own tools?)")
    deepest = max(len(unwrap(e)[0]) for e in events if isinstance(e, ac.SubagentEvent))
    assert deepest == 3


def test_as_tool_bad_input() -> None:
    with scripted_model([]) as model:
        agent = ac.Agent(model.model, name="a")
        with pytest.raises(ValueError, match="'max_depth' must be an int of at least 1"):
            agent.as_tool(max_depth=0)
        with pytest.raises(TypeError):
            agent.as_tool(output_type=object())
        with pytest.raises(ValueError, match="'name' must be 1 to 64 letters"):
            ac.Agent(model.model, name="no spaces")


def test_aborting_the_parent_aborts_a_child_streaming_over_http(sse_server: SSEServer) -> None:
    gone = sse_server.slow_sse([b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'],
                           HOLD)
    child_model = ac.Model("child", "child", "openai-completions", "openai",
                           f"{sse_server.url}/v1")
    with scripted_model([tool_call("slow", {"input": "take your time"})]) as parent_model:
        slow = ac.Agent(child_model, name="slow")
        parent = ac.Agent(parent_model.model, tools=[slow.as_tool()])
        streaming = threading.Event()

        def listener(event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
            if isinstance(event, ac.SubagentEvent) and event.event.type == "message_update":
                streaming.set()

        parent.subscribe(listener)
        run = parent.prompt("go")
        assert streaming.wait(10)
        run.abort()
        assert run.wait(10)
        assert gone.seen.wait(10)  # the child's request was cut
    child_end = [unwrap(e)[1] for e in list(run) if isinstance(e, ac.SubagentEvent)
                 and unwrap(e)[1].type == "agent_end"]
    assert len(child_end) == 1
    assert run.error is not None


def test_a_child_over_real_http_answers_its_parent(sse_server: SSEServer) -> None:
    sse_server.sse(completions_reply(text="from the child"))
    child_model = ac.Model("child", "child", "openai-completions", "openai",
                           f"{sse_server.url}/v1")
    with scripted_model([tool_call("child", {"input": "hello"}), "relayed"]) as parent_model:
        parent = ac.Agent(parent_model.model, name="parent",
                          tools=[ac.Agent(child_model, name="child").as_tool()])
        run = parent.prompt("go")
        assert run.text == "relayed"
    assert sse_server.requests[0].json["messages"][-1]["content"] == "hello"
    assert parent.messages[2].text == "from the child"  # type: ignore[union-attr]
    deltas = [unwrap(e)[1] for e in list(run) if isinstance(e, ac.SubagentEvent)]
    assert any(d.type == "message_update" for d in deltas)  # streamed live


def test_subagent_events_round_trip() -> None:
    event = ac.SubagentEvent("c1", "child", ["parent", "child"],
                             ac.SubagentEvent("c2", "leaf", ["parent", "child", "leaf"],
                                              ac.HandoffEvent("a", "b")))
    text = ac.to_json(event)
    assert ac.from_json(ac.AgentEvent, text) == event
    assert ac.to_dict(event)["type"] == "subagent"


def test_the_parent_s_approve_decides_a_child_s_calls() -> None:
    ran: list[str] = []

    @ac.tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(f"pay {amount}")
        return "paid"

    decided: list[tuple[str, str]] = []

    def approve(call: ac.ToolCall, tool: ac.AgentTool) -> bool | str:
        decided.append((call.name, str(call.arguments)))
        return call.arguments["amount"] < 100 or "too much"

    def child_reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
        if context.messages[-1].role == "toolResult":
            return context.messages[-1].content[0].text  # type: ignore[union-attr]
        return tool_call("pay", {"amount": int(str(context.messages[-1].content))})

    with scripted_model([child_reply] * 4) as child_model, scripted_model(
            [[tool_call("cashier", {"input": "5"}), tool_call("cashier", {"input": "500"})],
             "done"]) as parent_model:
        cashier = ac.Agent(child_model.model, name="cashier", tools=[pay])
        parent = ac.Agent(parent_model.model, tools=[cashier.as_tool()], approve=approve)
        parent.prompt("go").raise_for_error()
    assert set(decided) == {("pay", "{'amount': 5}"), ("pay", "{'amount': 500}")}
    assert ran == ["pay 5"]
    results = [m.text for m in parent.messages if isinstance(m, ac.ToolResultMessage)]
    assert results == ["paid", "denied: too much"]


def test_a_child_s_call_waiting_for_approval_pauses_the_parent_until_decided() -> None:
    ran: list[int] = []

    @ac.tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(amount)
        return f"paid {amount}"

    def child_reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
        last = context.messages[-1]
        if last.role == "toolResult":
            return f"child: {last.content[0].text}"  # type: ignore[union-attr]
        return tool_call("pay", {"amount": 5}, id="pay-1")

    with scripted_model([child_reply] * 2) as child_model, scripted_model(
            [tool_call("cashier", {"input": "pay 5"}, id="c1"), "parent: done"]) as parent_model:
        cashier = ac.Agent(child_model.model, name="cashier", tools=[pay])
        parent = ac.Agent(parent_model.model, name="boss", tools=[cashier.as_tool()])
        run = parent.prompt("go")
        assert run.error is None
        assert [c.id for c in run.pending_approvals] == ["pay-1"]  # the child's call
        assert run.pending_paths == {"pay-1": ["boss", "cashier"]}
        assert [c.id for c in parent.state.pending_approvals] == ["pay-1"]
        assert [m.role for m in parent.messages] == ["user", "assistant"]  # c1 waits
        assert ran == []
        with pytest.raises(ValueError, match="a child agent's tool calls wait for approval"):
            parent.prompt("something else")
        with pytest.raises(ValueError, match=r"must decide every call.*pay-1"):
            parent.continue_(approvals={})
        resumed = parent.continue_(approvals={"pay-1": True})
        assert resumed.text == "parent: done"
        events = list(resumed)
    assert ran == [5]  # once
    assert [(m.role, m.text) for m in parent.messages[2:]] == [  # type: ignore[union-attr]
        ("toolResult", "child: paid 5"), ("assistant", "parent: done")]
    kinds = [unwrap(e)[1].type for e in events if isinstance(e, ac.SubagentEvent)]
    assert kinds[0] == "agent_start"
    assert "tool_execution_end" in kinds
    assert parent.state.pending_approvals == []


def test_a_denied_child_call_resumes_with_its_denial() -> None:
    @ac.tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        raise AssertionError("a denied call must not run")

    def child_reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
        last = context.messages[-1]
        if last.role == "toolResult":
            return f"child: {last.content[0].text}"  # type: ignore[union-attr]
        return tool_call("pay", {"amount": 500}, id="pay-2")

    with scripted_model([child_reply] * 2) as child_model, scripted_model(
            [tool_call("cashier", {"input": "pay 500"}), "ok"]) as parent_model:
        cashier = ac.Agent(child_model.model, name="cashier", tools=[pay])
        parent = ac.Agent(parent_model.model, tools=[cashier.as_tool()])
        parent.prompt("go").wait()
        parent.continue_(approvals={"pay-2": "too much"}).raise_for_error()
    assert parent.messages[2].text == "child: denied: too much"  # type: ignore[union-attr]


def test_run_batch_runs_agents_with_children_as_any_runs() -> None:
    from agentcore.batch import run_batch

    def child_reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
        return f"child saw {context.messages[-1].content}"

    def parent_reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
        last = context.messages[-1]
        if last.role == "toolResult":
            return f"parent relays: {last.content[0].text}"  # type: ignore[union-attr]
        return tool_call("child", {"input": str(last.content)})

    with scripted_model([child_reply] * 3) as child_model, \
            scripted_model([parent_reply] * 6) as parent_model:
        child = ac.Agent(child_model.model, name="child")

        def make_agent() -> ac.Agent:
            return ac.Agent(parent_model.model, name="parent", tools=[child.as_tool()])

        results = sorted(run_batch(make_agent, ["a", "b", "c"], max_concurrency=3),
                         key=lambda r: r.index)
    assert [r.text for r in results] == [f"parent relays: child saw {x}" for x in "abc"]
    for result in results:
        own = sum((m.usage for m in result.messages if isinstance(m, ac.AssistantMessage)),
                  ac.Usage())
        assert result.usage.total_tokens > own.total_tokens  # the child's call counts too


def test_pending_paths_name_the_agent_whose_calls_wait() -> None:
    @ac.tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        return "paid"

    with scripted_model([tool_call("pay", {"amount": 5}, id="p1")]) as model:
        cashier = ac.Agent(model.model, name="cashier", tools=[pay])
        run = cashier.prompt("pay 5")
        assert [c.id for c in run.pending_approvals] == ["p1"]
        assert run.pending_paths == {"p1": ["cashier"]}


def test_a_hanging_child_ends_at_the_parent_s_tool_timeout(sse_server: SSEServer) -> None:
    gone = sse_server.hang_headers(HOLD)  # the child's model never answers
    child_model = ac.Model("child", "child", "openai-completions", "openai",
                           f"{sse_server.url}/v1")
    with scripted_model([tool_call("stuck", {"input": "wait"}), "gave up"]) as parent_model:
        parent = ac.Agent(parent_model.model, tools=[ac.Agent(child_model, name="stuck")
                                                     .as_tool()], tool_timeout=0.2)
        run = parent.prompt("go")
        assert run.text == "gave up"
        assert gone.seen.wait(10)  # the child's request was cut when the call timed out
    result = parent.messages[2]
    assert isinstance(result, ac.ToolResultMessage)
    assert result.is_error
    assert result.text == "tool 'stuck' timed out after 0.2 s"


def test_a_child_s_pause_is_kept_in_the_parent_s_sqlite_session(tmp_path: Any) -> None:
    from subagent_pause_child import PAY_ID, build, models

    from agentcore.sessions import SqliteSession

    db, side = tmp_path / "chat.db", tmp_path / "pay.log"
    child, parent = models()
    with child, parent:
        with SqliteSession(db, "chat") as session:
            agent = build(child.model, parent.model, side, session)
            run = agent.prompt("go")
            assert [c.id for c in run.pending_approvals] == [PAY_ID]
            agent.close()
        with SqliteSession(db) as store:  # the child's transcript, beside the parent's
            assert store.session_ids() == ["chat", "chat/c1"]
        with SqliteSession(db, "chat") as session:  # as a new process would
            agent = build(child.model, parent.model, side, session)
            assert [m.role for m in agent.messages] == ["user", "assistant"]  # not repaired
            assert [c.id for c in agent.state.pending_approvals] == [PAY_ID]
            resumed = agent.continue_(approvals={PAY_ID: True})
            assert resumed.text == "boss: child: paid 5"
            agent.close()
        with SqliteSession(db, "chat") as session:
            assert [m.role for m in session.load()] == ["user", "assistant", "toolResult",
                                                       "assistant"]
    assert side.read_text(encoding="utf-8").split() == ["start", PAY_ID, "end", PAY_ID]
