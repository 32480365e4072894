"""`SqliteSession`: transcripts in a SQLite database, through the standard library's `sqlite3`."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote

from .._core import (
    AgentMessage,
    JournalEntry,
    ToolResultMessage,
    from_json,
    to_json,
    type_error,
    unanswered_tool_calls,
)
from ._encode import encode
from ._sqlite_lease import LEASE_SCHEMA, SqliteLease, take_lease

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SqliteSession"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentcore_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS agentcore_messages_by_session
    ON agentcore_messages (session_id, seq);
CREATE TABLE IF NOT EXISTS agentcore_journal (
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    result TEXT,
    PRIMARY KEY (session_id, call_id)
);
"""
_INSERT = "INSERT INTO agentcore_messages (session_id, role, message) VALUES (?, ?, ?)"
_SELECT = "SELECT seq, message FROM agentcore_messages WHERE session_id = ? ORDER BY seq"
_LAST = "SELECT max(seq) FROM agentcore_messages WHERE session_id = ?"
_DELETE = "DELETE FROM agentcore_messages WHERE session_id = ?"
_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'agentcore_%'"
_START = ("INSERT OR REPLACE INTO agentcore_journal "
          "(session_id, call_id, tool_name, idempotency_key, result) VALUES (?, ?, ?, ?, NULL)")
_END = (  # one transaction; no UPSERT, which SQLite before 3.24 lacks
    ("INSERT OR IGNORE INTO agentcore_journal "
     "(session_id, call_id, tool_name, idempotency_key, result) VALUES (?, ?, ?, '', NULL)"),
    "UPDATE agentcore_journal SET result = ? WHERE session_id = ? AND call_id = ?",
)
_JOURNAL = ("SELECT call_id, tool_name, idempotency_key, result FROM agentcore_journal "
            "WHERE session_id = ?")
_FORGET = "DELETE FROM agentcore_journal WHERE session_id = ? AND call_id = ?"
_FORGET_ALL = "DELETE FROM agentcore_journal WHERE session_id = ?"
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (primary codes)

T = TypeVar("T")
_UNSEEN = object()


