"""`SqliteSession`: transcripts in a SQLite database, through the standard library's `sqlite3`."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from .._core import AgentMessage, from_json, type_error
from ._encode import encode

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
"""
_INSERT = "INSERT INTO agentcore_messages (session_id, role, message) VALUES (?, ?, ?)"
_SELECT = "SELECT message FROM agentcore_messages WHERE session_id = ? ORDER BY seq"
_DELETE = "DELETE FROM agentcore_messages WHERE session_id = ?"
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (primary codes)

T = TypeVar("T")


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

    Threading: one connection, guarded by a lock; every method may be called from any
    thread. `close()` it when done (or use `with`); the `Agent` never closes a session.

    Args:
        path: The database file (created when missing), or `":memory:"`.
        session_id: Which session of the file this object reads and writes.
        durable: Also survive a power loss: an fsync per commit.
        timeout: How long a call waits for another connection that holds the database
            (SQLite's busy timeout, and retries where SQLite answers "locked" at once), in
            seconds.
    """

    def __init__(self, path: str | os.PathLike[str], session_id: str = "default", *,
                 durable: bool = False, timeout: float = 10.0) -> None:
        import sqlite3  # here, not at the top: `import agentcore` never loads sqlite3

        if not isinstance(session_id, str) or not session_id:
            raise type_error("session_id", "a non-empty str", session_id)
        if not isinstance(durable, bool):
            raise type_error("durable", "a bool", durable)
        self.path = os.fspath(path)
        """The database file."""
        self.session_id = session_id
        """The session this object reads and writes."""
        self.durable = durable
        """Whether every commit is flushed to the disk (`synchronous=FULL`)."""
        self._lock = threading.Lock()
        self._timeout = timeout
        connection = sqlite3.connect(self.path, timeout=timeout, isolation_level=None,
                                     check_same_thread=False)

        def set_up() -> None:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=WAL")  # kept in the file
            connection.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            connection.executescript(_SCHEMA)

        try:
            self._retrying(set_up)
        except BaseException:
            connection.close()
            raise
        self._connection: sqlite3.Connection | None = connection

    def __repr__(self) -> str:
        return f"SqliteSession({self.path!r}, session_id={self.session_id!r})"

    def load(self) -> list[AgentMessage]:
        """The session's transcript, oldest message first (empty for a new session)."""
        with self._lock:
            connection = self._open()
            rows = self._retrying(
                lambda: connection.execute(_SELECT, (self.session_id,)).fetchall())
        return [from_json(AgentMessage, text) for (text,) in rows]

    def append(self, messages: Sequence[AgentMessage]) -> None:
        """Add `messages` at the end, in one transaction: all of them are kept, or none."""
        rows = [(self.session_id, role, text) for role, text in encode(messages)]
        if rows:
            self._write(None, rows)

    def replace(self, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the session's transcript, in one transaction."""
        self._write(_DELETE, [(self.session_id, role, text) for role, text in encode(messages)])

    def clear(self) -> None:
        """Delete the session's messages (other sessions in the file stay)."""
        self._write(_DELETE, [])

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

    def _write(self, delete: str | None, rows: list[tuple[str, str, str]]) -> None:
        """One write transaction: `delete` (with the session id) first, then insert `rows`.

        `BEGIN IMMEDIATE` takes the write lock up front, so that a writer in another process
        makes this one wait (up to `timeout`) instead of failing halfway. A transaction that
        fails is rolled back whole, so trying it again never stores a message twice.
        """

        def write() -> None:
            connection.execute("BEGIN IMMEDIATE")
            with connection:  # commits, or rolls back on an exception
                if delete is not None:
                    connection.execute(delete, (self.session_id,))
                connection.executemany(_INSERT, rows)

        with self._lock:
            connection = self._open()
            self._retrying(write)

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

