"""Client-side tools and `context` over AG-UI (API §28), over real HTTP.

A client offers tools of its own in `RunAgentInput.tools` (as CopilotKit sends its frontend
actions): the model sees them beside the agent's tools; a call of one ends the run with its
`TOOL_CALL_*` events and no result, the run's other calls running as usual; the client's next
request brings the result as a tool message and the run goes on, the model seeing it. A new
prompt instead of the result answers the call with an error result. `context` reaches the
model as a note after the system prompt, for that run only. Each test serves the app with
uvicorn on a thread (port 0); the faux model records every request it gets. The last test runs
the round trip with the official `@ag-ui/client` in node.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ag_ui")
pytest.importorskip("uvicorn")

import ag_ui.core as ag
import attrs
import pydantic
import requests
from approval_tools import Ran, make_tool
from served import Served as AppServer

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.sessions import SqliteSession
from agentcore.web import app

WAIT = 10.0
EVENT = pydantic.TypeAdapter(ag.Event)
MESSAGE = pydantic.TypeAdapter(ag.Message)
SYSTEM_PROMPT = "You help."
NO_RESULT = "no result: the client's next request did not answer this tool call"
NOTICE = {"name": "showNotice", "description": "Show a notice to the user.",
          "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"]}}


# --- the model, the agents, the server -------------------------------------------------------


@attrs.frozen
class Seen:
    """One request the model got: its system prompt, tools and messages (copies)."""

    system_prompt: str | None
    tools: list[ac.Tool]
    messages: list[ac.Message]


class Model:
    """The faux model: `reply` answers each request in turn, and every request is kept."""

    def __init__(self, provider: FauxProvider,
                 reply: Callable[[list[ac.Message]], ac.AssistantMessage]) -> None:
        self.seen: list[Seen] = []
        self.model = provider.get_model()

        def answer(context: ac.Context, options: ac.StreamOptions, model: ac.Model,
                   ) -> ac.AssistantMessage:
            tools = [ac.Tool(t.name, t.description, t.parameters) for t in context.tools or ()]
            self.seen.append(Seen(context.system_prompt, tools, list(context.messages)))
            return reply(list(context.messages))

        provider.set_responses([answer] * 20)


def brain(messages: list[ac.Message]) -> ac.AssistantMessage:
    """After tool results, `done: <their texts>`; to `notify X`, a `showNotice` call with id
    `c1` (`notify and list X`: an `ls` call `s1` first; `notify and remove X`: an `rm` call
    `r1`, which needs approval); else `echo: <text>`."""
    last = messages[-1]
    if isinstance(last, ac.ToolResultMessage):
        done = []
        for message in reversed(messages):
            if not isinstance(message, ac.ToolResultMessage):
                break
            done.insert(0, message.text)
        return faux_assistant_message("done: " + "; ".join(done))
    text = last.text if isinstance(last, ac.UserMessage) else ""
    calls = []
    if text.startswith("notify and list "):
        calls.append(faux_tool_call("ls", {"path": text.split()[-1]}, id="s1"))
    if text.startswith("notify and remove "):
        calls.append(faux_tool_call("rm", {"path": text.split()[-1]}, id="r1"))
    if text.startswith("notify "):
        calls.append(faux_tool_call("showNotice", {"text": text.split()[-1]}, id="c1"))
    return faux_assistant_message(calls or f"echo: {text}")


class Agents:
    """A `make_agent`: each thread's agent (system prompt, tools `ls` and `rm`, which needs
    approval), kept by thread id."""

    def __init__(self, model: ac.Model, sessions: Path | None = None) -> None:
        self.model = model
        self.sessions = sessions
        self.ran = Ran()
        self.made: dict[str, ac.Agent] = {}

    def __call__(self, thread_id: str) -> ac.Agent:
        session = None if self.sessions is None else SqliteSession(self.sessions,
                                                                    session_id=thread_id)
        agent = ac.Agent(self.model, system_prompt=SYSTEM_PROMPT, session=session,
                         tools=[make_tool("ls", self.ran, text="listed"),
                                make_tool("rm", self.ran, True, text="removed")])
        self.made[thread_id] = agent
        return agent


class Served(AppServer):
    """The app of `make_agent` on uvicorn in a thread, read as AG-UI streams and histories."""

    def __init__(self, make_agent: Callable[[str], ac.Agent]) -> None:
        super().__init__(app(make_agent))

    def run(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """POST a run and read its stream, each event checked against AG-UI's models."""
        reply = self.post(body)
        assert reply.status_code == 200, reply.text
        events = []
        for line in reply.iter_lines(decode_unicode=True):
            if line.startswith("data: "):
                EVENT.validate_json(line[6:])
                events.append(json.loads(line[6:]))
        return events

    def history(self, thread_id: str) -> list[dict[str, Any]]:
        reply = self.http.get(f"{self.url}/ag-ui/threads/{thread_id}", timeout=WAIT)
        assert reply.status_code == 200, reply.text
        messages: list[dict[str, Any]] = reply.json()["messages"]
        for message in messages:
            MESSAGE.validate_python(message)
        return messages


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    provider = register_faux_provider()
    yield provider
    provider.unregister()