class SqliteSession:
    """One session's transcript in a SQLite database file (WAL mode), one row per message.

    A file holds any number of sessions, told apart by `session_id` (`session_ids()` lists
    them); each message is a row of the table `agentcore_messages` holding its JSON
    (`to_json`), in order of an autoincrement sequence. Every write is one transaction, so
    killing the process at any moment leaves the transcript as it was before or after that
    write, never in between.

    Durability: by default (`durable=False`, `synchronous=NORMAL`) a message is kept once
    `append` returns if the process dies; a power loss or an OS crash may lose the last few
    commits (never the database). `durable=True` (`synchronous=FULL`) makes each commit wait
    for the disk too. Several processes may read and append to one file at once: SQLite takes
    turns (a writer waits up to `timeout` seconds for another), and each appended message is
    stored once.

    Only agentcore's own message kinds are stored: `append` and `replace` raise
    `SerializationError` for an application's own message class, which would not load again.

    Journal (`SessionJournal`; API §24): the table `agentcore_journal` holds a row per tool
    call of the session that started and whose result the transcript does not hold yet,
    keyed by (session_id, call_id): its tool name, idempotency key, and once the call has
    ended its `ToolResultMessage` as JSON (NULL while it runs). Appending a call's result
    message deletes its row in the same transaction; `replace` keeps only the rows of the
    calls its transcript leaves unanswered, `clear` deletes them all. A file written before
    the journal existed has no record of its calls: until this object writes one,
    `load_journal()` returns None for it, and its interrupted calls get the old text. Each
    journal write is a commit of its own (two per tool call, each flushed with `durable=True`).
    `identity` (`"sqlite:<absolute path>#<session_id, %-quoted>"`) is the scope of the
    session's idempotency keys: they stay the same for any object opening this file and
    session id by any path (an in-memory database's identity is random).

    Lease (`SessionLease`; API §27): `lease(timeout)` lets one holder at a time drive the
    session, across processes (see `lease`); its rows are in the table `agentcore_leases`.

    Threading: one connection, guarded by a lock; every method may be called from any
    thread. `close()` it when done (or use `with`); the `Agent` never closes a session.

    Args:
        path: The database file (created when missing), or `":memory:"`.
        session_id: Which session of the file this object reads and writes.
        durable: Also survive a power loss: an fsync per commit.
        timeout: How long a call waits for another connection that holds the database
            (SQLite's busy timeout, and retries where SQLite answers "locked" at once), in
            seconds.
        lease_ttl: How long a lease outlives its holder's last renewal, in seconds (a
            holder renews it every third of that); a holder on another machine that stops
            loses it after this long, one on this machine as soon as its process is gone.
    """

    def __init__(self, path: str | os.PathLike[str], session_id: str = "default", *,
                 durable: bool = False, timeout: float = 10.0, lease_ttl: float = 30.0) -> None:
        import sqlite3  # here, not at the top: `import agentcore` never loads sqlite3

        if not isinstance(session_id, str) or not session_id:
            raise type_error("session_id", "a non-empty str", session_id)
        if not isinstance(durable, bool):
            raise type_error("durable", "a bool", durable)
        if isinstance(lease_ttl, bool) or not isinstance(lease_ttl, (int, float)) \
                or not 0 < lease_ttl < float("inf"):
            raise type_error("lease_ttl", "a positive number of seconds", lease_ttl)
        self.path = os.fspath(path)
        """The database file."""
        self.session_id = session_id
        """The session this object reads and writes."""
        self.durable = durable
        """Whether every commit is flushed to the disk (`synchronous=FULL`)."""
        self._lock = threading.Lock()
        self._timeout = timeout
        self._journaled = True  # whether the journal tells which calls started (see load_journal)
        self._lease_ttl = float(lease_ttl)
        self._seen: object = _UNSEEN  # the session's last seq when this object last touched it
        self._holding: SqliteLease | None = None  # the last lease this object took
        connection = sqlite3.connect(self.path, timeout=timeout, isolation_level=None,
                                     check_same_thread=False)

        def set_up() -> None:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=WAL")  # kept in the file
            connection.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            tables = {name for (name,) in connection.execute(_TABLES)}
            # A file of messages written before the journal: it says nothing of their calls
            self._journaled = "agentcore_journal" in tables or not tables
            connection.executescript(_SCHEMA + LEASE_SCHEMA)

        try:
            self._retrying(set_up)
        except BaseException:
            connection.close()
            raise
        self._connection: sqlite3.Connection | None = connection
        # A database of this connection alone (":memory:", "": a temporary file) is new each time
        where = f":memory:{os.urandom(16).hex()}" if self.path in ("", ":memory:") \
            else os.path.realpath(self.path)
        self.identity = f"sqlite:{where}#{quote(session_id, safe='')}"
        """The session's identity: its file's absolute path and its id (see the class)."""

    def __repr__(self) -> str:
        return f"SqliteSession({self.path!r}, session_id={self.session_id!r})"

    def child(self, name: str) -> SqliteSession:
        """The session `<session_id>/<name>` of the same file, with this one's settings.

        Where a child agent run by this session's agent keeps its transcript (`name` is the
        parent's tool call id; API §25), so that a child paused for approval survives the
        process. Close it when done.
        """
        return SqliteSession(self.path, f"{self.session_id}/{name}", durable=self.durable,
                             timeout=self._timeout, lease_ttl=self._lease_ttl)

    def load(self) -> list[AgentMessage]:
        """The session's transcript, oldest message first (empty for a new session)."""
        with self._lock:
            connection = self._open()
            rows = self._retrying(
                lambda: connection.execute(_SELECT, (self.session_id,)).fetchall())
            self._seen = rows[-1][0] if rows else None
        return [from_json(AgentMessage, text) for _, text in rows]

    def append(self, messages: Sequence[AgentMessage]) -> None:
        """Add `messages` at the end, in one transaction: all of them are kept, or none.

        The journal rows of the calls whose results are among them go in the same transaction.
        """
        rows = [(self.session_id, role, text) for role, text in encode(messages)]
        answered = [(self.session_id, m.tool_call_id) for m in messages
                    if isinstance(m, ToolResultMessage)]
        if rows:
            self._write(None, rows, answered)

    def replace(self, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the session's transcript, in one transaction.

        The journal keeps only the rows of the calls `messages` leaves without a result.
        """
        self._write(_DELETE, [(self.session_id, role, text) for role, text in encode(messages)],
                    {call.id for call in unanswered_tool_calls(messages)})

    def clear(self) -> None:
        """Delete the session's messages and journal (other sessions in the file stay)."""
        self._write(_DELETE, [], set())

    def journal_start(self, call_id: str, tool_name: str, idempotency_key: str) -> None:
        """Record that the call is about to run: a journal row without a result (see the class)."""
        self._journal([(_START, (self.session_id, call_id, tool_name, idempotency_key))])

    def journal_end(self, result: ToolResultMessage) -> None:
        """Record the ended call's result message in its journal row (see the class)."""
        call_id = result.tool_call_id
        self._journal([(_END[0], (self.session_id, call_id, result.tool_name)),
                       (_END[1], (to_json(result), self.session_id, call_id))])

    def load_journal(self) -> list[JournalEntry] | None:
        """The session's journal rows (None for a file written before the journal existed)."""
        with self._lock:
            connection = self._open()
            if not self._journaled:
                return None
            rows = self._retrying(
                lambda: connection.execute(_JOURNAL, (self.session_id,)).fetchall())
        return [JournalEntry(call_id, tool_name, key, None if result is None
                             else from_json(ToolResultMessage, result))
                for call_id, tool_name, key, result in rows]

    def lease(self, timeout: float = 0.0) -> SqliteLease:
        """Take the session's lease (API §27), waiting up to `timeout` seconds for its holder.

        The `Agent` holds it while a run goes, so that one process at a time drives the
        session. A row of the table `agentcore_leases` names the holder (its host, boot, pid
        and a token) and its expiry, `lease_ttl` seconds ahead, pushed back by a thread of
        the holder every third of that; the lease is taken over at once from a holder whose
        process is gone (on this machine) or whose lease expired. Raises `SessionBusyError`
        when another holder keeps it past `timeout`. While this object holds the lease, its
        writes check that it still does: one that lost it raises `SessionBusyError`.
        """
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not 0 <= timeout < float("inf"):
            raise type_error("timeout", "a number of seconds >= 0", timeout)

        def in_transaction(action: Callable[[sqlite3.Connection], T]) -> T:
            def write() -> T:
                connection.execute("BEGIN IMMEDIATE")
                with connection:
                    return action(connection)

            with self._lock:
                connection = self._open()
                return self._retrying(write)

        def last(connection: sqlite3.Connection) -> int | None:
            value: int | None = connection.execute(_LAST, (self.session_id,)).fetchone()[0]
            return value

        lease = take_lease(in_transaction, self.session_id, float(timeout), self._lease_ttl,
                           last, self._seen, f"session {self.session_id!r} of {self.path!r}")
        self._holding = lease
        return lease

    def session_ids(self) -> list[str]:
        """The ids of every session in the file that holds a message, sorted."""
        with self._lock:
            connection = self._open()
            rows = self._retrying(lambda: connection.execute(
                "SELECT DISTINCT session_id FROM agentcore_messages ORDER BY session_id"
            ).fetchall())
        return [session_id for (session_id,) in rows]

    def close(self) -> None:
        """Close the database connection; using the session afterwards raises `ValueError`."""
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def __enter__(self) -> SqliteSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            raise ValueError(f"{self!r} is closed")
        return self._connection

    def _write(self, delete: str | None, rows: list[tuple[str, str, str]],
               journal: list[tuple[str, str]] | set[str]) -> None:
        """One write transaction: `delete` (with the session id) first, then insert `rows`.

        `journal` is the (session id, call id) of the rows to delete from the journal (an
        append's answered calls), or the set of call ids whose rows to keep (a `replace`).
        `BEGIN IMMEDIATE` takes the write lock up front, so that a writer in another process
        makes this one wait (up to `timeout`) instead of failing halfway. A transaction that
        fails is rolled back whole, so trying it again never stores a message twice.
        """

        def write() -> None:
            connection.execute("BEGIN IMMEDIATE")
            with connection:  # commits, or rolls back on an exception
                if holding is not None and not holding.released:
                    holding.check(connection)  # a holder that lost its lease must not write
                if delete is not None:
                    connection.execute(delete, (self.session_id,))
                connection.executemany(_INSERT, rows[:-1])
                last = connection.execute(_INSERT, rows[-1]).lastrowid if rows else None
                if isinstance(journal, list):
                    if journal:
                        connection.executemany(_FORGET, journal)
                elif not journal:
                    connection.execute(_FORGET_ALL, (self.session_id,))
                else:
                    marks = ", ".join("?" * len(journal))
                    connection.execute(f"{_FORGET_ALL} AND call_id NOT IN ({marks})",
                                       (self.session_id, *journal))
                # the session's last seq now: its last row's, or none (nothing inserted after
                # a delete); an append of nothing does not come here
                self._seen = last if last is not None or delete is not None else self._seen

        holding = self._holding
        with self._lock:
            connection = self._open()
            self._retrying(write)
            if delete is not None:
                self._journaled = True  # a new transcript: its calls will be journaled

    def _journal(self, statements: list[tuple[str, tuple[str, ...]]]) -> None:
        """One journal write, in a transaction of its own."""

        def write() -> None:
            if len(statements) == 1:  # autocommit: one statement, one transaction
                connection.execute(*statements[0])
                return
            connection.execute("BEGIN IMMEDIATE")
            with connection:
                for statement in statements:
                    connection.execute(*statement)

        with self._lock:
            connection = self._open()
            self._retrying(write)
            self._journaled = True

    def _retrying(self, action: Callable[[], T]) -> T:
        """`action()`, tried again while another connection holds the database, up to `timeout`.

        SQLite's busy timeout covers most waits, but some answers come at once, without it:
        two processes setting up a new file together, or a reader meeting another's recovery
        of a killed writer's log.
        """
        import sqlite3

        deadline = time.monotonic() + self._timeout
        pause = 0.001
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
                busy = (code & 0xFF in _BUSY_CODES if code is not None
                        else "locked" in str(exc) or "busy" in str(exc))
                if not busy or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

