"""Human approval of tool calls in the loop (API §20).

`requires_approval` rules, runs that stop with calls pending, resuming them with `approvals=`
(`run_agent_loop_continue`, `agent_loop_continue`), the `approve` callback, and how approval
meets usage limits, cut-short replies and structured output. Every run uses the scripted
model; the tools record what they ran.
"""

from __future__ import annotations

import logging
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import pytest
from _internals import DEFAULT_DENIAL, find_pause, needs_approval
from approval_tools import Ran, make_tool

import agentcore as ac
from agentcore.providers.faux import faux_assistant_message
from agentcore.testing import ScriptedModel, scripted_model, tool_call

WAIT = 5.0

# --- tools -------------------------------------------------------------------------------------


@pytest.fixture
def ran() -> Ran:
    return Ran()


@pytest.fixture
def fake() -> Iterator[ScriptedModel]:
    with scripted_model() as model:
        yield model


def shape(events: list[Any]) -> list[str]:
    """The events as short strings (updates left out): what the order checks compare."""
    out = []
    for e in events:
        match e.type:
            case "message_update" | "tool_execution_update":
                continue
            case "message_start" | "message_end":
                m = e.message
                extra = f":{m.tool_call_id}" if m.role == "toolResult" else ""
                out.append(f"{e.type}:{m.role}{extra}")
            case "tool_approval_request" | "tool_execution_start" | "tool_execution_end":
                out.append(f"{e.type}:{e.tool_call_id}")
            case "turn_end":
                out.append(f"turn_end:{len(e.tool_results)}")
            case _:
                out.append(e.type)
    return out


def texts(messages: list[ac.AgentMessage]) -> dict[str, tuple[str, bool]]:
    """Each tool result's text and error flag, by call id."""
    return {m.tool_call_id: (m.text, m.is_error) for m in messages
            if isinstance(m, ac.ToolResultMessage)}


def paused(fake: ScriptedModel, tools: list[ac.AgentTool], calls: list[ac.ToolCall],
           then: list[Any] | None = None, **config: Any,
           ) -> tuple[ac.AgentContext, ac.AgentLoopConfig, list[Any]]:
    """Run the loop on "go" with a reply making `calls`; the context it paused in, and events."""
    fake.add_replies([calls, *(then or ())])
    cfg = ac.AgentLoopConfig(model=fake.model, **config)
    events: list[Any] = []
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools), cfg,
                            events.append)
    return ac.AgentContext("", out, tools), cfg, events


PAUSE_EVENTS = ["agent_start", "turn_start", "message_start:user", "message_end:user",
                "message_start:assistant", "message_end:assistant"]


# --- requires_approval -------------------------------------------------------------------------


@pytest.mark.parametrize("rule", [True, False])
def test_requires_approval_true_pauses_and_false_runs(fake: ScriptedModel, ran: Ran,
                                                      rule: bool) -> None:
    tool = make_tool("rm", ran, rule)
    context, _, events = paused(fake, [tool], [tool_call("rm", id="c1")], then=["done"])

    if rule:
        assert shape(events)[-3:] == ["tool_approval_request:c1", "turn_end:0", "agent_end"]
        assert ran.ids == []
        fake.assert_called(times=1)
    else:
        assert "tool_approval_request:c1" not in shape(events)
        assert ran.ids == ["c1"]
        assert context.messages[-1].text == "done"


def test_rule_sees_the_validated_arguments_after_prepare_arguments(fake: ScriptedModel,
                                                                   ran: Ran) -> None:
    seen: list[Any] = []

    def rule(args: Any) -> bool:
        seen.append(args)
        return bool(args["n"] > 10)

    def rename(args: Any) -> Any:  # old-style "count" becomes "n"
        return {"n": args["count"]} if "count" in args else args

    params = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = make_tool("spend", ran, rule, params, prepare_arguments=rename)
    calls = [tool_call("spend", {"count": "42"}, id="big"),
             tool_call("spend", {"n": "3"}, id="small")]
    context, _, events = paused(fake, [tool], calls)

    assert {"n": 42} in seen
    assert {"n": 3} in seen
    assert [e.tool_call_id for e in events if e.type == "tool_approval_request"] == ["big"]
    pause = find_pause(context.messages, [tool])
    assert pause is not None
    assert [c.id for c in pause.calls] == ["big"]
    assert [c.id for c in pause.waiting] == ["big", "small"]
    assert ran.ids == []  # "small" needs no approval, but waits with its batch


