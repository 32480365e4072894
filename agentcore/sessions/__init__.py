"""Sessions: a conversation's transcript kept on disk, so that it survives the process.

`Agent(model, session=SqliteSession("chat.db"))` loads the transcript when the agent is
constructed and makes every message durable before listeners see its `message_end`. Two stores
come with agentcore, and any object with the five methods of `Session` will do::

    SqliteSession(path, session_id="default", *, durable=False)   # stdlib sqlite3, WAL
    JsonlSession(path, *, durable=False)                          # one JSON message per line

Durability. By default a message is kept once the operating system has it (a SQLite commit in
WAL mode with `synchronous=NORMAL`; a flushed `write` for JSONL): killing the process at any
moment loses nothing that was appended. Surviving a power loss or an OS crash takes an fsync
per append as well: `durable=True` (`synchronous=FULL` for SQLite), which costs a disk flush
per message. Without it such a crash may lose the last messages, never the file.

Layer 4, beside `testing` and `notebook`: builds on `_core` only. `sqlite3` is imported when
the first `SqliteSession` is made, so `import agentcore` never loads it.
"""

from __future__ import annotations

from .._core import Session
from ._jsonl import JsonlSession
from ._sqlite import SqliteSession

__all__ = ["JsonlSession", "Session", "SqliteSession"]
