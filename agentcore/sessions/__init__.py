"""Sessions: a conversation's transcript kept on disk, so that it survives the process.

`Agent(model, session=SqliteSession("chat.db"))` loads the transcript when the agent is
constructed and makes every message durable before listeners see its `message_end`. Two stores
come with agentcore, and a third with the extra `postgres`; any object with the five methods
of `Session` will do::

    SqliteSession(path, session_id="default", *, durable=False)   # stdlib sqlite3, WAL
    JsonlSession(path, *, durable=False)                          # one JSON message per line
    PostgresSession(dsn, session_id="default")                    # psycopg 3, many processes

Durability. By default a message is kept once the operating system has it (a SQLite commit in
WAL mode with `synchronous=NORMAL`; a flushed `write` for JSONL): killing the process at any
moment loses nothing that was appended. Surviving a power loss or an OS crash takes an fsync
per append as well: `durable=True` (`synchronous=FULL` for SQLite), which costs a disk flush
per message. Without it such a crash may lose the last messages, never the file.

Side effects across a crash (API §24). Both stores also keep a journal of tool calls (the
optional `SessionJournal` methods; a store of your own may have them too): the `Agent` stores
the start of each call before it runs and its result as soon as it ends, so that after a
crash a call that finished keeps its real result, and the repair tells a call that never
started ("... it did not run") from one that was running ("... it may have taken effect
(idempotency key <key>)"). The key is what a `@tool` parameter `idempotency_key` received:
derived from the store's `identity` and the call's id, the same in every process.

One driver at a time (API §27). `SqliteSession` and `PostgresSession` have a lease (the
optional `SessionLease`: `lease(timeout)`), which the `Agent` holds while a run goes:
another agent, in this process or another, then gets `SessionBusyError` from
`prompt`/`continue_` (or waits its `lease_timeout`), and one opening the session meanwhile
does not repair the calls the holder is running. A holder whose process (SQLite) or
connection (PostgreSQL) is gone loses the lease at once.

Many processes, many machines. `PostgresSession` keeps sessions in a PostgreSQL database
(a commit per append: durable when it returns), shares a small connection pool per process
and DSN, and has a lease (`SessionLease`): an advisory lock that one holder at a time keeps
while it drives the session, dropped by the server when the holder's connection dies.

Layer 4, beside `testing` and `notebook`: builds on `_core` only. `sqlite3` is imported when
the first `SqliteSession` is made, psycopg when the first `PostgresSession` is, so
`import agentcore` loads neither.
"""

from __future__ import annotations

from .._core import JournalEntry, Lease, Session, SessionJournal, SessionLease
from ._jsonl import JsonlSession
from ._postgres import PostgresSession
from ._sqlite import SqliteSession

__all__ = ["JournalEntry", "JsonlSession", "Lease", "PostgresSession", "Session",
           "SessionJournal", "SessionLease", "SqliteSession"]