def test_a_rule_that_raises_makes_the_call_wait(fake: ScriptedModel, ran: Ran,
                                                caplog: pytest.LogCaptureFixture) -> None:
    def rule(args: Any) -> bool:
        raise RuntimeError("the rule broke")

    tool = make_tool("rm", ran, rule)
    with caplog.at_level(logging.WARNING):
        _, _, events = paused(fake, [tool], [tool_call("rm", id="c1")])

    assert shape(events)[-3:] == ["tool_approval_request:c1", "turn_end:0", "agent_end"]
    assert ran.ids == []
    assert "requires_approval of tool 'rm' raised" in caplog.text


@pytest.mark.parametrize("rule", [True, lambda args: True], ids=["true", "function"])
def test_a_call_with_invalid_arguments_needs_no_approval(fake: ScriptedModel, ran: Ran,
                                                         rule: Any) -> None:
    params = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = make_tool("spend", ran, rule, params)
    context, _, events = paused(fake, [tool], [tool_call("spend", {"n": "many"}, id="c1")],
                                then=["done"])

    assert "tool_approval_request:c1" not in shape(events)
    text, is_error = texts(context.messages)["c1"]
    assert is_error
    assert "spend" in text
    assert "'many'" in text
    assert ran.ids == []
    assert not any(isinstance(m, ac.ToolApprovalMessage) for m in context.messages)
    assert not needs_approval(tool, tool_call("spend", {"n": "many"}))


def test_a_call_of_an_unknown_tool_needs_no_approval(fake: ScriptedModel, ran: Ran) -> None:
    tool = make_tool("rm", ran, True)
    context, _, events = paused(fake, [tool], [tool_call("nope", id="c1")], then=["done"])

    assert "tool_approval_request:c1" not in shape(events)
    assert texts(context.messages) == {"c1": ("Tool nope not found", True)}
    assert needs_approval(None, tool_call("nope")) is False


def erase(path: str) -> str:
    """Erase a file."""
    return f"erased {path}"


def outside_tmp(args: Any) -> bool:
    return not str(args["path"]).startswith("/tmp/")


@ac.tool(requires_approval=outside_tmp)
def wipe(path: str) -> str:
    """Wipe a file."""
    return f"wiped {path}"


erase_tool = ac.tool(erase, name="erase_tool", requires_approval=True)  # pickled by _rebuild


def test_tool_decorator_takes_requires_approval() -> None:
    assert wipe.requires_approval is outside_tmp
    assert erase_tool.requires_approval is True
    assert ac.tool(erase).requires_approval is False
    assert needs_approval(wipe, tool_call("wipe", {"path": "/etc/passwd"}))
    assert not needs_approval(wipe, tool_call("wipe", {"path": "/tmp/x"}))


@pytest.mark.parametrize("value", ["yes", 1, None, 0.0, lambda: True, lambda a, b: True],
                         ids=["str", "int", "none", "float", "no-args", "two-args"])
def test_bad_requires_approval_raises_a_type_error_naming_it(value: Any) -> None:
    with pytest.raises(TypeError, match="requires_approval"):
        ac.tool(erase, requires_approval=value)
    with pytest.raises(TypeError, match="requires_approval"):
        ac.tool(requires_approval=value)(erase)
    with pytest.raises(TypeError, match="requires_approval"):
        ac.AgentTool("t", "d", {"type": "object"}, lambda *a: ac.AgentToolResult(),
                     requires_approval=value)


def test_a_function_tool_with_requires_approval_pickles() -> None:
    assert pickle.loads(pickle.dumps(wipe)) is wipe  # by reference
    again = pickle.loads(pickle.dumps(erase_tool))  # rebuilt from `erase`
    assert again is not erase_tool
    assert (again.name, again.requires_approval) == ("erase_tool", True)
    ruled = ac.tool(erase, name="ruled", requires_approval=outside_tmp)
    assert pickle.loads(pickle.dumps(ruled)).requires_approval is outside_tmp


