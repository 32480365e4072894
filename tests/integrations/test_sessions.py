"""Sessions (API §13): the stores, the `Session` protocol and `Agent(session=...)`.

The SIGKILL crash tests are in `test_session_crash.py`.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import paths
import pytest

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from agentcore.sessions import JsonlSession, Session, SqliteSession

WAIT = 5.0
CHILD = paths.TESTS / "session_child.py"
INTERRUPTED = "interrupted: the process ended before this tool call finished"
SCHEMA = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def every_kind() -> list[ac.AgentMessage]:
    """One message of each kind, with the fields a round trip could lose."""
    return [
        ac.UserMessage([ac.TextContent("look"), ac.ImageContent("aGVsbG8=", "image/png")]),
        ac.AssistantMessage(
            [ac.ThinkingContent("hmm"), ac.TextContent("line one\nline two \u2028 é"),
             ac.ToolCall("c1", "echo", {"value": "x", "nested": [1, 2.5, None]})],
            "faux", "faux", "faux-1", usage=ac.Usage(1, 2, 3, 4, 10),
            stop_reason="toolUse", response_id="r1"),
        ac.ToolResultMessage("c1", "echo", [ac.TextContent("echoed")],
                             details={"rows": [1, 2]}, is_error=False),
        ac.BashExecutionMessage("ls", "a\nb", 0),
        ac.CompactionSummaryMessage("earlier: a plan", 1234),
        ac.BranchSummaryMessage("a branch", "m7"),
        ac.UserMessage("plain text"),
    ]


@pytest.fixture(params=["sqlite", "jsonl"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteSession | JsonlSession]:
    if request.param == "sqlite":
        with SqliteSession(tmp_path / "chat.db") as sqlite_session:
            yield sqlite_session
    else:
        with JsonlSession(tmp_path / "chat.jsonl") as jsonl_session:
            yield jsonl_session


def test_sessions_store_starts_empty(store: SqliteSession | JsonlSession) -> None:
    assert store.load() == []
    assert store.session_ids() == []
    assert isinstance(store, Session)


def test_sessions_store_round_trips_every_message_kind(
        store: SqliteSession | JsonlSession) -> None:
    messages = every_kind()
    store.append(messages[:2])
    store.append([])
    store.append(messages[2:])
    assert store.load() == messages
    assert store.session_ids() == ["default" if isinstance(store, SqliteSession) else "chat"]


def test_sessions_store_replace_and_clear(store: SqliteSession | JsonlSession) -> None:
    store.append(every_kind())
    store.replace([ac.UserMessage("only me")])
    assert store.load() == [ac.UserMessage("only me", timestamp=store.load()[0].timestamp)]
    store.append([ac.UserMessage("and me")])
    assert [m.text for m in store.load()] == ["only me", "and me"]  # type: ignore[union-attr]
    store.clear()
    assert store.load() == []
    assert store.session_ids() == []
    store.append([ac.UserMessage("again")])
    assert [m.text for m in store.load()] == ["again"]  # type: ignore[union-attr]


def test_sessions_store_is_thread_safe(store: SqliteSession | JsonlSession) -> None:
    start = threading.Barrier(5, timeout=WAIT)
    loaded: list[int] = []

    def write(name: str) -> None:
        start.wait()
        for i in range(40):
            store.append([ac.UserMessage(f"{name}-{i}")])

    def read() -> None:
        start.wait()
        for _ in range(20):
            loaded.append(len(store.load()))

    threads = [threading.Thread(target=write, args=(name,)) for name in "abcd"]
    threads.append(threading.Thread(target=read))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    texts = [m.text for m in store.load()]  # type: ignore[union-attr]
    assert sorted(texts) == sorted(f"{n}-{i}" for n in "abcd" for i in range(40))
    for name in "abcd":  # each writer's messages in its order
        assert [t for t in texts if t.startswith(name)] == [f"{name}-{i}" for i in range(40)]
    assert loaded == sorted(loaded)
    assert len(loaded) == 20


@attrs.frozen
class Note:
    """An application's own message kind."""

    role: ClassVar[str] = "note"
    text: str


def test_sessions_store_refuses_a_message_it_could_not_load(
        store: SqliteSession | JsonlSession) -> None:
    store.append([ac.UserMessage("kept", timestamp=1)])
    with pytest.raises(ac.SerializationError, match=r"cannot store a Note \(role 'note'\)"):
        store.append([ac.UserMessage("not kept"), Note("mine")])  # type: ignore[list-item]
    with pytest.raises(ac.SerializationError, match="cannot store a Note"):
        store.replace([Note("mine")])  # type: ignore[list-item]
    assert store.load() == [ac.UserMessage("kept", timestamp=1)]


