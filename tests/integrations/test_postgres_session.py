"""`PostgresSession` (API §27) against a real PostgreSQL server (`tests/pg_server.py`).

Each test gets a database of its own (`postgres_dsn`). The SIGKILL crash test of a running
agent is in `test_session_crash.py`, with SQLite's.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import paths
import psycopg
import pytest
from test_sessions import Note, every_kind

import agentcore as ac
from agentcore.sessions import JournalEntry, PostgresSession, Session, SessionJournal
from agentcore.testing import scripted_model, tool_call

pytestmark = pytest.mark.slow  # a server process

CHILD = paths.TESTS / "pg_lease_child.py"
SECRET = "s3cr3t-Pa55"
WAIT = 10.0


@pytest.fixture
def session(postgres_dsn: str) -> Iterator[PostgresSession]:
    with PostgresSession(postgres_dsn) as store:
        yield store


def _user(*texts: str) -> list[ac.AgentMessage]:
    return [ac.UserMessage(text, timestamp=1) for text in texts]


def _sql(dsn: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
    """`query` on a connection of its own, committed."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        cursor = connection.execute(query, args or None)
        return cursor.fetchall() if cursor.description else []


def _holders(dsn: str) -> list[int]:
    """The backend pids that hold an advisory lock in the database."""
    return [pid for (pid,) in _sql(
        dsn, "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")]


def _wait_for(condition: Any, what: str) -> None:
    """Poll a condition the server reports (`what`) until it holds (pytest-timeout ends a hang)."""
    while not condition():
        time.sleep(0.01)


# --- the Session protocol ---------------------------------------------------------------------


def test_postgres_round_trips_every_message_kind(session: PostgresSession) -> None:
    assert session.load() == []
    assert session.session_ids() == []
    assert isinstance(session, Session)
    assert isinstance(session, SessionJournal)
    messages = every_kind()
    session.append(messages[:2])
    session.append([])
    session.append(messages[2:])
    assert session.load() == messages
    assert session.session_ids() == ["default"]


def test_postgres_append_is_all_or_nothing(session: PostgresSession, postgres_dsn: str) -> None:
    session.append(_user("one"))
    _sql(postgres_dsn, "ALTER TABLE agentcore_messages ADD CONSTRAINT no_boom "
         "CHECK (message NOT LIKE '%boom%')")
    with pytest.raises(psycopg.errors.CheckViolation):
        session.append(_user("two", "boom", "three"))  # the second row fails: none is kept
    with pytest.raises(ac.SerializationError):
        session.append([*_user("four"), Note("mine")])  # type: ignore[list-item]
    assert session.load() == _user("one")


def test_postgres_replace_clear_and_separate_sessions(postgres_dsn: str) -> None:
    with PostgresSession(postgres_dsn, "a") as a, PostgresSession(postgres_dsn, "b") as b:
        a.append(_user("a1", "a2"))
        b.append(_user("b1"))
        a.replace(_user("a3"))
        assert a.load() == _user("a3")
        assert b.load() == _user("b1")
        assert a.session_ids() == b.session_ids() == ["a", "b"]
        b.clear()
        assert b.load() == []
        assert a.session_ids() == ["a"]
        with a.child("call-1") as child:
            assert child.session_id == "a/call-1"
            child.append(_user("c"))
            assert a.session_ids() == ["a", "a/call-1"]


ODD_IDS = ["it's \"quoted\"", "100%", "a/b/../c", "ünïcødé 会话 🚀", "x" * 1000, " ", "#frag?q=1"]


def test_postgres_odd_session_ids(postgres_dsn: str) -> None:
    with PostgresSession(postgres_dsn) as plain:
        plain.append(_user("plain"))
        for session_id in ODD_IDS:
            with PostgresSession(postgres_dsn, session_id) as odd, \
                    PostgresSession(postgres_dsn, session_id) as same:
                odd.append(_user(session_id))
                assert same.load() == _user(session_id)
                assert odd.identity == plain.identity[:-len("default")] + quote(session_id,
                                                                                 safe="")
                with odd.lease(), pytest.raises(ac.SessionBusyError):
                    same.lease()
        assert plain.session_ids() == sorted([*ODD_IDS, "default"])
        assert plain.load() == _user("plain")