# --- a run that stops for approval -------------------------------------------------------------


def test_without_approve_the_run_stops_before_any_call_of_the_batch(fake: ScriptedModel,
                                                                    ran: Ran) -> None:
    tools = [make_tool("rm", ran, True), make_tool("ls", ran)]
    calls = [tool_call("rm", {"p": 1}, id="c1"), tool_call("ls", id="c2"),
             tool_call("rm", {"p": 2}, id="c3")]
    context, _, events = paused(fake, tools, calls)

    assert shape(events) == [*PAUSE_EVENTS, "tool_approval_request:c1",
                             "tool_approval_request:c3", "turn_end:0", "agent_end"]
    requests = [e for e in events if e.type == "tool_approval_request"]
    assert [(r.tool_name, r.args) for r in requests] == [("rm", {"p": 1}), ("rm", {"p": 2})]
    assert ran.ids == []
    reply = context.messages[-1]
    assert isinstance(reply, ac.AssistantMessage)
    assert reply.stop_reason == ac.StopReason.TOOL_USE
    assert events[-2].message is reply
    assert events[-2].tool_results == []
    assert events[-1].messages == context.messages
    pause = find_pause(context.messages, tools)
    assert pause is not None
    assert pause.reply is reply
    assert [c.id for c in pause.calls] == ["c1", "c3"]
    assert [c.id for c in pause.waiting] == ["c1", "c2", "c3"]
    fake.assert_called(times=1)


def test_find_pause_with_asked_takes_that_verdict_instead_of_the_tools_rules() -> None:
    calls = [ac.ToolCall("c1", "rm", {}), ac.ToolCall("c2", "ls", {}), ac.ToolCall("c3", "rm", {})]
    reply = ac.AssistantMessage(list(calls), "api", "p", "m", stop_reason="toolUse")
    messages: list[ac.AgentMessage] = [ac.UserMessage("go"), reply]
    tools = [make_tool("rm", Ran(), True)]  # said otherwise: the verdict wins

    pause = find_pause(messages, tools, asked={"c3", "c1", "c9"})
    assert pause is not None
    assert (pause.reply, pause.calls, pause.waiting) == (reply, [calls[0], calls[2]], calls)
    decided = find_pause([*messages, ac.ToolApprovalMessage(["c1"], {})], [], asked={"c1", "c3"})
    assert decided is not None
    assert decided.calls == [calls[2]]
    assert find_pause(messages, tools, asked=set()) is None
    answered = ac.ToolResultMessage("c2", "ls", [ac.TextContent("ok")])
    assert find_pause([*messages, answered], [], asked={"c1"}) is None


def test_agent_loop_stops_for_approval_too(fake: ScriptedModel, ran: Ran) -> None:
    fake.add_replies([[tool_call("rm", id="c1")]])
    tools = [make_tool("rm", ran, True)]
    stream = ac.agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools),
                           ac.AgentLoopConfig(model=fake.model))
    events = list(stream)
    messages = stream.result()

    assert shape(events) == [*PAUSE_EVENTS, "tool_approval_request:c1", "turn_end:0",
                             "agent_end"]
    assert find_pause(messages, tools) is not None
    assert ran.ids == []


# --- resuming with approvals= ------------------------------------------------------------------


def four_calls(ran: Ran) -> tuple[list[ac.AgentTool], list[ac.ToolCall]]:
    tools = [make_tool("rm", ran, True), make_tool("ls", ran)]
    calls = [tool_call("rm", {"p": "a"}, id="yes"), tool_call("ls", id="free"),
             tool_call("rm", {"p": "b"}, id="no"), tool_call("rm", {"p": "c"}, id="blank"),
             tool_call("rm", {"p": "d"}, id="why")]
    return tools, calls


APPROVALS = {"yes": True, "no": False, "blank": "", "why": "not on Fridays"}
RESULTS = {
    "yes": ("rm {'p': 'a'}", False),
    "free": ("ls {}", False),
    "no": (f"denied: {DEFAULT_DENIAL}", True),
    "blank": (f"denied: {DEFAULT_DENIAL}", True),
    "why": ("denied: not on Fridays", True),
}
RESUME_HEAD = ["agent_start", "turn_start", "message_start:toolApproval",
               "message_end:toolApproval"]