def test_sessions_sqlite_keeps_sessions_apart(tmp_path: Path) -> None:
    path = tmp_path / "many.db"
    with SqliteSession(path, "zeta") as zeta, SqliteSession(path, session_id="alpha") as alpha:
        zeta.append([ac.UserMessage("z")])
        alpha.append([ac.UserMessage("a1"), ac.UserMessage("a2")])
        assert zeta.session_ids() == alpha.session_ids() == ["alpha", "zeta"]
        assert [m.text for m in alpha.load()] == ["a1", "a2"]  # type: ignore[union-attr]
        zeta.clear()
        assert alpha.session_ids() == ["alpha"]
        assert len(alpha.load()) == 2
        assert repr(alpha) == f"SqliteSession({str(path)!r}, session_id='alpha')"


@pytest.mark.parametrize(("durable", "synchronous"), [(False, 1), (True, 2)])
def test_sessions_sqlite_is_wal_with_the_chosen_synchronous(
        tmp_path: Path, durable: bool, synchronous: int) -> None:
    with SqliteSession(tmp_path / "s.db", durable=durable) as session:
        connection = session._connection
        assert connection is not None
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert connection.execute("PRAGMA synchronous").fetchone() == (synchronous,)
        assert session.durable is durable


def test_sessions_sqlite_closed_session_raises(tmp_path: Path) -> None:
    session = SqliteSession(tmp_path / "s.db")
    session.close()
    session.close()
    with pytest.raises(ValueError, match=r"SqliteSession\(.*\) is closed"):
        session.load()


def test_sessions_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="'session_id' must be a non-empty str, got ''"):
        SqliteSession(tmp_path / "s.db", session_id="")
    with pytest.raises(TypeError, match="'durable' must be a bool, got 'yes'"):
        SqliteSession(tmp_path / "s.db", durable="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'durable' must be a bool, got 1"):
        JsonlSession(tmp_path / "s.jsonl", durable=1)  # type: ignore[arg-type]


def test_sessions_jsonl_writes_one_json_line_per_message(tmp_path: Path) -> None:
    path = tmp_path / "talk.jsonl"
    with JsonlSession(path) as session:
        session.append(every_kind())
        assert session.session_id == "talk"
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert [json.loads(line)["role"] for line in lines[:-1]] == [
        "user", "assistant", "toolResult", "bashExecution", "compactionSummary",
        "branchSummary", "user"]


