"""Idempotency keys in tools, and the journal an `Agent` keeps in its session (API §24).

A `@tool` parameter `idempotency_key` (hidden from the model) and `tool_idempotency_key()` give
a call its key: derived from the session's identity and the call id, so the same in every
process that opens the session; without a session, random per run. With a session that keeps
a journal, each call's start is stored before the call runs and its result as soon as it ends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from _internals import idempotency_key, run_tool

import agentcore as ac
from agentcore.sessions import JournalEntry, SessionJournal, SqliteSession
from agentcore.testing import ScriptedModel, scripted_model, tool_call


@attrs.define
class Keys:
    """What the tools saw: call id -> key, for each tool."""

    by_tool: dict[str, str] = attrs.field(factory=dict)
    by_function: dict[str, str] = attrs.field(factory=dict)
    log: list[tuple[str, str]] = attrs.field(factory=list)  # (what, call id), in order
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def note(self, what: str, call_id: str) -> None:
        with self.lock:
            self.log.append((what, call_id))


@pytest.fixture
def keys() -> Keys:
    return Keys()


@pytest.fixture
def fake() -> Iterator[ScriptedModel]:
    with scripted_model() as model:
        yield model


def make_tools(keys: Keys) -> list[ac.AgentTool]:
    @ac.tool
    def pay(amount: int, tool_call_id: str, idempotency_key: str) -> str:
        """Pay an amount.

        Args:
            amount: How much.
        """
        keys.note("ran", tool_call_id)
        keys.by_tool[tool_call_id] = idempotency_key
        return f"paid {amount}"

    def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
        key = ac.tool_idempotency_key()
        assert key is not None
        keys.by_function[tool_call_id] = key
        return ac.AgentToolResult([ac.TextContent("mailed")])

    mail = ac.AgentTool("mail", "Send a mail.", {"type": "object", "properties": {}}, execute)
    return [pay, mail]


def _run(fake: ScriptedModel, agent: ac.Agent, *ids: str) -> list[ac.AgentMessage]:
    fake.add_replies([[tool_call("pay", {"amount": 5}, id=i) for i in ids], "done"])
    run = agent.prompt("go")
    run.raise_for_error()
    return run.result()


def test_a_tool_gets_its_key_and_the_model_never_sees_the_parameter(
        fake: ScriptedModel, keys: Keys, tmp_path: Path) -> None:
    pay, mail = make_tools(keys)
    assert list(pay.parameters["properties"]) == ["amount"]
    assert pay.parameters["required"] == ["amount"]
    with SqliteSession(tmp_path / "chat.db") as session:
        agent = ac.Agent(fake.model, tools=[pay, mail], session=session)
        fake.add_replies([[tool_call("pay", {"amount": 5}, id="c1"),
                           tool_call("mail", id="c2")], "done"])
        assert agent.prompt("go").text == "done"
        sent = {t.name: t.parameters for t in fake.last_context.tools or []}
        assert "idempotency_key" not in str(sent)
        assert keys.by_tool == {"c1": idempotency_key(session.identity, "c1")}
        assert keys.by_function == {"c2": idempotency_key(session.identity, "c2")}
    assert ac.tool_idempotency_key() is None  # outside a tool call


def test_keys_are_stable_across_agents_over_one_sqlite_file(
        fake: ScriptedModel, keys: Keys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = make_tools(keys)
    with SqliteSession(tmp_path / "chat.db") as session:
        _run(fake, ac.Agent(fake.model, tools=tools, session=session), "c1", "c2")
    first = dict(keys.by_tool)
    assert first["c1"] != first["c2"]
    assert session.identity == f"sqlite:{tmp_path.resolve() / 'chat.db'}#default"
    # Another agent, another session object, the path given another way: the same keys.
    monkeypatch.chdir(tmp_path)
    keys.by_tool.clear()
    with SqliteSession("chat.db") as again:
        _run(fake, ac.Agent(fake.model, tools=tools, session=again), "c1")
    assert keys.by_tool == {"c1": first["c1"]}
    # Another session of the file, another file: other keys for the same call id.
    for other in (SqliteSession("chat.db", "bob"), SqliteSession("other.db")):
        keys.by_tool.clear()
        with other:
            _run(fake, ac.Agent(fake.model, tools=tools, session=other), "c1")
        assert keys.by_tool["c1"] != first["c1"]


def test_without_a_session_each_run_draws_its_own_scope(fake: ScriptedModel,
                                                         keys: Keys) -> None:
    agent = ac.Agent(fake.model, tools=make_tools(keys))
    _run(fake, agent, "c1", "c2")
    first = dict(keys.by_tool)
    _run(fake, agent, "c1")
    assert len({first["c1"], first["c2"], keys.by_tool["c1"]}) == 3
    # A scope of one's own (what an Agent sets from its session) gives the derived key.
    fake.add_replies([[tool_call("pay", {"amount": 5}, id="c1")], "done"])
    ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext(tools=make_tools(keys)),
                      ac.AgentLoopConfig(model=fake.model, idempotency_scope="mine"),
                      lambda event: None)
    assert keys.by_tool["c1"] == idempotency_key("mine", "c1")


def test_the_key_outside_a_run_and_on_another_processs_worker(keys: Keys) -> None:
    pay, mail = make_tools(keys)
    signal = ac.AbortController().signal
    pay.execute("c7", {"amount": 1}, signal, lambda partial: None)  # called by hand
    assert keys.by_tool == {"c7": idempotency_key("", "c7")}
    # The work item a process executor runs sets the key on its worker, then restores it.
    result = run_tool("mail", mail.execute, "c8", {}, None, "a-scope")
    assert result == ac.AgentToolResult([ac.TextContent("mailed")])
    assert keys.by_function == {"c8": idempotency_key("a-scope", "c8")}
    assert ac.tool_idempotency_key() is None


@attrs.define
class JournalSession:
    """A user's store with a journal, recording every call in `keys.log`."""

    keys: Keys
    messages: list[ac.AgentMessage] = attrs.field(factory=list)
    ended: list[ac.ToolResultMessage] = attrs.field(factory=list)
    fail: bool = False

    def load(self) -> list[ac.AgentMessage]:
        return list(self.messages)

    def append(self, messages: Sequence[ac.AgentMessage]) -> None:
        for message in messages:
            self.keys.note("stored", getattr(message, "tool_call_id", message.role))
        self.messages.extend(messages)

    def replace(self, messages: Sequence[ac.AgentMessage]) -> None:
        self.messages = list(messages)

    def clear(self) -> None:
        self.messages = []

    def session_ids(self) -> list[str]:
        return ["journal"]

    def journal_start(self, call_id: str, tool_name: str, key: str) -> None:
        if self.fail:
            raise OSError("disk full")
        self.keys.note("journal start", call_id)
        self.keys.by_function[call_id] = key

    def journal_end(self, result: ac.ToolResultMessage) -> None:
        self.keys.note("journal end", result.tool_call_id)
        self.ended.append(result)

    def load_journal(self) -> list[JournalEntry]:
        if self.fail:
            raise OSError("unreadable")
        return []