RESUME_TAIL = [*(f"{k}:{c}" for c in ("yes", "free", "no", "blank", "why")
                 for k in ("message_start:toolResult", "message_end:toolResult")),
               "turn_end:5", "turn_start", "message_start:assistant", "message_end:assistant",
               "turn_end:0", "agent_end"]


def resume(how: str, context: ac.AgentContext, config: ac.AgentLoopConfig,
           approvals: Any) -> tuple[list[ac.AgentMessage], list[Any]]:
    """Resume through `run_agent_loop_continue` or `agent_loop_continue`."""
    if how == "run":
        events: list[Any] = []
        out = ac.run_agent_loop_continue(context, config, events.append, approvals=approvals)
        return out, events
    stream = ac.agent_loop_continue(context, config, approvals=approvals)
    events = list(stream)
    return stream.result(), events


@pytest.mark.parametrize("how", ["run", "stream"])
def test_resume_runs_approved_calls_and_denies_the_others(fake: ScriptedModel, ran: Ran,
                                                          how: str) -> None:
    tools, calls = four_calls(ran)
    context, config, _ = paused(fake, tools, calls)
    fake.add_replies(["all done"])
    before = list(context.messages)

    out, events = resume(how, context, config, APPROVALS)

    assert context.messages == before  # not mutated
    # parallel: each call starts in order, a denied one ends at once, then the two that ran
    executions = [f"tool_execution_{k}" for k in (
        "start:yes", "start:free", "start:no", "end:no", "start:blank", "end:blank",
        "start:why", "end:why")]
    shaped = shape(events)
    assert shaped[:12] == [*RESUME_HEAD, *executions]
    assert sorted(shaped[12:14]) == ["tool_execution_end:free", "tool_execution_end:yes"]
    assert shaped[14:] == RESUME_TAIL
    decision = out[0]
    assert decision == ac.ToolApprovalMessage(
        ["yes"], {"no": DEFAULT_DENIAL, "blank": DEFAULT_DENIAL, "why": "not on Fridays"},
        decision.timestamp)
    assert texts(out) == RESULTS
    assert [m.tool_call_id for m in out if isinstance(m, ac.ToolResultMessage)] == \
        [c.id for c in calls]  # source order
    assert sorted(ran.ids) == ["free", "yes"]
    assert out[-1].text == "all done"
    fake.assert_called(times=2)
    sent = fake.sent_messages()  # the model never sees the decisions
    assert [m.role for m in sent] == ["user", "assistant", *["toolResult"] * 5]
    assert find_pause([*context.messages, *out], tools) is None


def test_resume_runs_sequentially_one_call_after_the_other(fake: ScriptedModel, ran: Ran) -> None:
    tools, calls = four_calls(ran)
    context, config, _ = paused(fake, tools, calls, tool_execution="sequential")
    fake.add_replies(["all done"])

    out, events = resume("run", context, config, APPROVALS)

    per_call = [f"{k}:{c.id}" for c in calls
                for k in ("tool_execution_start", "tool_execution_end",
                          "message_start:toolResult", "message_end:toolResult")]
    assert shape(events) == [*RESUME_HEAD, *per_call, *RESUME_TAIL[10:]]
    assert texts(out) == RESULTS
    assert ran.ids == ["yes", "free"]


def test_hooks_see_only_the_approved_calls_after_the_decision(
        fake: ScriptedModel, ran: Ran) -> None:
    tools, calls = four_calls(ran)
    events: list[Any] = []
    before: list[tuple[str, int]] = []
    after: list[tuple[str, str, bool]] = []

    def before_tool_call(ctx: ac.BeforeToolCallContext, signal: Any) -> None:
        decided = any(isinstance(m, ac.ToolApprovalMessage) for m in ctx.context.messages)
        before.append((ctx.tool_call.id, decided))

    def after_tool_call(ctx: ac.AfterToolCallContext, signal: Any) -> None:
        after.append((ctx.tool_call.id, ctx.result.content[0].text, ctx.is_error))

    context, config, _ = paused(fake, tools, calls, before_tool_call=before_tool_call,
                                after_tool_call=after_tool_call)
    assert before == []
    assert after == []
    fake.add_replies(["all done"])
    ac.run_agent_loop_continue(context, config, events.append, approvals=APPROVALS)

    assert before == [("yes", True), ("free", True)]  # never for a denied call
    # API §8: after_tool_call runs for every executed call; a denied call never runs (as a
    # call blocked by before_tool_call, its result is final)
    assert sorted(after) == [("free", "ls {}", False), ("yes", "rm {'p': 'a'}", False)]