def test_postgres_bad_arguments_name_the_parameter(postgres_dsn: str) -> None:
    with pytest.raises(TypeError, match="'dsn'"):
        PostgresSession(b"postgresql://x")  # type: ignore[arg-type]
    for bad in ("", None, 3):
        with pytest.raises(TypeError, match="'session_id'"):
            PostgresSession(postgres_dsn, bad)  # type: ignore[arg-type]
    for bad in ("a\0b", "\udc80"):
        with pytest.raises(ValueError, match="'session_id'"):
            PostgresSession(postgres_dsn, bad)
    with pytest.raises(ValueError, match="'dsn'") as caught:
        PostgresSession(f"not a dsn password={SECRET}")
    assert SECRET not in str(caught.value)
    with PostgresSession(postgres_dsn) as store:
        store.close()
        with pytest.raises(ValueError, match="closed"):
            store.load()


# --- connections, errors, secrets -----------------------------------------------------------


def _dead_port() -> int:
    import socket

    with socket.socket() as probe:  # bound, never listening: connecting is refused
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_postgres_unreachable_server_is_a_clear_error_without_the_password() -> None:
    port = _dead_port()
    for dsn in (f"postgresql://bob:{SECRET}@127.0.0.1:{port}/chats",
                f"host=127.0.0.1 port={port} dbname=chats user=bob password={SECRET}"):
        with pytest.raises(ConnectionError) as caught:
            PostgresSession(dsn, connect_timeout=2)
        text = str(caught.value)
        assert text.startswith(f"PostgresSession cannot reach postgresql://127.0.0.1:{port}/chats:")
        assert "refused" in text
        assert SECRET not in text
        assert "bob" not in text
        assert caught.value.__cause__ is None


def test_postgres_password_never_shows(postgres_server: Any, postgres_dsn: str,
                                       caplog: pytest.LogCaptureFixture) -> None:
    database = postgres_dsn.rsplit("/", 1)[1]
    dsns = [postgres_dsn.replace("postgres@", f"postgres:{SECRET}@"),
            f"host=127.0.0.1 port={postgres_server.port} dbname={database} user=postgres "
            f"password={SECRET}"]
    with caplog.at_level(logging.DEBUG):
        for dsn in dsns:
            with PostgresSession(dsn, "s") as store:
                store.append(_user("hi"))
                with store.child("x") as child:
                    shown = [repr(store), store.identity, repr(child), child.identity]
                assert store.identity == \
                    f"postgresql://127.0.0.1:{postgres_server.port}/{database}#s"
                assert all(SECRET not in text and "postgres@" not in text for text in shown)
                postgres_server.restart()  # the retry logs
                store.append(_user("again"))
                store.lease().release()
    assert SECRET not in caplog.text


def test_postgres_restart_between_appends_is_retried_once(
        postgres_server: Any, session: PostgresSession) -> None:
    session.append(_user("before"))
    postgres_server.restart()  # the pooled connection is dead now
    session.append(_user("after"))  # fails on it, then succeeds on a fresh one
    assert session.load() == _user("before", "after")


def test_postgres_server_down_after_opening_is_a_clear_error(
        postgres_server: Any, postgres_dsn: str) -> None:
    database = postgres_dsn.rsplit("/", 1)[1]
    with PostgresSession(postgres_dsn, connect_timeout=1) as store, \
            psycopg.connect(postgres_server.dsn(), autocommit=True) as admin:
        store.append(_user("kept"))
        # as good as down, for this database: its connections cut, no new one let in
        admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = %s", (database,))
        try:
            with pytest.raises(ConnectionError, match=r"cannot reach postgresql://127\.0\.0\.1"):
                store.append(_user("lost"))
        finally:
            admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')
        assert store.load() == _user("kept")


# --- the journal ------------------------------------------------------------------------------


def _result(call_id: str) -> ac.ToolResultMessage:
    return ac.ToolResultMessage(call_id, "echo", [ac.TextContent(f"did {call_id}")], timestamp=1)


def test_postgres_journal_records_and_forgets_answered_calls(session: PostgresSession) -> None:
    assert session.load_journal() == []
    session.journal_start("c1", "echo", "k1")
    session.journal_start("c2", "echo", "k2")
    session.journal_end(_result("c1"))
    session.journal_end(_result("c3"))  # an end without a start still records its result
    assert sorted(session.load_journal(), key=lambda e: e.call_id) == [
        JournalEntry("c1", "echo", "k1", _result("c1")),
        JournalEntry("c2", "echo", "k2"),
        JournalEntry("c3", "echo", "", _result("c3")),
    ]
    session.append([_result("c1")])  # answered: its row goes in the same transaction
    assert {e.call_id for e in session.load_journal()} == {"c2", "c3"}
    calls = ac.AssistantMessage([ac.ToolCall("c2", "echo", {}), ac.ToolCall("c3", "echo", {})],
                                "faux", "faux", "m", stop_reason="toolUse", timestamp=1)
    session.replace([*_user("go"), calls, _result("c3")])  # keeps the unanswered c2 only
    assert session.load_journal() == [JournalEntry("c2", "echo", "k2")]
    session.clear()
    assert session.load_journal() == []


