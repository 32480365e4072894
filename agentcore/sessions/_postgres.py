"""`PostgresSession`: transcripts in a PostgreSQL database, through psycopg 3 (extra `postgres`)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from .._core import (
    AgentMessage,
    JournalEntry,
    SessionBusyError,
    ToolResultMessage,
    from_json,
    to_json,
    type_error,
    unanswered_tool_calls,
)
from . import _pg_pools as pools
from ._encode import encode
from ._pg_lease import PostgresLease, lease_key

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresSession"]

logger = logging.getLogger("agentcore.sessions")

_INSERT = ("INSERT INTO agentcore_messages (session_id, role, message) VALUES (%s, %s, %s) "
           "RETURNING seq")
_SELECT = "SELECT seq, message FROM agentcore_messages WHERE session_id = %s ORDER BY seq"
_DELETE = "DELETE FROM agentcore_messages WHERE session_id = %s"
_FINGERPRINT = "SELECT count(*), max(seq) FROM agentcore_messages WHERE session_id = %s"
_START = ("INSERT INTO agentcore_journal (session_id, call_id, tool_name, idempotency_key, "
          "result) VALUES (%s, %s, %s, %s, NULL) ON CONFLICT (session_id, call_id) DO UPDATE "
          "SET tool_name = EXCLUDED.tool_name, idempotency_key = EXCLUDED.idempotency_key, "
          "result = NULL")
_END = ("INSERT INTO agentcore_journal (session_id, call_id, tool_name, idempotency_key, "
        "result) VALUES (%s, %s, %s, '', %s) ON CONFLICT (session_id, call_id) DO UPDATE "
        "SET result = EXCLUDED.result")
_JOURNAL = ("SELECT call_id, tool_name, idempotency_key, result FROM agentcore_journal "
            "WHERE session_id = %s")
_FORGET = "DELETE FROM agentcore_journal WHERE session_id = %s AND call_id = ANY(%s)"
_KEEP = "DELETE FROM agentcore_journal WHERE session_id = %s AND NOT (call_id = ANY(%s))"
_IDS = "SELECT DISTINCT session_id FROM agentcore_messages ORDER BY session_id"

Fingerprint = tuple[int, int | None]
"""(messages, their last seq) of a session: what `Lease.changed` compares."""

T = TypeVar("T")


class PostgresSession:
    """One session's transcript in a PostgreSQL database, one row per message (API §27).

    A database holds any number of sessions, told apart by `session_id` (`session_ids()`
    lists them): each message is a row of the table `agentcore_messages` (made on first use,
    with the journal's table) holding its JSON (`to_json`, as text), in order of a `bigserial`
    sequence. Every write is one transaction, so killing the process at any moment leaves the
    transcript as it was before or after that write, never in between; a commit is durable
    when `append` returns (PostgreSQL's default `synchronous_commit`). Any number of
    processes, on any number of machines, may read and append at once; each appended message
    is stored once. Only agentcore's own message kinds are stored (`SerializationError` for
    others, as with `SqliteSession`).

    Journal (`SessionJournal`; API §24): the table `agentcore_journal` holds a row per tool
    call that started and whose result the transcript does not hold yet, as in
    `SqliteSession`: appending a call's result deletes its row in the same transaction,
    `replace` keeps only the rows of the calls it leaves unanswered, `clear` deletes them all.
    `identity` (`"postgresql://host:port/dbname#<session_id, %-quoted>"`, never a user or a
    password) scopes the idempotency keys.

    Lease (`SessionLease`; API §27): `lease(timeout)` takes a session-level advisory lock on a
    connection of its own, held until `release()`; the server drops it at once when that
    connection dies (its process killed, the connection terminated, the server restarted).
    While this object holds the lease, its writes go through that connection, so a holder
    that lost the lock cannot write: they raise `SessionBusyError` instead. A writer that takes
    no lease is not stopped by another's lease.

    Connections: the sessions of one DSN in a process share a pool (see `_pg_pools`). A
    server that cannot be reached raises `ConnectionError` (naming host, port, database and
    libpq's reason, never the password) within about `connect_timeout` seconds; a malformed
    DSN raises `ValueError`. A write that meets a broken connection (the server restarted) is
    tried once more on a fresh one, unless it broke while committing (then whether it was
    stored is unknown: `ConnectionError`). Other database errors are psycopg's.

    Threading: every method may be called from any thread (a lock per object). `close()` it
    when done (or use `with`); the `Agent` never closes a session.

    Args:
        dsn: A libpq connection string or `postgresql://` URL.
        session_id: Which session of the database this object reads and writes.
        connect_timeout: How long connecting (or waiting for a pooled connection) may take,
            in seconds.
    """

    def __init__(self, dsn: str, session_id: str = "default", *,
                 connect_timeout: float = 10.0) -> None:
        pools.import_psycopg()
        if not isinstance(dsn, str):
            raise type_error("dsn", "a str (a libpq connection string or postgresql:// URL)",
                             type(dsn))
        if not isinstance(session_id, str) or not session_id:
            raise type_error("session_id", "a non-empty str", session_id)
        if "\0" in session_id:
            raise ValueError(f"'session_id' cannot hold a NUL character: {session_id!r}")
        try:
            session_id.encode()
        except UnicodeEncodeError:
            raise ValueError(f"'session_id' must be valid Unicode: {session_id!r}") from None
        if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, int | float) \
                or not connect_timeout > 0:
            raise type_error("connect_timeout", "a positive number of seconds", connect_timeout)
        self.session_id = session_id
        """The session this object reads and writes."""
        self._dsn = dsn
        self._timeout = float(connect_timeout)
        self._lock = threading.Lock()
        self._seen: Fingerprint | None = None  # None: unknown (see `Lease.changed`)
        self._lease: PostgresLease | None = None
        self._pool: pools.Pool | None = pools.acquire(dsn, self._timeout)
        self._location = self._pool.location
        self.identity = f"{self._location}#{quote(session_id, safe='')}"
        """The session's identity: its server, database and id (see the class)."""

    def __repr__(self) -> str:
        return f"PostgresSession({self._location!r}, session_id={self.session_id!r})"

    def child(self, name: str) -> PostgresSession:
        """The session `<session_id>/<name>` of the same database (see `SqliteSession.child`)."""
        return PostgresSession(self._dsn, f"{self.session_id}/{name}",
                               connect_timeout=self._timeout)

    def load(self) -> list[AgentMessage]:
        """The session's transcript, oldest message first (empty for a new session)."""

        def read(connection: psycopg.Connection[Any]) -> list[tuple[int, str]]:
            return connection.execute(_SELECT, (self.session_id,)).fetchall()

        rows = self._read(read)
        with self._lock:
            self._seen = (len(rows), rows[-1][0] if rows else None)
        return [from_json(AgentMessage, text) for _, text in rows]

    def append(self, messages: Sequence[AgentMessage]) -> None:
        """Add `messages` at the end, in one transaction: all of them are kept, or none.

        The journal rows of the calls whose results are among them go in the same transaction.
        """
        rows = [(self.session_id, role, text) for role, text in encode(messages)]
        answered = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
        if not rows:
            return

        def write(connection: psycopg.Connection[Any]) -> int:
            cursor = connection.cursor()
            cursor.executemany(_INSERT, rows, returning=True)
            last = 0
            while True:
                row = cursor.fetchone()
                last = row[0] if row is not None else last
                if not cursor.nextset():
                    break
            if answered:
                connection.execute(_FORGET, (self.session_id, answered))
            return last

        self._write(write, lambda seen, last: None if seen is None
                    else (seen[0] + len(rows), last))

    def replace(self, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the session's transcript, in one transaction.

        The journal keeps only the rows of the calls `messages` leaves without a result.
        """
        rows = [(self.session_id, role, text) for role, text in encode(messages)]
        keep = [call.id for call in unanswered_tool_calls(messages)]
        self._rewrite(rows, keep)

    def clear(self) -> None:
        """Delete the session's messages and journal (other sessions in the database stay)."""
        self._rewrite([], [])

    def journal_start(self, call_id: str, tool_name: str, idempotency_key: str) -> None:
        """Record that the call is about to run: a journal row without a result (see the class)."""
        self._write(lambda c: c.execute(
            _START, (self.session_id, call_id, tool_name, idempotency_key)), None)

    def journal_end(self, result: ToolResultMessage) -> None:
        """Record the ended call's result message in its journal row (see the class)."""
        self._write(lambda c: c.execute(
            _END, (self.session_id, result.tool_call_id, result.tool_name, to_json(result))),
            None)

    def load_journal(self) -> list[JournalEntry]:
        """The session's journal rows."""
        rows = self._read(lambda c: c.execute(_JOURNAL, (self.session_id,)).fetchall())
        return [JournalEntry(call_id, tool_name, key, None if result is None
                             else from_json(ToolResultMessage, result))
                for call_id, tool_name, key, result in rows]

    def session_ids(self) -> list[str]:
        """The ids of every session in the database that holds a message, sorted."""
        return [session_id for (session_id,) in self._read(
            lambda c: c.execute(_IDS).fetchall())]

    def lease(self, timeout: float = 0.0) -> PostgresLease:
        """Take the session's lease, waiting up to `timeout` seconds (see the class).

        The server queues the wait (`pg_advisory_lock` under a `lock_timeout`), so a lease
        released meanwhile is taken at once. Raises `SessionBusyError` when another holder
        keeps it, by any object of any process (this one's included: leases do not nest).
        """
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) \
                or not timeout >= 0:
            raise type_error("timeout", "a number of seconds >= 0", timeout)
        psycopg = pools.import_psycopg()
        key, entry = lease_key(self.session_id), self._open()
        connection = pools.take_spare(entry)  # an open connection saves a server start
        try:
            if connection is not None:
                try:
                    taken = self._lock_on(connection, key, timeout)
                except psycopg.OperationalError:  # it broke while spare (a restart): anew
                    connection.close()
                    connection = None
            if connection is None:
                connection = pools.connect(self._dsn, self._timeout, autocommit=True)
                taken = self._lock_on(connection, key, timeout)
            if taken:
                row = connection.execute(_FINGERPRINT, (self.session_id,)).fetchone()
                fingerprint = None if row is None else (row[0], row[1])
        except psycopg.OperationalError as exc:
            if connection is not None:
                connection.close()
            raise pools.unreachable(self._location, exc, self._params()) from None
        except BaseException:
            if connection is not None:
                connection.close()  # the lock, if it was taken, goes with it
            raise
        if not taken:
            if not pools.keep_spare(entry, connection):  # it holds no lock: keep it
                connection.close()
            raise SessionBusyError(
                f"session {self.session_id!r} of {self._location} is busy: another "
                f"holder has its lease (waited {timeout:g} s)")
        with self._lock:
            lease = PostgresLease(repr(self), connection, key, self._seen != fingerprint,
                                  self._lock, self._forget,
                                  functools.partial(pools.keep_spare, entry))
            if self._pool is None:
                lease.close_connection()
                raise ValueError(f"{self!r} is closed")
            self._lease = lease
        return lease

    @staticmethod
    def _lock_on(connection: psycopg.Connection[Any], key: int, timeout: float) -> bool:
        """Take the advisory lock `key` on `connection`, waiting up to `timeout` seconds."""
        psycopg = pools.import_psycopg()
        if timeout == 0:
            return bool(connection.execute("SELECT pg_try_advisory_lock(%s)",
                                           (key,)).fetchone() == (True,))
        connection.execute(f"SET lock_timeout = {max(1, round(timeout * 1000))}")
        try:
            connection.execute("SELECT pg_advisory_lock(%s)", (key,))
            return True
        except psycopg.errors.LockNotAvailable:
            return False
        finally:
            connection.execute("SET lock_timeout = 0")

    def close(self) -> None:
        """Release its lease if held, and its share of the pool; then using it raises ValueError."""
        lease = self._lease
        if lease is not None:
            lease.release()
        with self._lock:
            entry, self._pool = self._pool, None
        if entry is not None:
            pools.release(entry)

    def __enter__(self) -> PostgresSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _forget(self, lease: PostgresLease) -> None:
        """Called by `lease.release()`, with this object's lock held."""
        if self._lease is lease:
            self._lease = None

    def _open(self) -> pools.Pool:
        if self._pool is None:
            raise ValueError(f"{self!r} is closed")
        return self._pool

    def _params(self) -> dict[str, Any]:
        return self._pool.params if self._pool is not None else {}

    def _rewrite(self, rows: list[tuple[str, str, str]], keep: list[str]) -> None:
        """One transaction: delete the session's messages, insert `rows`, keep `keep`'s journal."""

        def write(connection: psycopg.Connection[Any]) -> int | None:
            connection.execute(_DELETE, (self.session_id,))
            last = None
            for row in rows:
                fetched = connection.execute(_INSERT, row).fetchone()
                last = fetched[0] if fetched is not None else last
            connection.execute(_KEEP, (self.session_id, keep))
            return last

        self._write(write, lambda _seen, last: (len(rows), last))

    def _read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` in a transaction on a pooled connection (see `_pooled`)."""
        with self._lock:
            entry = self._open()
        return self._pooled(entry, work)

    def _write(self, work: Callable[[psycopg.Connection[Any]], T],
               seen: Callable[[Fingerprint | None, T], Fingerprint | None] | None) -> None:
        """`work` in one transaction; then `seen(fingerprint, result)` is the new fingerprint.

        With this object's lease held, on the lease's connection (where the lock is: a lost
        lease raises `SessionBusyError`, never writes), and the fingerprint kept exact; without
        it, on a pooled connection, and the fingerprint unknown afterwards (another writer's
        rows may interleave).
        """
        with self._lock:
            entry = self._open()
            lease = self._lease
            if lease is not None:
                result = lease.run(work)
                if seen is not None:
                    self._seen = seen(self._seen, result)
                return
        self._pooled(entry, work)
        if seen is not None:
            with self._lock:
                self._seen = None

    def _pooled(self, entry: pools.Pool, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` then a commit, on a pooled connection; once more on a fresh one if it broke.

        A transaction that fails is rolled back whole, so trying it again never stores a
        message twice; a connection that broke during the commit is not retried (the commit
        may have happened).
        """
        psycopg = pools.import_psycopg()
        from psycopg_pool import PoolTimeout

        for attempt in (1, 2):
            own = False
            try:
                connection = entry.pool.getconn(self._timeout)
            except PoolTimeout:
                # The pool waits out its reconnection backoff after an outage: one connection
                # of this call's own instead (or libpq's reason why there is none).
                connection = pools.connect(self._dsn, self._timeout, autocommit=False)
                own = True
            committing = False
            try:
                result = work(connection)
                committing = True
                connection.commit()
                return result
            except psycopg.OperationalError as exc:
                if not connection.broken:
                    raise
                if committing:
                    raise pools.unreachable(
                        self._location, exc, entry.params,
                        "lost its connection while committing (the write may or may not be "
                        "stored) to") from None
                if attempt == 2:
                    raise pools.unreachable(self._location, exc, entry.params) from None
                logger.info("%r: the connection broke (%s); trying once more on a fresh one",
                            self, type(exc).__name__)
            finally:
                if not connection.broken and not connection.closed:
                    connection.rollback()
                if own:
                    connection.close()
                else:
                    entry.pool.putconn(connection)
            entry.pool.check()  # drop the other broken connections (a server restart)
        raise AssertionError("unreachable")  # pragma: no cover