def test_a_later_turn_may_stop_again(fake: ScriptedModel, ran: Ran) -> None:
    tools = [make_tool("rm", ran, True)]
    context, config, _ = paused(fake, tools, [tool_call("rm", {"p": 1}, id="c1")])
    fake.add_replies([[tool_call("rm", {"p": 2}, id="c2")], "done"])

    events: list[Any] = []
    out = ac.run_agent_loop_continue(context, config, events.append, approvals={"c1": True})

    assert shape(events)[-3:] == ["tool_approval_request:c2", "turn_end:0", "agent_end"]
    assert ran.ids == ["c1"]
    context = ac.AgentContext("", [*context.messages, *out], tools)
    pause = find_pause(context.messages, tools)
    assert pause is not None
    assert [c.id for c in pause.calls] == ["c2"]
    out = ac.run_agent_loop_continue(context, config, events.append, approvals={"c2": True})
    assert ran.ids == ["c1", "c2"]
    assert out[-1].text == "done"


def test_a_batch_decided_in_parts_waits_for_the_rest(fake: ScriptedModel, ran: Ran) -> None:
    """A transcript holding a decision on one call (written by hand) still waits for the other."""
    tools = [make_tool("rm", ran, True)]
    context, config, _ = paused(fake, tools, [tool_call("rm", id="c1"), tool_call("rm", id="c2")])
    messages = [*context.messages, ac.ToolApprovalMessage(["c1"])]
    pause = find_pause(messages, tools)
    assert pause is not None
    assert [c.id for c in pause.calls] == ["c2"]
    with pytest.raises(ValueError, match="'c1' does not wait"):
        ac.run_agent_loop_continue(ac.AgentContext("", messages, tools), config, print,
                                   approvals={"c1": True, "c2": True})
    fake.add_replies(["done"])
    out = ac.run_agent_loop_continue(ac.AgentContext("", messages, tools), config,
                                     lambda e: None, approvals={"c2": "no"})
    assert texts(out) == {"c1": ("rm {}", False), "c2": ("denied: no", True)}


# --- approvals= errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("approvals", "error", "match"),
    [
        pytest.param(["c1"], TypeError, "'approvals' must be a dict", id="not-a-dict"),
        pytest.param({"c1": 1, "c2": True}, TypeError, r"'approvals\['c1'\]' must be True",
                     id="int-value"),
        pytest.param({"c1": None, "c2": True}, TypeError, r"approvals\['c1'\]", id="none-value"),
        pytest.param({1: True}, TypeError, "tool call ids are strings", id="int-key"),
        pytest.param({"c1": True, "c2": True, "zz": True}, ValueError,
                     "'zz' does not wait for approval", id="unknown-id"),
        pytest.param({"c1": True, "c2": True, "free": True}, ValueError,
                     "'free' does not wait for approval", id="needs-no-approval"),
        pytest.param({"c1": True}, ValueError, "missing: c2", id="missing"),
        pytest.param({}, ValueError, "missing: c1, c2", id="empty"),
    ],
)
@pytest.mark.parametrize("how", ["run", "stream"])
def test_bad_approvals_raise_before_the_run(fake: ScriptedModel, ran: Ran, approvals: Any,
                                            error: type[Exception], match: str,
                                            how: str) -> None:
    tools = [make_tool("rm", ran, True), make_tool("ls", ran)]
    calls = [tool_call("rm", id="c1"), tool_call("ls", id="free"), tool_call("rm", id="c2")]
    context, config, _ = paused(fake, tools, calls)
    events: list[Any] = []

    def start() -> object:
        if how == "run":
            return ac.run_agent_loop_continue(context, config, events.append,
                                              approvals=approvals)
        return ac.agent_loop_continue(context, config, approvals=approvals)

    with pytest.raises(error, match=match):
        start()

    assert events == []
    fake.assert_called(times=1)  # the first run's call only
    assert ran.ids == []