# --- leases -----------------------------------------------------------------------------------


def test_postgres_lease_is_exclusive_and_released(postgres_dsn: str) -> None:
    with PostgresSession(postgres_dsn, "s") as one, PostgresSession(postgres_dsn, "s") as two, \
            PostgresSession(postgres_dsn, "other") as other:
        lease = one.lease()
        with pytest.raises(ac.SessionBusyError, match="session 's' of postgresql://") as caught:
            two.lease()
        assert "postgres@" not in str(caught.value)
        with pytest.raises(ac.SessionBusyError):
            one.lease()  # leases do not nest
        other.lease().release()  # another session is free
        lease.release()
        lease.release()  # twice: nothing
        two.lease().release()


def test_postgres_lease_waits_for_a_release_within_its_timeout(
        postgres_dsn: str, run_in_thread: Any) -> None:
    with PostgresSession(postgres_dsn, "s") as one, PostgresSession(postgres_dsn, "s") as two:
        first = one.lease()
        got: list[Any] = []
        run_in_thread(lambda: got.append(two.lease(timeout=60)))
        _wait_for(lambda: _sql(postgres_dsn, "SELECT count(*) FROM pg_stat_activity WHERE "
                               "wait_event_type = 'Lock' AND datname = current_database()")
                  == [(1,)], "the second lease waits on the lock")
        assert got == []
        first.release()
        _wait_for(lambda: got, "the second lease is taken")
        with pytest.raises(ac.SessionBusyError):
            one.lease()
        got[0].release()


def test_postgres_lease_of_a_terminated_connection_is_taken_over(postgres_dsn: str) -> None:
    with PostgresSession(postgres_dsn, "s") as one, PostgresSession(postgres_dsn, "s") as two:
        lease = one.lease()
        one.append(_user("held"))
        [holder] = _holders(postgres_dsn)
        assert _sql(postgres_dsn, "SELECT pg_terminate_backend(%s, 10000)", holder) == [(True,)]
        two.lease(timeout=WAIT).release()  # at once: the lock went with the connection
        with pytest.raises(ac.SessionBusyError, match="lost its lease"):
            one.append(_user("not without the lease"))
        with pytest.raises(ac.SessionBusyError, match="lost its lease"):
            one.journal_start("c1", "echo", "k")
        lease.release()  # never raises
        one.append(_user("again, without a lease"))
        assert two.load() == _user("held", "again, without a lease")


def test_postgres_lease_of_a_killed_process_is_taken_over(postgres_dsn: str) -> None:
    child = subprocess.Popen([sys.executable, str(CHILD), postgres_dsn, "s"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(paths.ROOT)})
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        with PostgresSession(postgres_dsn, "s") as session:
            with pytest.raises(ac.SessionBusyError):
                session.lease()
            child.send_signal(signal.SIGKILL)
            assert child.wait(WAIT) == -signal.SIGKILL
            session.lease(timeout=WAIT).release()
    finally:
        child.kill()
        child.wait(WAIT)
        assert child.stdin is not None
        child.stdin.close()
        child.stdout.close()  # type: ignore[union-attr]


def test_postgres_lease_tells_whether_the_transcript_changed(postgres_dsn: str) -> None:
    with PostgresSession(postgres_dsn, "s") as mine, PostgresSession(postgres_dsn, "s") as theirs:
        with mine.lease() as lease:
            assert lease.changed  # never read: unsure
        assert mine.load() == []
        with mine.lease() as lease:
            assert not lease.changed
            mine.append(_user("mine"))  # under the lease: still known
        with mine.lease() as lease:
            assert not lease.changed
        with theirs.lease():
            theirs.append(_user("theirs"))
        with mine.lease() as lease:
            assert lease.changed
            mine.load()
        with mine.lease() as lease:
            assert not lease.changed
            mine.replace(_user("new"))
            mine.clear()
            mine.append(_user("newer"))
        with mine.lease() as lease:
            assert not lease.changed
        mine.append(_user("without a lease"))  # another writer could interleave: unsure
        with mine.lease() as lease:
            assert lease.changed


