"""Where a batch keeps its results: one row per input whose run ended without error.

`store=` is a SQLite path or a PostgreSQL URL; `open_store` picks the implementation. Both
keep results by (index, input as canonical JSON), one committed transaction per result, and
are used from one thread (the one iterating `run_batch`): the batch holds the plain `store`
value and opens it there, so nothing unpicklable or thread-bound travels with the batch.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import sqlite3

__all__ = ["ResultStore", "SqliteStore", "is_postgres_url", "open_store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_results (
    idx INTEGER NOT NULL,
    input TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (idx, input)
)
"""


class ResultStore(Protocol):
    """What `run_batch` needs of a store: read a result, write one, close.

    `put` raises `ConnectionError` when the store's server cannot be reached even after one
    retry: the batch then stops rather than run on with results it cannot keep. Any other
    error of `put` loses that one result only (logged; the batch goes on).
    """

    def get(self, index: int, input_key: str) -> dict[str, Any] | None:
        """The stored result of input `index` with that input, or None."""
        ...

    def put(self, index: int, input_key: str, result: dict[str, Any]) -> None:
        """Store (or replace) the result of input `index`, committed before returning."""
        ...

    def close(self) -> None:
        """Release the file or connection."""
        ...


def is_postgres_url(store: object) -> bool:
    """Whether `store` is a libpq URL (`postgresql://...` or `postgres://...`)."""
    return isinstance(store, str) and store.startswith(("postgresql://", "postgres://"))


def open_store(store: str | os.PathLike[str]) -> ResultStore:
    """The store `store` names, open and with its table; `ValueError` naming 'store' if not."""
    if is_postgres_url(store):
        from ._pg_store import PostgresStore  # psycopg only for a PostgreSQL store

        assert isinstance(store, str)
        return PostgresStore(store)
    return SqliteStore(store)


class SqliteStore:
    """A SQLite file, in WAL mode: a batch killed half-way keeps every result it had yielded.

    Used from one thread (the one iterating `run_batch`).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import sqlite3  # here: `import agentcore.batch` does not load sqlite3

        self.path = os.fspath(path)
        db = None
        try:
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            if db is not None:  # closed now, not by the garbage collector (a ResourceWarning)
                db.close()
            raise ValueError(f"'store': cannot open {self.path!r} as a SQLite file ({exc})") \
                from None
        self._db: sqlite3.Connection = db

    def get(self, index: int, input_key: str) -> dict[str, Any] | None:
        """The stored result of input `index` with that input, or None."""
        row = self._db.execute("SELECT result FROM batch_results WHERE idx = ? AND input = ?",
                               (index, input_key)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def put(self, index: int, input_key: str, result: dict[str, Any]) -> None:
        """Store (or replace) the result of input `index`."""
        self._db.execute("INSERT OR REPLACE INTO batch_results (idx, input, result) "
                         "VALUES (?, ?, ?)", (index, input_key, json.dumps(result)))

    def close(self) -> None:
        """Close the file."""
        self._db.close()

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"