def test_approvals_for_an_already_decided_call_raise(fake: ScriptedModel, ran: Ran) -> None:
    tools = [make_tool("rm", ran, True)]
    context, config, _ = paused(fake, tools, [tool_call("rm", id="c1")])
    fake.add_replies(["done"])
    out = ac.run_agent_loop_continue(context, config, lambda e: None, approvals={"c1": True})
    done = ac.AgentContext("", [*context.messages, *out], tools)

    with pytest.raises(ValueError, match="no tool call waits for approval"):
        ac.run_agent_loop_continue(done, config, lambda e: None, approvals={"c1": True})
    # the batch's decision recorded, its results not yet written: c1 is decided
    decided = ac.AgentContext("", [*context.messages, out[0]], tools)
    assert isinstance(out[0], ac.ToolApprovalMessage)
    with pytest.raises(ValueError, match="no tool call waits for approval"):
        ac.run_agent_loop_continue(decided, config, lambda e: None, approvals={"c1": False})
    fake.assert_called(times=2)
    assert ran.ids == ["c1"]


def test_approvals_with_nothing_waiting_raise(fake: ScriptedModel, ran: Ran) -> None:
    tools = [make_tool("rm", ran, True)]
    context = ac.AgentContext("", [ac.UserMessage("hi")], tools)
    config = ac.AgentLoopConfig(model=fake.model)
    with pytest.raises(ValueError, match="no tool call waits for approval"):
        ac.run_agent_loop_continue(context, config, lambda e: None, approvals={})
    with pytest.raises(ValueError, match="no tool call waits for approval"):
        ac.agent_loop_continue(context, config, approvals={"c1": True})
    fake.assert_called(times=0)


def test_new_prompts_on_a_paused_context_raise(fake: ScriptedModel, ran: Ran) -> None:
    tools = [make_tool("rm", ran, True)]
    context, config, _ = paused(fake, tools, [tool_call("rm", id="c1")])
    with pytest.raises(ValueError, match=r"cannot prompt: 1 tool call\(s\) wait for approval: "
                                         r"rm \(c1\)"):
        ac.run_agent_loop([ac.UserMessage("again")], context, config, lambda e: None)
    with pytest.raises(ValueError, match="cannot prompt"):
        ac.agent_loop([ac.UserMessage("again")], context, config)
    fake.assert_called(times=1)


def test_continue_without_approvals_or_approve_raises(fake: ScriptedModel, ran: Ran) -> None:
    tools = [make_tool("rm", ran, True)]
    context, config, _ = paused(fake, tools, [tool_call("rm", id="c1")])
    with pytest.raises(ValueError, match=r"cannot continue: 1 tool call\(s\) wait"):
        ac.run_agent_loop_continue(context, config, lambda e: None)
    with pytest.raises(ValueError, match="cannot continue"):
        ac.agent_loop_continue(context, config)
    fake.assert_called(times=1)
    assert ran.ids == []


# --- the approve callback ----------------------------------------------------------------------


def test_approve_decides_each_call_on_a_worker_in_source_order(fake: ScriptedModel,
                                                               ran: Ran) -> None:
    tools, calls = four_calls(ran)
    asked: list[tuple[str, str, str]] = []
    active = [0]
    overlap: list[int] = []
    verdicts = {"yes": True, "no": False, "blank": "", "why": "not on Fridays"}

    def approve(call: ac.ToolCall, tool: ac.AgentTool) -> bool | str:
        active[0] += 1
        overlap.append(active[0])
        time.sleep(0.01)
        asked.append((call.id, tool.name, threading.current_thread().name))
        active[0] -= 1
        return verdicts[call.id]

    fake.add_replies([calls, "all done"])
    events: list[Any] = []
    run_thread = threading.current_thread().name
    with ThreadPoolExecutor(2, thread_name_prefix="user-tools") as pool:
        config = ac.AgentLoopConfig(model=fake.model, approve=approve, tool_executor=pool)
        out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools), config,
                                events.append)

    assert [(a, n) for a, n, _ in asked] == [("yes", "rm"), ("no", "rm"), ("blank", "rm"),
                                             ("why", "rm")]
    assert overlap == [1, 1, 1, 1]
    for _, _, thread in asked:
        assert thread != run_thread
        assert not thread.startswith("user-tools")
    requests = [f"tool_approval_request:{c}" for c in ("yes", "no", "blank", "why")]
    shaped = shape(events)
    at = shaped.index("message_end:assistant")
    assert shaped[at + 1:at + 7] == [*requests, "message_start:toolApproval",
                                     "message_end:toolApproval"]
    decision = next(m for m in out if isinstance(m, ac.ToolApprovalMessage))
    assert (decision.approved, decision.denied) == (["yes"], {
        "no": DEFAULT_DENIAL, "blank": DEFAULT_DENIAL, "why": "not on Fridays"})
    assert texts(out) == RESULTS
    assert out[-1].text == "all done"