@pytest.fixture
def model(faux: FauxProvider) -> Model:
    return Model(faux, brain)


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[str], ac.Agent]], Served]]:
    servers: list[Served] = []

    def start(make_agent: Callable[[str], ac.Agent]) -> Served:
        servers.append(Served(make_agent))
        return servers[-1]

    yield start
    for served in servers:
        served.stop()


@pytest.fixture
def agents(model: Model) -> Agents:
    return Agents(model.model)


# --- inputs and what came back ---------------------------------------------------------------


def body(thread_id: str, *messages: dict[str, Any], run_id: str = "r1",
         **fields: Any) -> dict[str, Any]:
    """A `RunAgentInput` (camelCase) with `messages`; `fields` add to it or replace."""
    data: dict[str, Any] = {"threadId": thread_id, "runId": run_id, "messages": list(messages),
                            "tools": [], "context": [], "state": None, "forwardedProps": None}
    data.update(fields)
    return data


def user(text: str, id: str = "u1") -> dict[str, Any]:
    return {"id": id, "role": "user", "content": text}


def called(*calls: tuple[str, str, dict[str, Any]], id: str = "a1") -> dict[str, Any]:
    """An assistant message with tool calls `(id, name, args)`, as a client keeps it."""
    return {"id": id, "role": "assistant", "toolCalls": [
        {"id": call_id, "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}
        for call_id, name, args in calls]}


def result(call_id: str, content: str, **fields: Any) -> dict[str, Any]:
    return {"id": f"t-{call_id}", "role": "tool", "toolCallId": call_id, "content": content,
            **fields}


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """The events' types, each run of `*_CONTENT`/`*_ARGS` deltas counted once."""
    out: list[str] = []
    for event in events:
        kind = event["type"]
        if not (out and kind == out[-1] and kind.endswith(("_CONTENT", "_ARGS"))):
            out.append(kind)
    return out


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def results(events: list[dict[str, Any]]) -> list[tuple[str, Any, bool]]:
    return [(e["toolCallId"], e["content"], e["metadata"]["agentcore"]["isError"])
            for e in events if e["type"] == "TOOL_CALL_RESULT"]


def shown(messages: list[ac.Message]) -> list[tuple[Any, ...]]:
    """What a model was shown: (role, text) of each message; a result's call id and error."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        if isinstance(m, ac.ToolResultMessage):
            out.append((m.role, m.tool_call_id, m.tool_name, m.text, m.is_error))
        elif isinstance(m, ac.AssistantMessage):
            out.append((m.role, [c.id for c in m.tool_calls] or m.text))
        else:
            out.append((m.role, m.text))
    return out


def error_of(reply: requests.Response, status: int) -> str:
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"] == "application/json"
    message: str = reply.json()["error"]
    return message


# --- a client tool's round trip --------------------------------------------------------------


def test_a_client_tool_call_ends_the_run_and_its_result_continues_it(
        serve: Callable[..., Served], model: Model, agents: Agents) -> None:
    served = serve(agents)

    first = served.run(body("t", user("notify hi"), tools=[NOTICE]))

    assert kinds(first) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                            "RUN_FINISHED"]
    assert (first[1]["toolCallId"], first[1]["toolCallName"]) == ("c1", "showNotice")
    args = "".join(e["delta"] for e in first if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"text": "hi"}
    assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}
    (seen,) = model.seen
    assert [t.name for t in seen.tools] == ["ls", "rm", "showNotice"]
    assert seen.tools[2] == ac.Tool("showNotice", NOTICE["description"], NOTICE["parameters"])
    agent = agents.made["t"]
    assert shown(agent.messages) == [("user", "notify hi"), ("assistant", ["c1"])]  # open
    assert [t.name for t in agent.tools] == ["ls", "rm"]  # the client's were for that run

    second = served.run(body("t", user("notify hi"), called(("c1", "showNotice", {"text": "hi"})),
                             result("c1", "the notice is up"), run_id="r2", tools=[NOTICE]))

    assert kinds(second) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                             "TEXT_MESSAGE_END", "RUN_FINISHED"]  # no result: the client has it
    assert texts(second) == "done: the notice is up"
    assert second[-1]["outcome"] == {"type": "success"}
    assert shown(model.seen[1].messages) == [
        ("user", "notify hi"), ("assistant", ["c1"]),
        ("toolResult", "c1", "showNotice", "the notice is up", False)]
    assert shown(agent.messages) == [*shown(model.seen[1].messages),
                                     ("assistant", "done: the notice is up")]
    history = served.history("t")
    assert history[2]["metadata"] == {"agentcore": {"isError": False}}  # the client's: untimed
    assert [{k: v for k, v in m.items() if k != "metadata"} for m in history] == [
        {"id": "m0", "role": "user", "content": "notify hi"},
        {"id": "m1", "role": "assistant", "toolCalls": [
            {"id": "c1", "type": "function",
             "function": {"name": "showNotice", "arguments": '{"text": "hi"}'}}]},
        {"id": "m2", "role": "tool", "content": "the notice is up", "toolCallId": "c1"},
        {"id": "m3", "role": "assistant", "content": "done: the notice is up"},
    ]


def test_the_servers_calls_of_the_same_reply_run_and_the_model_sees_every_result(
        serve: Callable[..., Served], model: Model, agents: Agents) -> None:
    served = serve(agents)

    first = served.run(body("t", user("notify and list docs"), tools=[NOTICE]))

    assert kinds(first) == ["RUN_STARTED",
                            "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                            "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                            "TOOL_CALL_RESULT", "RUN_FINISHED"]
    assert [e["toolCallId"] for e in first if e["type"] == "TOOL_CALL_START"] == ["s1", "c1"]
    assert results(first) == [("s1", "ls listed", False)]
    assert agents.ran.ids == ["s1"]
    assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}

    # as @ag-ui/client sends it: the server's result it was streamed, then the client's own
    second = served.run(body(
        "t", user("notify and list docs"),
        called(("s1", "ls", {"path": "docs"}), ("c1", "showNotice", {"text": "docs"})),
        result("s1", "ls listed"), result("c1", "shown"), run_id="r2", tools=[NOTICE]))

    assert results(second) == []
    assert texts(second) == "done: ls listed; shown"
    assert shown(model.seen[1].messages)[-2:] == [
        ("toolResult", "s1", "ls", "ls listed", False),
        ("toolResult", "c1", "showNotice", "shown", False)]
    assert agents.ran.ids == ["s1"]


def test_a_client_result_with_an_error_reaches_the_model_as_an_error(
        serve: Callable[..., Served], model: Model, agents: Agents) -> None:
    served = serve(agents)
    served.run(body("t", user("notify hi"), tools=[NOTICE]))

    served.run(body("t", result("c1", "", error="the user closed the page"), run_id="r2"))

    assert shown(model.seen[1].messages)[-1] == (
        "toolResult", "c1", "showNotice", "the user closed the page", True)
    assert [m["error"] for m in served.history("t") if m["role"] == "tool"] == [
        "the user closed the page"]


def test_a_new_prompt_without_the_result_answers_the_call_with_an_error(
        serve: Callable[..., Served], model: Model, agents: Agents) -> None:
    served = serve(agents)
    served.run(body("t", user("notify hi"), tools=[NOTICE]))

    second = served.run(body("t", user("never mind", id="u2"), run_id="r2", tools=[NOTICE]))

    assert kinds(second) == ["RUN_STARTED", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START",
                             "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert results(second) == [("c1", NO_RESULT, True)]
    assert texts(second) == "echo: never mind"
    assert shown(model.seen[1].messages) == [
        ("user", "notify hi"), ("assistant", ["c1"]),
        ("toolResult", "c1", "showNotice", NO_RESULT, True), ("user", "never mind")]

    third = served.run(body("t", user("and now?", id="u3"), run_id="r3"))

    assert texts(third) == "echo: and now?"
    assert results(third) == []
    assert [m.role for m in agents.made["t"].messages] == [
        "user", "assistant", "toolResult", "user", "assistant", "user", "assistant"]


def test_a_result_and_a_new_prompt_come_together(
        serve: Callable[..., Served], model: Model, agents: Agents) -> None:
    served = serve(agents)
    served.run(body("t", user("notify hi"), tools=[NOTICE]))

    # a tool message the server never saw (c0), before a new prompt, is the client's history
    events = served.run(body("t", called(("c0", "showNotice", {"text": "old"}), id="a0"),
                             result("c0", "old"), user("notify hi"),
                             called(("c1", "showNotice", {"text": "hi"})), result("c1", "shown"),
                             user("what now?", id="u2"), run_id="r2"))

    assert results(events) == []
    assert texts(events) == "echo: what now?"
    assert shown(model.seen[1].messages)[-2:] == [
        ("toolResult", "c1", "showNotice", "shown", False), ("user", "what now?")]


def test_a_client_call_beside_a_call_waiting_for_approval_waits_with_it(
        serve: Callable[..., Served], model: Model, agents: Agents) -> None:
    served = serve(agents)

    first = served.run(body("t", user("notify and remove a"), tools=[NOTICE]))

    assert first[-1]["outcome"]["type"] == "interrupt"
    assert [i["id"] for i in first[-1]["outcome"]["interrupts"]] == ["r1"]
    early = served.post(body("t", result("c1", "shown"), run_id="r2"))
    assert error_of(early, 409) == ("1 tool call(s) on thread 't' wait for approval: answer "
                                    "their interrupts with 'resume' first")

    resumed = served.run(body("t", run_id="r3", tools=[NOTICE], resume=[
        {"interruptId": "r1", "status": "resolved", "payload": {"approved": True}}]))

    assert results(resumed) == [("r1", "rm removed", False)]
    assert resumed[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}
    assert agents.ran.ids == ["r1"]

    last = served.run(body("t", result("c1", "shown"), run_id="r4"))

    assert texts(last) == "done: rm removed; shown"


def test_a_result_nothing_waits_for_is_refused_with_409(
        serve: Callable[..., Served], model: Model, agents: Agents) -> None:
    served = serve(agents)
    served.run(body("t", user("notify hi"), tools=[NOTICE]))

    unknown = served.post(body("t", result("c9", "shown"), run_id="r2"))

    assert error_of(unknown, 409) == ("messages[0].toolCallId: no tool call 'c9' on thread "
                                      "'t' waits for a client's result")
    assert shown(agents.made["t"].messages) == [("user", "notify hi"), ("assistant", ["c1"])]

    served.run(body("t", result("c1", "shown"), run_id="r3"))
    again = served.post(body("t", result("c1", "shown"), run_id="r4"))

    assert error_of(again, 409) == ("nothing to run: the tool call(s) 'c1' on thread 't' have "
                                    "their results already")
    assert len(model.seen) == 2


def test_a_client_tool_call_survives_a_history_reload_with_a_session(
        serve: Callable[..., Served], model: Model, tmp_path: Path) -> None:
    agents = Agents(model.model, tmp_path / "threads.db")
    served = serve(agents)
    served.run(body("t", user("notify hi"), tools=[NOTICE]))

    assert [m["role"] for m in served.history("t")] == ["user", "assistant"]  # still open

    served.run(body("t", result("c1", "shown"), run_id="r2"))

    assert shown(model.seen[1].messages)[-1] == ("toolResult", "c1", "showNotice", "shown",
                                                 False)
    stored = agents.made["t"].session
    assert stored is not None
    assert [m.role for m in stored.load()] == ["user", "assistant", "toolResult", "assistant"]


# --- bad tools, and context ------------------------------------------------------------------


@pytest.mark.parametrize(("tools", "error"), [
    ([{"description": "d", "parameters": {"type": "object"}}],
     "invalid RunAgentInput: tools.0.name: Field required"),
    ([{"name": "", "description": "d"}],
     "tools[0].name must be 1 to 64 letters, digits, '_' or '-', got ''"),
    ([NOTICE, {"name": "show notice", "description": "d"}],
     "tools[1].name must be 1 to 64 letters, digits, '_' or '-', got 'show notice'"),
    ([NOTICE, NOTICE], "tools[1].name: 'showNotice' is given twice"),
    ([{"name": "a", "description": "d", "parameters": {"type": "string"}}],
     'tools[0].parameters must be the JSON Schema of an object ({"type": "object", ...}), '
     'got {"type": "string"}'),
    ([{"name": "a", "description": "d", "parameters": "text"}],
     'tools[0].parameters must be the JSON Schema of an object ({"type": "object", ...}), '
     'got "text"'),
    ([{"name": "a", "description": "d",
       "parameters": {"type": "object", "properties": {"x": {"type": "nope"}}}}],
     "tools[0].parameters is not a valid JSON Schema: "),
    ([{"name": "ls", "description": "d"}],
     "tools[0].name: 'ls' is the name of one of the agent's own tools; a client tool needs a "
     "name of its own"),
])
def test_a_bad_client_tool_is_refused_with_422_naming_it(
        serve: Callable[..., Served], model: Model, agents: Agents, tools: list[Any],
        error: str) -> None:
    served = serve(agents)

    reply = served.post(body("t", user("hi"), tools=tools))

    assert error_of(reply, 422).startswith(error)
    assert model.seen == []


def test_context_reaches_the_system_prompt_of_its_run_only(
        serve: Callable[..., Served], model: Model, agents: Agents) -> None:
    served = serve(agents)
    context = [{"description": 'The user\'s "timezone"', "value": "Europe/Paris"},
               {"description": "Open tabs", "value": '["inbox", "calendar"]'}]

    served.run(body("t", user("hi"), context=context))
    served.run(body("t", user("again", id="u2"), run_id="r2"))

    assert model.seen[0].system_prompt == (
        "You help.\n\n<context>\nThe application gives this context with the current "
        "request:\n<item description=\"The user's &quot;timezone&quot;\">\nEurope/Paris\n"
        "</item>\n<item description=\"Open tabs\">\n[\"inbox\", \"calendar\"]\n</item>\n"
        "</context>")
    assert model.seen[1].system_prompt == "You help."
    agent = agents.made["t"]
    assert agent.system_prompt == "You help."
    assert shown(agent.messages) == [("user", "hi"), ("assistant", "echo: hi"),
                                     ("user", "again"), ("assistant", "echo: again")]
    assert "Europe/Paris" not in json.dumps(served.history("t"))


# --- the official client ---------------------------------------------------------------------


@pytest.mark.slow
def test_ag_ui_client_runs_a_frontend_tool_round_trip(
        serve: Callable[..., Served], model: Model, agents: Agents, js_clients: Path) -> None:
    served = serve(agents)

    node = subprocess.run(["node", "ag_ui_frontend_tool.mjs", f"{served.url}/ag-ui", "t"],
                          cwd=js_clients, capture_output=True, text=True, timeout=60,
                          check=False)

    assert node.returncode == 0, node.stderr
    assert node.stderr == ""  # the client warns there of events it finds out of protocol
    seen = json.loads(node.stdout)
    assert seen["runs"][0]["events"] == [
        "RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    assert seen["runs"][0]["pending"] == ["c1"]
    assert seen["answered"] == [{"toolCallId": "c1", "args": {"text": "hi"}}]
    assert seen["runs"][1]["events"][0] == "RUN_STARTED"
    assert seen["runs"][1]["events"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" not in seen["runs"][1]["events"]
    assert seen["runs"][1]["pending"] == []
    assert [(m["role"], m.get("toolCallId"), m.get("content")) for m in seen["messages"]] == [
        ("user", None, "notify hi"), ("assistant", None, None),
        ("tool", "c1", "shown: hi"), ("assistant", None, "done: shown: hi")]
    assert seen["messages"][1]["toolCalls"][0]["function"]["name"] == "showNotice"
    assert model.seen[0].system_prompt == (
        "You help.\n\n<context>\nThe application gives this context with the current "
        "request:\n<item description=\"Page\">\nsettings\n</item>\n</context>")
    assert shown(model.seen[1].messages)[-1] == ("toolResult", "c1", "showNotice",
                                                 "shown: hi", False)
