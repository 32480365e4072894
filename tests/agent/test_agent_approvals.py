"""Human approval of tool calls through the `Agent` (API §20).

`run.pending_approvals`, `agent.state.pending_approvals`, `prompt()`/`continue_()` while calls
wait, `continue_(approvals=...)` checked before any run starts, `Agent(approve=...)`, queued
messages around a paused batch, and pending approvals stored in a real session file (SQLite
and JSONL), reloaded by a new `Agent`, and repaired when a resume was cut short.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import approval_tools
import attrs
import pytest
from _internals import DEFAULT_DENIAL, INTERRUPTED_NOT_STARTED_TEXT
from approval_tools import Ran

import agentcore as ac
from agentcore.sessions import JsonlSession, SqliteSession
from agentcore.testing import ScriptedModel, record_events, scripted_model, tool_call

WAIT = 5.0


def make_tool(name: str, ran: Ran, requires_approval: Any = False) -> ac.AgentTool:
    return approval_tools.make_tool(name, ran, requires_approval, text="ok")


@pytest.fixture
def ran() -> Ran:
    return Ran()


@pytest.fixture
def fake() -> Iterator[ScriptedModel]:
    with scripted_model() as model:
        yield model


@pytest.fixture
def tools(ran: Ran) -> list[ac.AgentTool]:
    return [make_tool("rm", ran, True), make_tool("ls", ran)]


CALLS = [tool_call("rm", {"p": 1}, id="c1"), tool_call("ls", id="c2"),
         tool_call("rm", {"p": 2}, id="c3")]


def roles(messages: list[ac.AgentMessage]) -> list[str]:
    return [m.role for m in messages]


def results(messages: list[ac.AgentMessage]) -> dict[str, tuple[str, bool]]:
    return {m.tool_call_id: (m.text, m.is_error) for m in messages
            if isinstance(m, ac.ToolResultMessage)}


def paused_agent(fake: ScriptedModel, tools: list[ac.AgentTool], **options: Any,
                 ) -> tuple[ac.Agent, ac.AgentRun, list[Any]]:
    """An agent whose run on "go" stopped with `CALLS` pending; what its listener saw."""
    fake.add_replies([CALLS])
    agent = ac.Agent(fake.model, tools=tools, **options)
    heard: list[Any] = []
    agent.subscribe(lambda event, signal: heard.append(event))
    run = agent.prompt("go")
    run.result()
    assert agent.wait_for_idle(WAIT)
    return agent, run, heard


# --- a run that stops for approval -------------------------------------------------------------


def test_a_paused_run_lists_its_pending_approvals(fake: ScriptedModel, ran: Ran,
                                                  tools: list[ac.AgentTool]) -> None:
    agent, run, heard = paused_agent(fake, tools)

    assert [c.id for c in run.pending_approvals] == ["c1", "c3"]
    assert run.pending_approvals == [CALLS[0], CALLS[2]]
    state = agent.state
    assert state.pending_approvals == [CALLS[0], CALLS[2]]
    assert not state.is_streaming
    assert repr(run) == f"<AgentRun waiting for 2 approval(s), {len(list(run))} events>"
    assert [(e.tool_call_id, e.tool_name, e.args) for e in heard
            if isinstance(e, ac.ToolApprovalRequestEvent)] == [("c1", "rm", {"p": 1}),
                                                                 ("c3", "rm", {"p": 2})]
    assert [e.type for e in heard][-3:] == ["tool_approval_request", "turn_end", "agent_end"]
    run.raise_for_error()  # a pause is no failure
    assert roles(agent.messages) == ["user", "assistant"]
    assert agent.messages[-1].stop_reason == ac.StopReason.TOOL_USE
    assert ran.ids == []
    assert "⏸ waiting for approval" in run._repr_markdown_()


def test_a_run_that_did_not_pause_has_no_pending_approvals(fake: ScriptedModel,
                                                           tools: list[ac.AgentTool]) -> None:
    fake.add_replies(["hello"])
    agent = ac.Agent(fake.model, tools=tools)
    run = agent.prompt("hi")
    assert run.pending_approvals == []
    assert agent.state.pending_approvals == []
    assert repr(run).startswith("<AgentRun done, ")


def test_prompt_while_calls_wait_raises_and_the_agent_stays_idle(
        fake: ScriptedModel, tools: list[ac.AgentTool]) -> None:
    agent, _, heard = paused_agent(fake, tools)
    count = len(heard)

    with pytest.raises(ValueError, match=r"cannot prompt: 2 tool call\(s\) wait for approval"):
        agent.prompt("something else")
    with pytest.raises(ValueError, match="cannot continue: 2 tool call"):
        agent.continue_()

    assert len(heard) == count
    assert not agent.state.is_streaming
    assert roles(agent.messages) == ["user", "assistant"]
    fake.assert_called(times=1)


@pytest.mark.parametrize(
    ("approvals", "error", "match"),
    [
        pytest.param("c1", TypeError, "must be a dict", id="not-a-dict"),
        pytest.param({"c1": 2, "c3": True}, TypeError, r"approvals\['c1'\]", id="bad-value"),
        pytest.param({"c1": True, "c3": True, "c9": True}, ValueError, "'c9' does not wait",
                     id="unknown"),
        pytest.param({"c1": True, "c2": True, "c3": True}, ValueError, "'c2' does not wait",
                     id="needs-none"),
        pytest.param({"c3": True}, ValueError, "missing: c1", id="missing"),
    ],
)
def test_bad_approvals_raise_before_a_run_starts(fake: ScriptedModel, ran: Ran,
                                                 tools: list[ac.AgentTool], approvals: Any,
                                                 error: type[Exception], match: str) -> None:
    agent, _, heard = paused_agent(fake, tools)
    count = len(heard)

    with pytest.raises(error, match=match):
        agent.continue_(approvals=approvals)

    assert len(heard) == count  # no run: no event
    assert not agent.state.is_streaming
    assert agent.state.pending_approvals == [CALLS[0], CALLS[2]]
    fake.assert_called(times=1)
    assert ran.ids == []
    fake.add_replies(["ok"])  # and the agent is still usable
    assert agent.continue_(approvals={"c1": True, "c3": True}).text == "ok"


def test_approvals_with_nothing_waiting_raise(fake: ScriptedModel,
                                              tools: list[ac.AgentTool]) -> None:
    fake.add_replies(["hello"])
    agent = ac.Agent(fake.model, tools=tools)
    agent.prompt("hi").result()
    with pytest.raises(ValueError, match="no tool call waits for approval"):
        agent.continue_(approvals={"c1": True})
    fake.assert_called(times=1)


# --- resuming ----------------------------------------------------------------------------------


def test_continue_with_approvals_runs_the_batch_and_goes_on(fake: ScriptedModel, ran: Ran,
                                                            tools: list[ac.AgentTool]) -> None:
    agent, _, heard = paused_agent(fake, tools)
    fake.add_replies(["all done"])
    start = len(heard)

    run = agent.continue_(approvals={"c1": True, "c3": "not that one"})
    events = record_events(run, timeout=WAIT)

    assert run.text == "all done"
    assert run.pending_approvals == []
    assert repr(run).startswith("<AgentRun done, ")
    assert agent.state.pending_approvals == []
    assert roles(agent.messages) == ["user", "assistant", "toolApproval", "toolResult",
                                     "toolResult", "toolResult", "assistant"]
    assert agent.messages[2] == ac.ToolApprovalMessage(["c1"], {"c3": "not that one"},
                                                       agent.messages[2].timestamp)
    assert results(agent.messages) == {"c1": ("rm ok", False), "c2": ("ls ok", False),
                                       "c3": ("denied: not that one", True)}
    assert sorted(ran.ids) == ["c1", "c2"]
    assert [e.type for e in heard[start:]] == events.types
    assert not events.of(ac.ToolApprovalRequestEvent)


def test_continue_asks_the_agents_approve(fake: ScriptedModel, ran: Ran,
                                          tools: list[ac.AgentTool]) -> None:
    agent, _, _ = paused_agent(fake, tools)
    asked: list[tuple[str, str]] = []

    def approve(call: ac.ToolCall, tool: ac.AgentTool) -> bool:
        asked.append((call.id, threading.current_thread().name))
        return call.id == "c3"

    agent.approve = approve
    fake.add_replies(["done"])
    run = agent.continue_()

    assert run.text == "done"
    assert [a for a, _ in asked] == ["c1", "c3"]
    assert all(name != threading.current_thread().name for _, name in asked)
    assert results(run.result()) == {"c1": (f"denied: {DEFAULT_DENIAL}", True),
                                     "c2": ("ls ok", False), "c3": ("rm ok", False)}
    assert sorted(ran.ids) == ["c2", "c3"]


def test_an_agent_with_approve_never_pauses(fake: ScriptedModel, ran: Ran,
                                            tools: list[ac.AgentTool]) -> None:
    asked: list[str] = []
    fake.add_replies([CALLS, "done"])
    agent = ac.Agent(fake.model, tools=tools,
                     approve=lambda call, tool: asked.append(call.id) or "no")
    run = agent.prompt("go")
    events = record_events(run, timeout=WAIT)

    assert run.text == "done"
    assert run.pending_approvals == []
    assert asked == ["c1", "c3"]
    assert [e.tool_call_id for e in events.of(ac.ToolApprovalRequestEvent)] == ["c1", "c3"]
    assert ran.ids == ["c2"]
    assert roles(run.result())[:3] == ["user", "assistant", "toolApproval"]


def test_a_bad_approve_option_raises() -> None:
    with scripted_model() as fake, pytest.raises(TypeError, match="approve"):
        ac.Agent(fake.model, approve=lambda call: True)


def test_messages_queued_while_paused_come_after_the_results(
        fake: ScriptedModel, tools: list[ac.AgentTool]) -> None:
    agent, _, _ = paused_agent(fake, tools)
    agent.steer("hurry up")
    agent.follow_up("and then?")
    fake.add_replies(["steered", "followed"])

    run = agent.continue_(approvals={"c1": True, "c3": True})

    assert [(m.role, getattr(m, "text", None)) for m in run.result()] == [
        ("toolApproval", None), ("toolResult", "rm ok"), ("toolResult", "ls ok"),
        ("toolResult", "rm ok"), ("user", "hurry up"), ("assistant", "steered"),
        ("user", "and then?"), ("assistant", "followed")]
    sent = fake.sent_messages(1)  # the first call of the resumed run
    assert roles(sent) == ["user", "assistant", "toolResult", "toolResult", "toolResult",
                           "user"]


def test_a_later_turn_may_pause_the_agent_again(fake: ScriptedModel, ran: Ran,
                                                tools: list[ac.AgentTool]) -> None:
    agent, _, _ = paused_agent(fake, tools)
    fake.add_replies([[tool_call("rm", id="c4")], "done"])

    run = agent.continue_(approvals={"c1": True, "c3": True})

    assert [c.id for c in run.pending_approvals] == ["c4"]
    assert [c.id for c in agent.state.pending_approvals] == ["c4"]
    assert agent.continue_(approvals={"c4": True}).text == "done"
    assert sorted(ran.ids) == ["c1", "c2", "c3", "c4"]


@attrs.frozen
class Answer:
    value: int


@pytest.mark.parametrize("decide", ["approvals", "approve"])
def test_a_run_with_an_output_type_pauses_and_resumes_with_it(
        fake: ScriptedModel, ran: Ran, tools: list[ac.AgentTool], decide: str) -> None:
    fake.add_replies([[tool_call("rm", id="c1")],
                      [tool_call("final_result", {"value": 7}, id="f1")]])
    agent = ac.Agent(fake.model, tools=tools)
    run = agent.prompt("go", output_type=Answer)
    assert [c.id for c in run.pending_approvals] == ["c1"]

    if decide == "approve":
        agent.approve = lambda call, tool: True
        resumed = agent.continue_()
    else:
        resumed = agent.continue_(approvals={"c1": True})

    assert resumed.output == Answer(7)
    assert ran.ids == ["c1"]
    assert "final_result" in [t.name for t in fake.last_context.tools or []]
    fake.assert_called(times=2)


# --- sessions ----------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "jsonl"])
def session_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return tmp_path / ("chat.db" if request.param == "sqlite" else "chat.jsonl")


def open_session(path: Path) -> SqliteSession | JsonlSession:
    return SqliteSession(path) if path.suffix == ".db" else JsonlSession(path)


def test_pending_approvals_survive_in_the_session(fake: ScriptedModel, ran: Ran,
                                                  tools: list[ac.AgentTool],
                                                  session_path: Path) -> None:
    with open_session(session_path) as first:
        paused_agent(fake, tools, session=first)
    with open_session(session_path) as store:
        assert roles(store.load()) == ["user", "assistant"]  # left alone: no "interrupted"
        agent = ac.Agent(fake.model, tools=tools, session=store)
        assert agent.state.pending_approvals == [CALLS[0], CALLS[2]]
        with pytest.raises(ValueError, match="cannot prompt"):
            agent.prompt("new")
        fake.add_replies(["all done"])
        run = agent.continue_(approvals={"c1": True, "c3": False})
        assert run.text == "all done"
    with open_session(session_path) as store:
        stored = store.load()
    assert roles(stored) == ["user", "assistant", "toolApproval", "toolResult", "toolResult",
                             "toolResult", "assistant"]
    assert results(stored) == {"c1": ("rm ok", False), "c2": ("ls ok", False),
                               "c3": (f"denied: {DEFAULT_DENIAL}", True)}
    assert sorted(ran.ids) == ["c1", "c2"]


def test_a_reloaded_pause_is_decided_by_the_new_agents_approve(
        fake: ScriptedModel, ran: Ran, tools: list[ac.AgentTool], session_path: Path) -> None:
    with open_session(session_path) as first:
        paused_agent(fake, tools, session=first)
    with open_session(session_path) as store:
        agent = ac.Agent(fake.model, tools=tools, session=store,
                         approve=lambda call, tool: call.id == "c1")
        fake.add_replies(["done"])
        assert agent.continue_().text == "done"
        assert results(store.load())["c3"] == (f"denied: {DEFAULT_DENIAL}", True)
    assert sorted(ran.ids) == ["c1", "c2"]


@pytest.mark.parametrize("answered", [0, 1], ids=["no-result", "one-result"])
def test_a_decided_batch_without_its_results_is_answered_interrupted(
        fake: ScriptedModel, ran: Ran, tools: list[ac.AgentTool], session_path: Path,
        answered: int) -> None:
    """A process killed between the decision and the results: nothing runs twice.

    The session's journal holds no start of these calls: they are answered "did not run".
    """
    reply = ac.AssistantMessage(list(CALLS), fake.model.api, "faux", fake.model.id,
                                stop_reason=ac.StopReason.TOOL_USE)
    written: list[ac.AgentMessage] = [ac.UserMessage("go"), reply,
                                      ac.ToolApprovalMessage(["c1", "c3"])]
    written += [ac.ToolResultMessage("c1", "rm", [ac.TextContent("rm ok")])][:answered]
    with open_session(session_path) as store:
        store.append(written)
    with open_session(session_path) as store:
        agent = ac.Agent(fake.model, tools=tools, session=store)
        assert agent.state.pending_approvals == []
        got = results(agent.messages)
        stored = store.load()
    expected = dict.fromkeys(("c1", "c2", "c3"), (INTERRUPTED_NOT_STARTED_TEXT, True))
    if answered:
        expected["c1"] = ("rm ok", False)
    assert got == expected
    assert results(stored) == expected
    assert roles(stored)[:3] == ["user", "assistant", "toolApproval"]
    assert ran.ids == []
    fake.assert_called(times=0)