@pytest.mark.parametrize(
    ("approve", "reason"),
    [
        pytest.param(lambda call, tool: 1 / 0, "the approval failed: division by zero",
                     id="raises"),
        pytest.param(lambda call, tool: 3, "the approval failed: approve returned 3, not True, "
                     "False or a reason (str)", id="returns-3"),
        pytest.param(lambda call, tool: None, "the approval failed: approve returned None",
                     id="returns-none"),
    ],
)
def test_approve_that_fails_denies_the_call_and_the_run_goes_on(
        fake: ScriptedModel, ran: Ran, approve: Callable[..., Any], reason: str) -> None:
    tools = [make_tool("rm", ran, True), make_tool("ls", ran)]
    fake.add_replies([[tool_call("rm", id="c1"), tool_call("ls", id="c2")], "done"])
    config = ac.AgentLoopConfig(model=fake.model, approve=approve)
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools), config,
                            lambda e: None)

    text, is_error = texts(out)["c1"]
    assert is_error
    assert text.startswith(f"denied: {reason}")
    assert ran.ids == ["c2"]
    assert out[-1].text == "done"
    decision = next(m for m in out if isinstance(m, ac.ToolApprovalMessage))
    assert decision.approved == []
    assert decision.denied["c1"].startswith(reason)


@pytest.mark.parametrize("how", ["run", "stream"])
def test_abort_while_approve_waits_ends_the_run_and_runs_nothing(
        fake: ScriptedModel, ran: Ran, how: str, abort_grace: Callable[[float], None]) -> None:
    """The run ends while `approve` is still blocked: it waits neither for the callback nor for
    the grace a tool gets after an abort (an hour here, so that waiting it would show)."""
    abort_grace(3600.0)
    tools = [make_tool("rm", ran, True), make_tool("ls", ran)]
    asking, release, answered = threading.Event(), threading.Event(), threading.Event()

    def approve(call: ac.ToolCall, tool: ac.AgentTool) -> bool:
        asking.set()
        release.wait(WAIT)
        answered.set()
        return True

    fake.add_replies([[tool_call("rm", id="c1"), tool_call("ls", id="c2")], "never"])
    controller = ac.AbortController()
    config = ac.AgentLoopConfig(model=fake.model, approve=approve)
    context = ac.AgentContext("", [], tools)
    events: list[Any] = []
    try:
        if how == "run":
            threading.Timer(0.0, lambda: asking.wait(WAIT) and controller.abort()).start()
            out = ac.run_agent_loop([ac.UserMessage("go")], context, config, events.append,
                                    controller.signal)
        else:
            stream = ac.agent_loop([ac.UserMessage("go")], context, config, controller.signal)
            assert asking.wait(WAIT)
            controller.abort()
            events = list(stream)
            out = stream.result()
        ended_before_the_answer = not answered.is_set()
    finally:
        release.set()

    assert asking.is_set()
    assert ended_before_the_answer
    assert texts(out) == {"c1": ("Operation aborted", True), "c2": ("Operation aborted", True)}
    assert not any(isinstance(m, ac.ToolApprovalMessage) for m in out)
    assert "tool_approval_request:c1" in shape(events)
    assert ran.ids == []
    fake.assert_called(times=1)


