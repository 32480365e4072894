"""The SQLite file that makes a batch resumable: one row per input whose run ended without error."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

__all__ = ["ResultStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_results (
    idx INTEGER NOT NULL,
    input TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (idx, input)
)
"""


class ResultStore:
    """Results keyed by (index, input as canonical JSON), written as they complete.

    Used from one thread (the one iterating `run_batch`). Each result is one committed
    transaction in WAL mode: a batch killed half-way keeps every result it had yielded.
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
        self._db.close()

    def __repr__(self) -> str:
        return f"ResultStore({self.path!r})"