def test_sessions_jsonl_damaged_tail_loads_the_whole_messages_and_says_so(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "chat.jsonl"
    messages = every_kind()
    with JsonlSession(path) as session:
        session.append(messages[:3])
    whole = path.read_bytes()
    half = (ac.to_json(messages[3]) + "\n").encode()[:25]
    path.write_bytes(whole + half)  # a process killed in the middle of its write

    with caplog.at_level(logging.WARNING, logger="agentcore.sessions"), \
            JsonlSession(path) as session:
        assert session.load() == messages[:3]
        [record] = caplog.records
        assert record.name == "agentcore.sessions"
        assert record.levelno == logging.WARNING
        assert "last line (25 bytes) is damaged" in record.getMessage()
        assert "loaded the 3 messages before it" in record.getMessage()
        caplog.clear()

        session.append(messages[3:5])  # cuts the half line off first
        [record] = caplog.records
        assert "cutting off a damaged last line (25 bytes)" in record.getMessage()
        caplog.clear()
        assert session.load() == messages[:5]
        assert caplog.records == []
    assert path.read_bytes() == whole + "".join(
        ac.to_json(m) + "\n" for m in messages[3:5]).encode()


@pytest.mark.parametrize("tail", [b"\x00\x00\x00\x00", b'{"role": "user", "cont', b"\xff\xfe{"])
def test_sessions_jsonl_any_damaged_tail_never_raises(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_bytes((ac.to_json(ac.UserMessage("hi", timestamp=1)) + "\n").encode() + tail)
    session = JsonlSession(path)
    assert session.load() == [ac.UserMessage("hi", timestamp=1)]
    session.append([ac.UserMessage("there", timestamp=2)])
    session.close()
    assert session.load() == [ac.UserMessage("hi", timestamp=1),
                              ac.UserMessage("there", timestamp=2)]


def test_sessions_jsonl_whole_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(ac.to_json(ac.UserMessage("by hand", timestamp=1)))
    with JsonlSession(path) as session:
        assert session.load() == [ac.UserMessage("by hand", timestamp=1)]
        session.append([ac.UserMessage("next", timestamp=2)])
        assert len(session.load()) == 2


def test_sessions_jsonl_bad_line_before_the_last_raises(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    good = ac.to_json(ac.UserMessage("ok"))
    path.write_text(f"{good}\nnot json\n{good}\n")
    with pytest.raises(ac.SerializationError, match=r"chat.jsonl: line 2: invalid JSON"):
        JsonlSession(path).load()


def test_sessions_jsonl_replace_renames_a_whole_new_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    with JsonlSession(path, durable=True) as session:
        session.append([ac.UserMessage("old")])
        os.chmod(path, 0o640)
        before = path.stat().st_ino
        session.replace([ac.UserMessage("new")])
        assert path.stat().st_ino != before  # a new file, renamed over the old one
        assert path.stat().st_mode & 0o777 == 0o640
        session.append([ac.UserMessage("newer")])  # into the new file, not the old one
        assert [m.text for m in session.load()] == ["new", "newer"]  # type: ignore[union-attr]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.jsonl"]


def test_sessions_jsonl_durable_fsyncs_each_append(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with JsonlSession(tmp_path / "a.jsonl") as fast:
        fast.append([ac.UserMessage("x")])
        assert synced == []
    with JsonlSession(tmp_path / "b.jsonl", durable=True) as durable:
        durable.append([ac.UserMessage("x"), ac.UserMessage("y")])
        durable.append([ac.UserMessage("z")])
    assert len(synced) == 3  # the new file's directory, then one per append


@pytest.mark.slow
def test_sessions_importing_agentcore_does_not_import_sqlite3() -> None:
    probe = ("import sys, agentcore, agentcore.sessions; "
             "print('sqlite3' in sys.modules, '_sqlite3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]


@attrs.define
class MemorySession:
    """A user's own store: a list, and a log of the calls the agent made."""

    messages: list[ac.AgentMessage] = attrs.field(factory=list)
    calls: list[tuple[str, int]] = attrs.field(factory=list)
    fail_appends: int = 0
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def load(self) -> list[ac.AgentMessage]:
        with self.lock:
            self.calls.append(("load", len(self.messages)))
            return list(self.messages)

    def append(self, messages: Sequence[ac.AgentMessage]) -> None:
        with self.lock:
            self.calls.append(("append", len(messages)))
            if self.fail_appends:
                self.fail_appends -= 1
                raise OSError("disk full")
            self.messages.extend(messages)

    def replace(self, messages: Sequence[ac.AgentMessage]) -> None:
        with self.lock:
            self.calls.append(("replace", len(messages)))
            self.messages = list(messages)

    def clear(self) -> None:
        with self.lock:
            self.calls.append(("clear", 0))
            self.messages = []

    def session_ids(self) -> list[str]:
        return ["memory"]


def _tool() -> ac.AgentTool:
    def echo(tool_call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any) -> Any:
        return ac.AgentToolResult([ac.TextContent(f"echoed: {args['value']}")])

    return ac.AgentTool("echo", "Echo.", SCHEMA, echo)


def _tool_reply(*ids: str) -> ac.AssistantMessage:
    return faux_assistant_message([faux_tool_call("echo", {"value": i}, id=i) for i in ids])


def test_sessions_agent_stores_each_message_before_listeners_see_it(
        faux: FauxProvider, store: SqliteSession | JsonlSession) -> None:
    faux.set_responses([_tool_reply("c1", "c2"), faux_assistant_message("done")])
    agent = ac.Agent(faux.get_model(), tools=[_tool()], session=store)
    stored_when_heard: list[bool] = []

    def listener(event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.MessageEndEvent):
            stored_when_heard.append(store.load()[-1] == event.message)

    agent.subscribe(listener)
    assert agent.prompt("go").text == "done"
    assert stored_when_heard == [True] * 5
    assert store.load() == agent.messages

    again = ac.Agent(faux.get_model(), tools=[_tool()], session=store)
    assert again.messages == agent.messages
    seen: list[int] = []
    faux.set_responses([lambda context, options, model: (
        seen.append(len(context.messages)), faux_assistant_message("more"))[1]])
    assert again.prompt("and?").text == "more"
    assert seen == [6]  # the model got the loaded transcript and the new prompt
    assert len(store.load()) == 7


def test_sessions_agent_takes_messages_or_session_not_both(faux: FauxProvider) -> None:
    with pytest.raises(ValueError, match="give 'messages' or 'session', not both"):
        ac.Agent(faux.get_model(), messages=[ac.UserMessage("hi")], session=MemorySession())
    with pytest.raises(TypeError, match=r"'session' must be a Session \(load, append, replace"):
        ac.Agent(faux.get_model(), session="chat.db")  # type: ignore[arg-type]
    agent = ac.Agent(faux.get_model(), session=MemorySession())
    with pytest.raises(attrs.exceptions.FrozenAttributeError):
        agent.session = MemorySession()  # type: ignore[misc]


def test_sessions_agent_reset_clears_and_assignment_replaces(faux: FauxProvider) -> None:
    memory = MemorySession([ac.UserMessage("a"), faux_assistant_message("b")])
    agent = ac.Agent(faux.get_model(), session=memory)
    agent.messages = [ac.UserMessage("x")]
    assert memory.messages == [ac.UserMessage("x", timestamp=memory.messages[0].timestamp)]
    agent.reset()
    assert memory.messages == []
    assert agent.messages == []
    assert memory.calls == [("load", 2), ("replace", 1), ("clear", 0)]


def test_sessions_agent_failed_append_is_logged_and_the_run_goes_on(
        faux: FauxProvider, caplog: pytest.LogCaptureFixture) -> None:
    memory = MemorySession(fail_appends=1)
    faux.set_responses([_tool_reply("c1"), faux_assistant_message("done")])
    agent = ac.Agent(faux.get_model(), tools=[_tool()], session=memory)
    with caplog.at_level(logging.ERROR, logger="agentcore.sessions"):
        run = agent.prompt("go")
        assert run.text == "done"
    [record] = [r for r in caplog.records if r.name == "agentcore.sessions"]
    assert record.levelno == logging.ERROR
    assert record.getMessage().startswith("MemorySession(")
    assert "could not save a 'user' message" in record.getMessage()
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "disk full"
    assert len(agent.messages) == 4  # the message that failed to save is still there
    # The next message rewrote the session whole, then appends went on.
    assert memory.calls[1:] == [("append", 1), ("replace", 2), ("append", 1), ("append", 1)]
    assert memory.messages == agent.messages


def test_sessions_agent_answers_interrupted_tool_calls_on_load(
        faux: FauxProvider, caplog: pytest.LogCaptureFixture) -> None:
    calls = _tool_reply("c1", "c2", "c3")
    done = ac.ToolResultMessage("c2", "echo", [ac.TextContent("echoed: c2")])
    memory = MemorySession([ac.UserMessage("go"), calls, done])
    with caplog.at_level(logging.WARNING, logger="agentcore.sessions"):
        agent = ac.Agent(faux.get_model(), tools=[_tool()], session=memory)
    added = agent.messages[3:]
    assert added == [
        ac.ToolResultMessage(i, "echo", [ac.TextContent(INTERRUPTED)], is_error=True,
                             timestamp=m.timestamp)  # type: ignore[union-attr]
        for i, m in zip(["c1", "c3"], added, strict=True)
    ]
    assert memory.messages == agent.messages  # stored too, by one append
    assert memory.calls == [("load", 3), ("append", 2)]
    assert "2 tool call(s) of the last run never got a result" in caplog.text

    faux.set_responses([faux_assistant_message("carrying on")])
    assert agent.continue_().text == "carrying on"  # at once: nothing runs again


def test_sessions_agent_repairs_a_gap_before_the_tail_with_replace(faux: FauxProvider) -> None:
    gap = [ac.UserMessage("go"), _tool_reply("c1", "c2"),
           ac.ToolResultMessage("c1", "echo", []), ac.UserMessage("hello?"),
           faux_assistant_message("hi"),
           faux_assistant_message([faux_tool_call("echo", {}, id="e1")], stop_reason="error")]
    memory = MemorySession(list(gap))
    agent = ac.Agent(faux.get_model(), session=memory)
    assert [getattr(m, "tool_call_id", m.role) for m in agent.messages] == [
        "user", "assistant", "c1", "c2", "user", "assistant", "assistant"]
    assert memory.calls == [("load", 6), ("replace", 7)]
    assert ac.Agent(faux.get_model(), session=memory).messages == agent.messages


def test_sessions_agent_loads_a_clean_transcript_as_is(faux: FauxProvider) -> None:
    clean = [ac.UserMessage("go"), _tool_reply("c1"), ac.ToolResultMessage("c1", "echo", []),
             faux_assistant_message("done")]
    memory = MemorySession(list(clean))
    agent = ac.Agent(faux.get_model(), session=memory)
    assert agent.messages == clean
    assert memory.calls == [("load", 4)]


@pytest.mark.slow
def test_sessions_two_processes_append_to_one_sqlite_session(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    count = 150
    children = [subprocess.Popen([sys.executable, str(CHILD), "append", str(path), tag,
                                  str(count)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True) for tag in ("p", "q")]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline() == "ready\n"
        for child in children:  # both go at once
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            out, _ = child.communicate(timeout=30)
            assert out == "done\n"
            assert child.returncode == 0
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=10)
    with SqliteSession(path, "shared") as session:
        texts = [m.text for m in session.load()]  # type: ignore[union-attr]
    assert len(texts) == 2 * count
    for tag in ("p", "q"):  # each message stored once, each process's in its order
        assert [t for t in texts if t.startswith(tag)] == [f"{tag}-{i}" for i in range(count)]
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        connection.close()
