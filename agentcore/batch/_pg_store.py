"""A batch's results in PostgreSQL: `run_batch(store="postgresql://...")` (extra `postgres`).

One table, `agentcore_batch_results(idx, input, result)`, keyed by (idx, input) as the SQLite
store is, made when missing. `result` is the JSON text, as SQLite keeps it: `jsonb` would refuse
a reply holding an escaped NUL character. Each result is one upsert in its own transaction
(autocommit, and `synchronous_commit` on): committed, it survives a crash of the server. The
store lives on the thread iterating the batch, on one connection; a connection lost (a restart
of the server, a failover) is replaced once per call, and a call failing on the new one too
raises `ConnectionError`.

The password in the URL never appears in an error, a log line or a repr.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

    import psycopg

__all__ = ["CONNECT_TIMEOUT_S", "PostgresStore"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")

CONNECT_TIMEOUT_S = 10
"""How long connecting may take, unless the URL says (`?connect_timeout=`)."""

MISSING_EXTRA = ("a PostgreSQL store of agentcore.batch needs the 'postgres' extra: "
                 "pip install 'agentcore[postgres]'")

_TABLE = "agentcore_batch_results"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {_TABLE} (
    idx BIGINT NOT NULL,
    input TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (idx, input)
)
"""

_DDL_LOCK = 0x61676E7462617463
"""The advisory lock key held while creating the table: two processes running `CREATE TABLE IF
NOT EXISTS` at once can otherwise both try, and one fails on the catalog's unique index."""

_USERINFO = re.compile(r"(://[^:@/\s\"]*):[^@\s\"]*@")


class PostgresStore:
    """Results in a PostgreSQL database, on one connection of the thread iterating the batch.

    Raises `ValueError` naming 'store', the server and database (never the password) and the
    cause when the URL is malformed or no connection can be made within the connect timeout.
    """

    def __init__(self, url: str) -> None:
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:
            raise ImportError(MISSING_EXTRA) from None

        self._secrets = [s for s in (_raw_password(url),) if s]
        error: str | None = None
        try:
            params = conninfo_to_dict(url)
        except psycopg.Error as exc:
            params, error = {}, str(exc)
        password = params.get("password")
        if isinstance(password, str) and password:
            self._secrets.append(password)
        self._url = url
        self.where = _where(params) if params else self._scrub(url)
        if error is not None:
            raise ValueError(f"'store': {self.where!r} is not a valid PostgreSQL URL "
                             f"({self._scrub(error)})") from None
        self._timeout = None if "connect_timeout" in params else CONNECT_TIMEOUT_S
        self._db: psycopg.Connection[Any] | None = None
        self._db = self._connect_checked()

    def get(self, index: int, input_key: str) -> dict[str, Any] | None:
        """The stored result of input `index` with that input, or None."""
        row = self._retrying("read from", lambda db: db.execute(
            f"SELECT result FROM {_TABLE} WHERE idx = %s AND input = %s",
            (index, input_key)).fetchone())
        return None if row is None else dict(json.loads(row[0]))

    def put(self, index: int, input_key: str, result: dict[str, Any]) -> None:
        """Store (or replace) the result of input `index`: committed when this returns."""
        text = json.dumps(result)
        self._retrying("write to", lambda db: db.execute(
            f"INSERT INTO {_TABLE} (idx, input, result) VALUES (%s, %s, %s) "
            f"ON CONFLICT (idx, input) DO UPDATE SET result = EXCLUDED.result",
            (index, input_key, text)))

    def close(self) -> None:
        """Close the connection."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    def _retrying(self, what: str, call: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """`call` on the connection; if that fails, once more on a new connection.

        Mostly, the connection was lost (a restart, a failover). Each call is one statement in
        autocommit, so a failed one left nothing half-written and doing it again (an upsert, a
        read) is safe.
        """
        import psycopg  # loaded by __init__ already

        if self._db is not None and not self._db.closed:
            try:
                return call(self._db)
            except psycopg.OperationalError as exc:
                _log.warning("the batch store at %s failed (%s); reconnecting to try again",
                             self.where, self._scrub(str(exc)))
        self.close()
        try:
            self._db = self._connect()
            return call(self._db)
        except psycopg.OperationalError as exc:
            cause = self._scrub(str(exc))
        self.close()
        raise ConnectionError(f"'store': could not {what} the batch store at {self.where} "
                              f"after reconnecting ({cause})") from None

    def _connect_checked(self) -> psycopg.Connection[Any]:
        """A connection with the table made, or `ValueError` naming the server and cause.

        The error is raised outside the `except` block, so that its `__context__` does not
        hold psycopg's error (whose text may quote the URL).
        """
        import psycopg

        try:
            return self._connect()
        except psycopg.Error as exc:
            cause = self._scrub(str(exc))
        raise ValueError(f"'store': cannot use the PostgreSQL database at {self.where} "
                         f"({cause})") from None

    def _connect(self) -> psycopg.Connection[Any]:
        """A new autocommit connection, the table made if missing."""
        import psycopg  # loaded by __init__ already

        options: dict[str, Any] = {"autocommit": True, "application_name": "agentcore-batch"}
        if self._timeout is not None:
            options["connect_timeout"] = self._timeout
        db = psycopg.connect(self._url, **options)
        try:
            db.execute("SET synchronous_commit TO on")  # durable at commit, whatever the default
            exists = db.execute("SELECT to_regclass(%s) IS NOT NULL", (_TABLE,)).fetchone()
            if not (exists and exists[0]):  # no CREATE privilege needed once it exists
                with db.transaction():
                    db.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
                    db.execute(_SCHEMA)
        except BaseException:
            db.close()
            raise
        return db

    def _scrub(self, text: str) -> str:
        """`text` on one line, without the password (libpq quotes a URL it cannot parse)."""
        text = _USERINFO.sub(r"\1:***@", text)
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return " ".join(text.split())


def _raw_password(url: str) -> str | None:
    """The password as written in `url` (percent-encoded), found without parsing it fully."""
    match = _USERINFO.search(url)
    if match is None:
        return None
    userinfo = match.group(0)
    return userinfo[len(match.group(1)) + 1:-1] or None


def _where(params: dict[str, Any]) -> str:
    """`host:port/dbname` of a parsed URL, libpq's defaults left out."""
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    port = params.get("port")
    dbname = params.get("dbname")
    return f"{host}{f':{port}' if port else ''}{f'/{dbname}' if dbname else ''}"
