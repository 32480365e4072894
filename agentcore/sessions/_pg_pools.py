"""`PostgresSession`'s connections: one pool per process and DSN, and connecting with clear errors.

Every `PostgresSession` of one DSN in one process shares a `psycopg_pool.ConnectionPool`
(at most `POOL_SIZE` connections, none made before they are needed), counted: the first
session made opens it, the last one closed closes it, so that no pool thread outlives the
sessions. The registry is keyed by the process id too: a forked child never uses the pool
(and sockets) it inherited, it opens its own.

Errors name what to fix without ever showing a password: a DSN libpq cannot parse is a
`ValueError` naming `dsn` (libpq's reason is left out: it quotes the string), a server that
cannot be reached is a `ConnectionError` naming host, port and database and libpq's reason.
"""

from __future__ import annotations

import math
import os
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

__all__ = ["POOL_SIZE", "Pool", "acquire", "connect", "import_psycopg", "release",
           "unreachable"]

POOL_SIZE = 4
"""The most connections one process keeps open to one DSN (a lease takes one more of its own)."""

EXTRA_HINT = "PostgresSession needs the 'postgres' extra: pip install 'agentcore[postgres]'"

_SCHEMA_KEY = 0x61676E7463_0001
"""The advisory lock key that makes concurrent first uses of a database create its tables in
turn (a concurrent `CREATE TABLE IF NOT EXISTS` may fail on a unique violation otherwise)."""

_SCHEMA = (
    f"SELECT pg_advisory_xact_lock({_SCHEMA_KEY})",
    """CREATE TABLE IF NOT EXISTS agentcore_messages (
        seq BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL,
        role TEXT NOT NULL,
        message TEXT NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS agentcore_messages_by_session
        ON agentcore_messages (session_id, seq)""",
    """CREATE TABLE IF NOT EXISTS agentcore_journal (
        session_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        result TEXT,
        PRIMARY KEY (session_id, call_id))""",
)


def import_psycopg() -> ModuleType:
    """psycopg, imported now (never by `import agentcore`); `ImportError` naming the extra."""
    try:
        import psycopg
        import psycopg_pool  # noqa: F401  (checked here: the pool needs it)
    except ImportError as exc:
        raise ImportError(EXTRA_HINT) from exc
    return psycopg


def params_of(dsn: str) -> dict[str, Any]:
    """The DSN's parameters; a `ValueError` naming `dsn` (and not its text) when it is not one."""
    psycopg = import_psycopg()
    try:
        params: dict[str, Any] = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        raise ValueError(  # libpq's reason quotes the string, which may hold a password
            "'dsn' is not a libpq connection string ('host=... dbname=...') or a "
            "postgresql:// URL") from None
    return params


def where(params: dict[str, Any]) -> str:
    """`postgresql://host:port/dbname` as libpq would resolve them (no user, no password)."""
    env = os.environ
    host = params.get("host") or params.get("hostaddr") or env.get("PGHOST") or "localhost"
    port = params.get("port") or env.get("PGPORT") or "5432"
    user = params.get("user") or env.get("PGUSER") or ""
    dbname = params.get("dbname") or env.get("PGDATABASE") or user
    return f"postgresql://{host}:{port}/{dbname}"


def unreachable(location: str, exc: BaseException, params: dict[str, Any],
                what: str = "cannot reach") -> ConnectionError:
    """The `ConnectionError` for a server that failed: where, and libpq's reason, scrubbed."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    password = params.get("password")
    if password:
        reason = reason.replace(str(password), "***")
    return ConnectionError(f"PostgresSession {what} {location}: {reason}")


def connect(dsn: str, timeout: float, *, autocommit: bool) -> Connection[Any]:
    """A new connection, or a `ConnectionError` within about `timeout` seconds (see module)."""
    psycopg = import_psycopg()
    params = params_of(dsn)
    try:
        connection: Connection[Any] = psycopg.connect(
            dsn, autocommit=autocommit, connect_timeout=max(1, math.ceil(timeout)))
    except psycopg.Error as exc:
        raise unreachable(where(params), exc, params) from None
    return connection


class Pool:
    """One shared pool and what its sessions need to know of its server."""

    def __init__(self, key: tuple[int, str], pool: ConnectionPool[Any], location: str,
                 params: dict[str, Any]) -> None:
        self.key = key
        self.pool = pool
        self.location = location
        """`postgresql://host:port/dbname` of the server the first connection reached."""
        self.params = params
        self.users = 0
        self.spare: list[Connection[Any]] = []
        """Lease connections given back, for the next lease (`take_spare`, `keep_spare`)."""


SPARE_LEASE_CONNECTIONS = 2
"""How many released lease connections a pool keeps open for the next leases: connecting
anew costs a server process start (about 5-8 ms on loopback), most of what a run's lease
would cost."""


def take_spare(entry: Pool) -> Connection[Any] | None:
    """A lease connection given back earlier, if one is open; else None."""
    with _lock:
        while entry.spare:
            connection = entry.spare.pop()
            if not (connection.closed or connection.broken):
                return connection
    return None


def keep_spare(entry: Pool, connection: Connection[Any]) -> bool:
    """Keep an unlocked lease connection for the next lease; False when not kept (close it)."""
    with _lock:
        if entry.users <= 0 or len(entry.spare) >= SPARE_LEASE_CONNECTIONS:
            return False
        entry.spare.append(connection)
        return True


_lock = threading.Lock()
_pools: dict[tuple[int, str], Pool] = {}
_fork_hook: list[bool] = []


def _forget_after_fork() -> None:
    """In a forked child: a fresh lock (the parent's may have been held at the fork)."""
    global _lock
    _lock = threading.Lock()


def acquire(dsn: str, timeout: float) -> Pool:
    """The process's pool for `dsn`, opened (and the schema made) by its first user."""
    from psycopg_pool import ConnectionPool

    key = (os.getpid(), dsn)
    with _lock:
        if not _fork_hook:
            os.register_at_fork(after_in_child=_forget_after_fork)
            _fork_hook.append(True)
        entry = _pools.get(key)
        if entry is None:
            params = params_of(dsn)
            # A first connection of its own: it fails at once with libpq's reason where the
            # pool would retry quietly until its timeout; it also makes the tables.
            with connect(dsn, timeout, autocommit=False) as first:
                try:
                    with first.transaction():
                        for statement in _SCHEMA:
                            first.execute(statement)
                except import_psycopg().OperationalError as exc:
                    raise unreachable(where(params), exc, params) from None
                info = first.info
                location = f"postgresql://{info.host}:{info.port}/{info.dbname}"
            pool: ConnectionPool[Any] = ConnectionPool(
                dsn, min_size=0, max_size=POOL_SIZE, open=False, timeout=timeout,
                kwargs={"autocommit": False, "connect_timeout": max(1, math.ceil(timeout))},
                name=f"agentcore {location}", num_workers=1)
            pool.open(wait=False)
            entry = _pools[key] = Pool(key, pool, location, params)
        entry.users += 1
        return entry


def release(entry: Pool) -> None:
    """One user fewer; the last one closes the pool (and its threads)."""
    with _lock:
        entry.users -= 1
        if entry.users > 0:
            return
        if _pools.get(entry.key) is entry:
            del _pools[entry.key]
        spare, entry.spare = entry.spare, []
    for connection in spare:
        connection.close()
    entry.pool.close()