def test_continue_on_a_paused_context_asks_approve(fake: ScriptedModel, ran: Ran) -> None:
    tools = [make_tool("rm", ran, True)]
    context, config, _ = paused(fake, tools, [tool_call("rm", id="c1"), tool_call("rm", id="c2")])
    asked: list[str] = []

    def approve(call: ac.ToolCall, tool: ac.AgentTool) -> bool | str:
        asked.append(call.id)
        return call.id == "c1" or "only one"

    fake.add_replies(["done"])
    events: list[Any] = []
    out = ac.run_agent_loop_continue(context, attrs.evolve(config, approve=approve),
                                     events.append)

    assert asked == ["c1", "c2"]
    assert shape(events)[:6] == ["agent_start", "turn_start", "tool_approval_request:c1",
                                 "tool_approval_request:c2", "message_start:toolApproval",
                                 "message_end:toolApproval"]
    assert texts(out) == {"c1": ("rm {}", False), "c2": ("denied: only one", True)}
    assert ran.ids == ["c1"]


# --- calls that never run: usage limits, cut-short replies -------------------------------------


def test_a_usage_limit_refuses_calls_without_asking(fake: ScriptedModel, ran: Ran) -> None:
    tools = [make_tool("rm", ran, True)]
    asked: list[str] = []
    fake.add_replies([[tool_call("rm", id="c1"), tool_call("rm", id="c2")]])
    config = ac.AgentLoopConfig(model=fake.model, limits=ac.UsageLimits(max_tool_calls=1),
                                approve=lambda call, tool: asked.append(call.id) or True)
    events: list[Any] = []
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools), config,
                            events.append)

    assert asked == []
    assert ran.ids == []
    assert not any(e.type == "tool_approval_request" for e in events)
    assert {t for t, _ in texts(out).values()} == {"usage limit reached: max_tool_calls=1"}
    assert find_pause(out, tools) is None
    # and without approve: no pause either
    fake.add_replies([[tool_call("rm", id="c3")]])
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools),
                            attrs.evolve(config, approve=None,
                                         limits=ac.UsageLimits(max_tool_calls=0)), events.append)
    assert texts(out)["c3"][0] == "usage limit reached: max_tool_calls=0"


def test_calls_of_a_reply_cut_short_are_refused_without_asking(fake: ScriptedModel,
                                                               ran: Ran) -> None:
    tools = [make_tool("rm", ran, True)]
    cut = faux_assistant_message([tool_call("rm", id="c1")], stop_reason="length")
    fake.add_replies([cut, "done"])
    events: list[Any] = []
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools),
                            ac.AgentLoopConfig(model=fake.model), events.append)

    assert not any(e.type == "tool_approval_request" for e in events)
    text, is_error = texts(out)["c1"]
    assert is_error
    assert "output token limit" in text
    assert ran.ids == []
    assert find_pause(out[:2], tools) is None  # the cut-short reply never waits


# --- structured output -------------------------------------------------------------------------


@attrs.frozen
class Answer:
    value: int


def test_final_result_never_waits_and_an_output_run_resumes(fake: ScriptedModel,
                                                            ran: Ran) -> None:
    tools = [make_tool("rm", ran, lambda args: True)]
    config = ac.AgentLoopConfig(model=fake.model, output_type=Answer)
    fake.add_replies([[tool_call("rm", id="c1"), tool_call("final_result", {"value": 1},
                                                           id="f1")]])
    events: list[Any] = []
    out = ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], tools), config,
                            events.append)
    assert [e.tool_call_id for e in events if e.type == "tool_approval_request"] == ["c1"]
    assert ran.ids == []

    context = ac.AgentContext("", out, tools)
    out = ac.run_agent_loop_continue(context, config, events.append, approvals={"c1": True})

    assert ran.ids == ["c1"]
    assert texts(out)["c1"] == ("rm {}", False)
    assert not texts(out)["f1"][1]
    fake.assert_called(times=1)  # final_result answered: the run is done
    with pytest.raises(ValueError, match="'f1' does not wait"):
        ac.run_agent_loop_continue(ac.AgentContext("", out[:0] + context.messages, tools),
                                   config, events.append, approvals={"c1": True, "f1": True})
