"""`PostgresSession`'s lease (API §27): a session-level advisory lock on a connection of its own."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .._core import SessionBusyError
from . import _pg_pools as pools

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresLease", "lease_key"]

logger = logging.getLogger("agentcore.sessions")

T = TypeVar("T")


def lease_key(session_id: str) -> int:
    """The session's advisory lock key: a signed 64-bit blake2b of its id, the same everywhere."""
    digest = hashlib.blake2b(b"agentcore-session:" + session_id.encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)



def _alive(connection: psycopg.Connection[Any]) -> bool:
    """Whether the connection is open and not known to be broken (a function: mypy narrows)."""
    return not (connection.closed or connection.broken)


class PostgresLease:
    """A held lease: the advisory lock on its own connection (see `PostgresSession.lease`).

    The session runs its writes here while the lease is held (under the session's lock).
    `with session.lease(): ...` releases it at the end of the block.
    """

    def __init__(self, session: str, connection: psycopg.Connection[Any], key: int,
                 changed: bool, lock: threading.Lock,
                 forget: Callable[[PostgresLease], None],
                 keep: Callable[[psycopg.Connection[Any]], bool]) -> None:
        self._session = session  # its repr
        self._lock = lock  # the session's
        self._forget = forget
        self._keep = keep  # takes the unlocked connection for the next lease, or declines
        self._connection = connection
        self._key = key
        self._changed = changed
        self._lost = False
        self._released = False

    @property
    def changed(self) -> bool:
        """Whether the session's messages changed since its object last read or wrote them.

        Compared when the lease was taken: the count and last sequence number of its rows
        against what the object saw last (True when it had not read them since its last write
        without a lease, or at all).
        """
        return self._changed

    def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` in one transaction on the lease's connection; `SessionBusyError` once lost."""
        psycopg = pools.import_psycopg()
        connection = self._connection
        if self._lost or not _alive(connection):
            raise self._lost_error()
        try:
            with connection.transaction():
                return work(connection)
        except psycopg.OperationalError as exc:
            if _alive(connection):
                raise
            self._lost = True
            raise self._lost_error() from exc

    def release(self) -> None:
        """Unlock the lock and give the connection back for the next lease (else close it).

        Once; never raises (logs a failure: closing the connection drops the lock anyway).
        """
        with self._lock:  # the session's: none of its writes is using the connection meanwhile
            if self._released:
                return
            self._released = True
            self._forget(self)
            connection = self._connection
            try:
                if _alive(connection) and not self._lost and connection.execute(
                        "SELECT pg_advisory_unlock(%s)", (self._key,)).fetchone() == (True,) \
                        and self._keep(connection):
                    return  # unlocked, and kept open for the next lease
            except Exception as exc:
                logger.warning("%s: releasing its lease failed (the server drops it with the "
                               "connection): %s", self._session, type(exc).__name__)
            self.close_connection()

    def close_connection(self) -> None:
        """Close the lease's connection (which drops the lock); logs a failure."""
        try:
            self._connection.close()
        except Exception as exc:  # pragma: no cover - close() hardly fails
            logger.warning("closing a lease's connection failed: %s", type(exc).__name__)

    def __enter__(self) -> PostgresLease:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def _lost_error(self) -> SessionBusyError:
        return SessionBusyError(
            f"{self._session} lost its lease (its connection to the server broke): it no "
            "longer drives the session and must not write; release it and lease again")

    def __repr__(self) -> str:
        state = "released" if self._released else "lost" if self._lost else "held"
        return f"<lease of {self._session}: {state}>"