def test_postgres_restart_with_a_lease_held_refuses_to_write(
        postgres_server: Any, session: PostgresSession) -> None:
    lease = session.lease()
    session.append(_user("one"))
    postgres_server.restart()
    with pytest.raises(ac.SessionBusyError, match="lost its lease"):
        session.append(_user("two"))
    lease.release()
    session.append(_user("three"))
    assert session.load() == _user("one", "three")


# --- with an Agent ----------------------------------------------------------------------------


def test_postgres_agent_stores_the_whole_transcript(postgres_dsn: str) -> None:
    def echo(value: str) -> str:
        """Echo the value."""
        return f"echoed {value}"

    with scripted_model([tool_call("echo", {"value": "x"}, id="c1"), "done"]) as fake, \
            PostgresSession(postgres_dsn, "chat") as store:
        agent = ac.Agent(fake.model, tools=[echo], session=store)
        run = agent.prompt("go")
        assert run.text == "done"
        run.raise_for_error()
        assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
        with PostgresSession(postgres_dsn, "chat") as again:
            assert again.load() == agent.messages
            assert again.load_journal() == []  # every call answered


def test_postgres_agent_repairs_a_crash_from_the_journal(postgres_dsn: str) -> None:
    calls = ac.AssistantMessage(
        [ac.ToolCall("c1", "echo", {}), ac.ToolCall("c2", "echo", {}),
         ac.ToolCall("c3", "echo", {})], "faux", "faux", "m", stop_reason="toolUse", timestamp=1)
    with PostgresSession(postgres_dsn, "chat") as crashed:  # what a killed process left
        crashed.append([*_user("go"), calls])
        crashed.journal_start("c1", "echo", "key-1")
        crashed.journal_end(_result("c1"))
        crashed.journal_start("c2", "echo", "key-2")
    with scripted_model(["carrying on"]) as fake, PostgresSession(postgres_dsn, "chat") as store:
        agent = ac.Agent(fake.model, session=store)
        texts = [m.text for m in agent.messages[2:]]  # type: ignore[union-attr]
        assert texts == [
            "did c1",
            "interrupted: the process ended while this tool call was running; it may have "
            "taken effect (idempotency key key-2)",
            "interrupted: the process ended before this tool call started; it did not run"]
        assert store.load() == agent.messages
        assert agent.continue_().text == "carrying on"
        assert store.load() == agent.messages


def test_postgres_lease_after_a_restart_takes_a_new_connection(
        postgres_server: Any, session: PostgresSession) -> None:
    session.lease().release()  # its connection is kept open for the next lease
    postgres_server.restart()  # ... and is dead now
    with session.lease() as lease:
        assert repr(lease).endswith(": held>")
        session.append(_user("after"))
    assert session.load() == _user("after")


def test_postgres_restart_mid_run_ends_the_run_in_error_and_half_writes_nothing(
        postgres_server: Any, postgres_dsn: str) -> None:
    entered, gate = threading.Event(), threading.Event()

    def pay(amount: int) -> str:
        """Pay the amount."""
        entered.set()
        assert gate.wait(30)
        return f"paid {amount}"

    with scripted_model([tool_call("pay", {"amount": 5}, id="c1"), "done", "again"]) as fake, \
            PostgresSession(postgres_dsn, "chat") as store:
        agent = ac.Agent(fake.model, tools=[pay], session=store)
        run = agent.prompt("go")
        assert entered.wait(30)
        postgres_server.restart()  # the run's lease went with its connection
        gate.set()
        run.wait(30)
        assert run.error is not None
        assert "lost its lease" in run.error
        with PostgresSession(postgres_dsn, "chat") as again:
            assert [m.role for m in again.load()] == ["user", "assistant"]  # nothing after
        agent.close()
        # a new agent takes the lease (the old one was released) and repairs the call
        with PostgresSession(postgres_dsn, "chat") as store2:
            fresh = ac.Agent(fake.model, tools=[pay], session=store2)
            assert fresh.messages[2].text.startswith(  # type: ignore[union-attr]
                "interrupted: the process ended while this tool call was running")
            fresh.close()


@pytest.mark.parametrize("missing", ["psycopg", "psycopg_pool"])
def test_postgres_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch,
                                             missing: str) -> None:
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(ImportError, match=r"pip install 'agentcore\[postgres\]'"):
        PostgresSession("postgresql://127.0.0.1/x")


def test_postgres_importing_agentcore_does_not_import_psycopg() -> None:
    probe = ("import sys, agentcore, agentcore.sessions; "
             "print(sorted(m for m in sys.modules if m.startswith('psycopg')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True, env={**os.environ, "PYTHONPATH": str(paths.ROOT)})
    assert out.stdout.split() == ["[]"]
