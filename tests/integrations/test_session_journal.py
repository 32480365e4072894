"""The journal of tool calls that `SqliteSession` and `JsonlSession` keep (API §24).

Round trips of each store's journal (a start, an end, the records a result or a replace makes
obsolete), and the repair of a hand-made transcript and journal through a new `Agent`: a
call that finished keeps its real result, one that was running "may have taken effect" with
its key, one that never started "did not run". The SIGKILL test is
`test_idempotency_crash.py`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentcore as ac
from agentcore.sessions import JournalEntry, JsonlSession, SessionJournal, SqliteSession
from agentcore.testing import scripted_model

RUNNING = ("interrupted: the process ended while this tool call was running; it may have taken "
           "effect (idempotency key {key})")
NOT_STARTED = "interrupted: the process ended before this tool call started; it did not run"
OLD = "interrupted: the process ended before this tool call finished"

Store = SqliteSession | JsonlSession


def open_store(kind: str, directory: Path) -> Store:
    return SqliteSession(directory / "chat.db") if kind == "sqlite" \
        else JsonlSession(directory / "chat.jsonl")


@pytest.fixture(params=["sqlite", "jsonl"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(kind: str, tmp_path: Path) -> Iterator[Store]:
    with open_store(kind, tmp_path) as session:
        yield session


def reply(*ids: str) -> ac.AssistantMessage:
    return ac.AssistantMessage([ac.ToolCall(i, "pay", {"n": 1}) for i in ids], "faux", "faux",
                               "m", stop_reason="toolUse")


def result(call_id: str, text: str = "paid") -> ac.ToolResultMessage:
    return ac.ToolResultMessage(call_id, "pay", [ac.TextContent(f"{text} {call_id}")],
                                details={"n": 1}, timestamp=5)


def journal(store: Store) -> dict[str, tuple[str, ac.ToolResultMessage | None]]:
    """Open records (of calls the transcript does not answer): id -> (key, result)."""
    entries = store.load_journal()
    assert entries is not None
    answered = {m.tool_call_id for m in store.load() if isinstance(m, ac.ToolResultMessage)}
    return {e.call_id: (e.idempotency_key, e.result) for e in entries
            if e.call_id not in answered}


def test_a_journal_round_trip(store: Store) -> None:
    assert isinstance(store, SessionJournal)
    store.append([ac.UserMessage("go"), reply("c1", "c2", "c3")])
    assert store.load_journal() == []
    store.journal_start("c1", "pay", "k1")
    store.journal_start("c2", "pay", "k2")
    store.journal_end(result("c1"))
    assert sorted(store.load_journal() or [], key=lambda e: e.call_id) == [
        JournalEntry("c1", "pay", "k1", result("c1")), JournalEntry("c2", "pay", "k2")]
    # The transcript stays as it was: the journal is not part of it.
    assert [m.role for m in store.load()] == ["user", "assistant"]
    # A result in the transcript makes its record obsolete; the others stay.
    store.append([result("c1")])
    assert journal(store) == {"c2": ("k2", None)}
    store.journal_end(result("c2", "failed"))
    assert journal(store) == {"c2": ("k2", result("c2", "failed"))}
    # A replace keeps the records of the calls its transcript leaves unanswered; clear none.
    store.replace([ac.UserMessage("go"), reply("c1", "c2", "c3"), result("c1")])
    assert journal(store) == {"c2": ("k2", result("c2", "failed"))}
    store.replace([ac.UserMessage("again"), reply("c1"), result("c1")])
    assert journal(store) == {}
    store.journal_start("c9", "pay", "k9")
    store.clear()
    assert store.load() == []
    assert journal(store) == {}


def test_the_sqlite_journal_is_a_table_of_open_calls(tmp_path: Path) -> None:
    with SqliteSession(tmp_path / "chat.db") as alice, \
            SqliteSession(tmp_path / "chat.db", "bob") as bob:
        alice.append([reply("c1", "c2")])
        bob.append([reply("c1")])
        alice.journal_start("c1", "pay", "ka1")
        alice.journal_start("c2", "pay", "ka2")
        bob.journal_start("c1", "pay", "kb1")
        alice.append([result("c1")])  # its row goes, in the same transaction
        bob.clear()
        assert [(e.call_id, e.idempotency_key) for e in alice.load_journal() or []] == [
            ("c2", "ka2")]
        assert bob.load_journal() == []
    with sqlite3.connect(tmp_path / "chat.db") as connection:
        assert connection.execute(
            "SELECT session_id, call_id, tool_name, idempotency_key, result "
            "FROM agentcore_journal").fetchall() == [("default", "c2", "pay", "ka2", None)]
    connection.close()


def test_the_jsonl_journal_is_a_small_file_beside_the_transcript(tmp_path: Path) -> None:
    path, side = tmp_path / "chat.jsonl", tmp_path / "chat.jsonl-journal"
    with JsonlSession(path) as store:
        store.append([ac.UserMessage("go")])
        assert not side.exists()  # no tool call yet
        store.append([reply("c1", "c2")])
        assert side.read_bytes() == b""  # there before any call it records
        store.journal_start("c1", "pay", "k1")
        store.journal_start("c2", "pay", "k2")
        store.journal_end(result("c1"))
        lines = side.read_text().splitlines()
        assert lines[0] == '{"start": {"call_id": "c1", "tool_name": "pay", ' \
                           '"idempotency_key": "k1"}}'
        assert lines[2] == f'{{"end":{ac.to_json(result("c1"))}}}'
        store.append([result("c1")])
        assert len(side.read_text().splitlines()) == 3  # c2 has no result yet
        store.append([result("c2")])
        assert side.read_bytes() == b""  # every call it recorded is answered
        store.append([reply("c3")])
        store.journal_start("c3", "pay", "k3")
    # A kill in the middle of a write leaves a damaged last line: ignored, and mended.
    with side.open("ab") as file:
        file.write(b'{"end":{"role":"toolRes')
    with JsonlSession(path) as store:
        assert store.load_journal() == [JournalEntry("c3", "pay", "k3")]
        store.replace(store.load())  # c3 is still unanswered: its record stays
        assert store.load_journal() == [JournalEntry("c3", "pay", "k3")]


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_a_store_written_before_the_journal_existed_says_so(kind: str, tmp_path: Path) -> None:
    written = [ac.UserMessage("go"), reply("c1")]
    if kind == "sqlite":  # the messages table alone, as an older agentcore made it
        with SqliteSession(tmp_path / "chat.db") as store:
            store.append(written)
        with sqlite3.connect(tmp_path / "chat.db") as connection:
            connection.execute("DROP TABLE agentcore_journal")
        connection.close()
    else:
        with JsonlSession(tmp_path / "chat.jsonl") as store:
            store.append(written)
        (tmp_path / "chat.jsonl-journal").unlink()
    with open_store(kind, tmp_path) as store:
        assert store.load_journal() is None
        with scripted_model() as fake:
            agent = ac.Agent(fake.model, session=store)
        [answer] = agent.messages[2:]
        assert (answer.text, answer.is_error) == (OLD, True)  # type: ignore[union-attr]
        # From now on the store keeps its journal.
        store.append([reply("c2")])
        store.journal_start("c2", "pay", "k2")
        assert store.load_journal() == [JournalEntry("c2", "pay", "k2")]


def test_identities(tmp_path: Path) -> None:
    with SqliteSession(tmp_path / "a.db", "team/42#x") as sqlite_session:
        assert sqlite_session.identity == f"sqlite:{tmp_path.resolve()}/a.db#team%2F42%23x"
    memory = [SqliteSession(":memory:"), SqliteSession(":memory:")]
    assert memory[0].identity != memory[1].identity  # each its own database
    for session in memory:
        session.close()
    assert JsonlSession(tmp_path / "c.jsonl").identity == f"jsonl:{tmp_path.resolve()}/c.jsonl"


def test_an_agent_repairs_a_crashed_batch_from_the_journal(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    """c1 finished and was stored; c2 finished, only the journal had its result; c3 was
    running; c4 never started. A new agent answers each as it was, and stores the answers."""
    store.append([ac.UserMessage("go"), reply("c1", "c2", "c3", "c4")])
    for call_id in ("c1", "c2", "c3"):
        store.journal_start(call_id, "pay", f"key-{call_id}")
    store.journal_end(result("c1"))
    store.append([result("c1")])
    store.journal_end(result("c2"))
    with scripted_model(["carrying on"]) as fake:
        with caplog.at_level(logging.WARNING, logger="agentcore.sessions"):
            agent = ac.Agent(fake.model, session=store)
        added = agent.messages[3:]
        assert added[0] == result("c2")  # the real result, timestamp and all
        assert [(m.tool_call_id, m.text, m.is_error) for m in added[1:]] == [  # type: ignore[union-attr]
            ("c3", RUNNING.format(key="key-c3"), True), ("c4", NOT_STARTED, True)]
        assert store.load() == agent.messages  # stored as well
        assert "3 tool call(s) of the last run never got a result" in caplog.text
        assert journal(store) == {}
        assert agent.continue_().text == "carrying on"  # at once: nothing runs again