def test_the_journal_has_a_call_before_it_runs_and_its_result_when_it_ends(
        fake: ScriptedModel, keys: Keys) -> None:
    session = JournalSession(keys)
    assert isinstance(session, SessionJournal)
    agent = ac.Agent(fake.model, tools=make_tools(keys), session=session)

    def heard(event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.ToolExecutionEndEvent):
            keys.note("heard end", event.tool_call_id)

    agent.subscribe(heard)
    messages = _run(fake, agent, "c1", "c2")  # a parallel batch
    log = [entry for entry in keys.log if entry[1] in ("c1", "c2")]
    for call_id in ("c1", "c2"):
        mine = [what for what, i in log if i == call_id]
        assert mine == ["journal start", "ran", "journal end", "heard end", "stored"]
    # Both starts are stored before either call runs; both results before either is stored.
    kinds = [what for what, _ in log]
    assert kinds[:2] == ["journal start", "journal start"]
    assert kinds.index("stored") > max(i for i, k in enumerate(kinds) if k == "journal end")
    assert keys.by_function == keys.by_tool  # the key journaled is the tool's
    # The journal's result is the transcript's, but for the moment it was made.
    results = [m for m in messages if isinstance(m, ac.ToolResultMessage)]
    ended = sorted(session.ended, key=lambda m: m.tool_call_id)  # in the order calls ended
    assert [attrs.evolve(m, timestamp=0) for m in ended] == [
        attrs.evolve(m, timestamp=0) for m in results]


def test_a_journal_that_fails_is_logged_and_the_run_goes_on(
        fake: ScriptedModel, keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    session = JournalSession(keys, fail=True)
    agent = ac.Agent(fake.model, tools=make_tools(keys), session=session)
    with caplog.at_level(logging.ERROR, logger="agentcore.sessions"):
        messages = _run(fake, agent, "c1")
    assert messages[-1].text == "done"  # type: ignore[union-attr]
    [record] = [r for r in caplog.records if r.name == "agentcore.sessions"]
    assert record.levelno == logging.ERROR
    assert "could not journal the start of tool call 'c1'" in record.getMessage()
    assert [m.role for m in session.messages] == ["user", "assistant", "toolResult",
                                                  "assistant"]


def test_a_journal_that_cannot_be_read_leaves_the_old_text(
        fake: ScriptedModel, keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    reply = ac.AssistantMessage([tool_call("pay", {"amount": 5}, id="c1")], "faux", "faux",
                                "m", stop_reason="toolUse")
    session = JournalSession(keys, [ac.UserMessage("go"), reply], fail=True)
    with caplog.at_level(logging.ERROR, logger="agentcore.sessions"):
        agent = ac.Agent(fake.model, tools=make_tools(keys), session=session)
    assert "could not read the journal of tool calls" in caplog.text
    [answer] = agent.messages[2:]
    assert (answer.text, answer.is_error) == (  # type: ignore[union-attr]
        "interrupted: the process ended before this tool call finished", True)
