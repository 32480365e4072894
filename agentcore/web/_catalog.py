"""The app's list of conversations: each thread's title and last activity (API §28).

The page's sidebar lists the conversations (`GET /ag-ui/threads`), renames and deletes them.
Agents and sessions know transcripts, not titles, and the app's registry (`_threads`) holds
only the conversations open now; the catalog remembers every conversation the app has run: a
title (the first prompt's first line, until renamed) and when it was last used. `MemoryCatalog`
keeps it for the process's life; `SqliteCatalog` keeps it in a table of a SQLite file (the
one of the conversations' sessions, for `python -m agentcore web --session chat.db`), so the
list outlives a restart. Any object with the four methods of `ThreadCatalog` will do.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    import sqlite3

__all__ = ["MAX_TITLE_CHARS", "MemoryCatalog", "SqliteCatalog", "ThreadCatalog", "ThreadInfo",
           "title_of"]

MAX_TITLE_CHARS = 200
"""The longest title kept; a first prompt is cut shorter (`title_of`)."""

_AUTO_TITLE_CHARS = 80


@attrs.frozen
class ThreadInfo:
    """One conversation as the sidebar lists it."""

    thread_id: str
    title: str
    # When a run last started on it, in ms since the epoch; a catalog's latest touch is always
    # its greatest (one ms past the previous one if the clock has not moved), so that the list
    # is in the order of use even within a millisecond.
    updated_ms: int


@runtime_checkable
class ThreadCatalog(Protocol):
    """Where the app keeps its conversations' titles and last activity (thread-safe)."""

    def threads(self) -> list[ThreadInfo]:
        """Every conversation, the most recently used first."""

    def touch(self, thread_id: str, title: str) -> None:
        """Mark `thread_id` used now; a new one gets `title`, a known one keeps its own."""

    def rename(self, thread_id: str, title: str) -> bool:
        """Give `thread_id` a new title; False when the catalog has no such conversation."""

    def forget(self, thread_id: str) -> bool:
        """Drop `thread_id`; False when the catalog had no such conversation."""


def title_of(text: str) -> str:
    """A conversation's title from its first prompt: its first non-blank line, cut short."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    line = "".join(c if c.isprintable() else " " for c in line)
    return line if len(line) <= _AUTO_TITLE_CHARS else line[:_AUTO_TITLE_CHARS - 1] + "…"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MemoryCatalog:
    """A `ThreadCatalog` in this process's memory: the list ends with the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: dict[str, ThreadInfo] = {}
        self._latest = 0  # the greatest `updated_ms` given so far

    def threads(self) -> list[ThreadInfo]:
        """Every conversation, the most recently used first."""
        with self._lock:
            return sorted(self._threads.values(), key=lambda t: (-t.updated_ms, t.thread_id))

    def touch(self, thread_id: str, title: str) -> None:
        """Mark `thread_id` used now; a new one gets `title`, a known one keeps its own."""
        with self._lock:
            known = self._threads.get(thread_id)
            self._latest = max(_now_ms(), self._latest + 1)
            self._threads[thread_id] = ThreadInfo(thread_id, known.title if known else title,
                                                  self._latest)

    def rename(self, thread_id: str, title: str) -> bool:
        """Give `thread_id` a new title; False when there is no such conversation."""
        with self._lock:
            known = self._threads.get(thread_id)
            if known is None:
                return False
            self._threads[thread_id] = attrs.evolve(known, title=title)
            return True

    def forget(self, thread_id: str) -> bool:
        """Drop `thread_id`; False when there was no such conversation."""
        with self._lock:
            return self._threads.pop(thread_id, None) is not None


class SqliteCatalog:
    """A `ThreadCatalog` in the table `agentcore_web_threads` of a SQLite file.

    Several processes may share the file (SQLite's own locking; each write one statement).
    `close()` it when done; the app closes the catalogs it is given at shutdown.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 10.0) -> None:
        import sqlite3  # here, not at the top: importing the web module never loads sqlite3

        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=timeout, check_same_thread=False, isolation_level=None)
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS agentcore_web_threads (thread_id TEXT PRIMARY KEY, "
            "title TEXT NOT NULL, updated_ms INTEGER NOT NULL)")

    def __repr__(self) -> str:
        return f"SqliteCatalog({self.path!r})"

    def threads(self) -> list[ThreadInfo]:
        """Every conversation, the most recently used first."""
        rows = self._execute("SELECT thread_id, title, updated_ms FROM agentcore_web_threads "
                             "ORDER BY updated_ms DESC, thread_id").fetchall()
        return [ThreadInfo(thread_id, title, updated) for thread_id, title, updated in rows]

    def touch(self, thread_id: str, title: str) -> None:
        """Mark `thread_id` used now; a new one gets `title`, a known one keeps its own."""
        self._execute("INSERT INTO agentcore_web_threads VALUES (?, ?, MAX(?, 1 + (SELECT "
                      "COALESCE(MAX(updated_ms), 0) FROM agentcore_web_threads))) ON CONFLICT "
                      "(thread_id) DO UPDATE SET updated_ms = excluded.updated_ms",
                      (thread_id, title, _now_ms()))

    def rename(self, thread_id: str, title: str) -> bool:
        """Give `thread_id` a new title; False when there is no such conversation."""
        return self._execute("UPDATE agentcore_web_threads SET title = ? WHERE thread_id = ?",
                             (title, thread_id)).rowcount > 0

    def forget(self, thread_id: str) -> bool:
        """Drop `thread_id`; False when there was no such conversation."""
        return self._execute("DELETE FROM agentcore_web_threads WHERE thread_id = ?",
                             (thread_id,)).rowcount > 0

    def close(self) -> None:
        """Close the file; using the catalog afterwards raises `ValueError`."""
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _execute(self, sql: str, parameters: tuple[object, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            if self._connection is None:
                raise ValueError(f"{self!r} is closed")
            return self._connection.execute(sql, parameters)
