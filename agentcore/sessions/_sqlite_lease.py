"""`SqliteSession`'s lease (API §27): a row per leased session, its holder and its expiry.

The table `agentcore_leases` holds one row per session whose lease was taken: the holder's
random token, host name, boot id and pid, and when the lease expires. Taking the lease is one
`BEGIN IMMEDIATE` transaction: read the row, and write ours when there is none or its holder
is gone. A holder is gone when its lease expired, or when it ran on this machine and its
process is gone (its pid no longer runs, or runs as a zombie; the machine rebooted since);
a holder of this process is alive while its `Lease` is held. The holder renews the expiry
from a thread of its own every third of `ttl`, so that only a holder that stopped (killed,
frozen, or on another machine that went away) lets its lease expire.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core import SessionBusyError

if TYPE_CHECKING:
    import sqlite3

__all__ = ["LEASE_SCHEMA", "SqliteLease", "take_lease"]

_log = logging.getLogger("agentcore.sessions")

LEASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentcore_leases (
    session_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    host TEXT NOT NULL,
    boot TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires REAL NOT NULL
);
"""
_HOLDER = "SELECT token, host, boot, pid, expires FROM agentcore_leases WHERE session_id = ?"
_TAKE = ("INSERT OR REPLACE INTO agentcore_leases (session_id, token, host, boot, pid, expires) "
         "VALUES (?, ?, ?, ?, ?, ?)")
_RENEW = "UPDATE agentcore_leases SET expires = ? WHERE session_id = ? AND token = ?"
_GIVE_UP = "DELETE FROM agentcore_leases WHERE session_id = ? AND token = ?"
_POLL = 0.02
"""How often a waiting `lease(timeout)` looks again, in seconds."""

_held: set[str] = set()
"""The tokens of the leases this process holds now (a holder of this pid is alive iff here)."""


def _boot_id() -> str:
    """This boot of the machine (Linux); empty where unknown, so that the pid decides alone."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _host_name() -> str:
    """This machine's network name (no `socket` import: `import agentcore` stays light)."""
    uname = getattr(os, "uname", None)
    return uname().nodename if uname is not None else os.environ.get("COMPUTERNAME", "")


_HOST, _BOOT = _host_name(), _boot_id()


def _running(pid: int) -> bool:
    """Whether process `pid` runs on this machine (a zombie, killed but not reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True  # no /proc here: the signal said it exists
    return stat[stat.rfind(")") + 2:][:1] != "Z"


def _gone(token: str, host: str, boot: str, pid: int, expires: float) -> bool:
    """Whether the holder of a lease row has stopped holding it (see the module)."""
    if expires <= time.time():
        return True
    if host != _HOST:
        return False  # another machine's process: only its expiry tells
    if boot != _BOOT:
        return True  # this machine rebooted since the lease was taken
    if pid == os.getpid():
        return token not in _held
    return not _running(pid)


class SqliteLease:
    """A held lease of a `SqliteSession` (see the module); `release()` gives it up."""

    def __init__(self, run: Callable[[Callable[[sqlite3.Connection], Any]], Any],
                 session_id: str, token: str, ttl: float, changed: bool) -> None:
        self._run = run
        self._session_id = session_id
        self._token = token
        self._ttl = ttl
        self._changed = changed
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, daemon=True,
                                         name=f"agentcore-lease-{session_id[:40]}")
        self._renewer.start()

    @property
    def changed(self) -> bool:
        """Whether another writer changed the transcript since its session object last did."""
        return self._changed

    @property
    def released(self) -> bool:
        """Whether `release()` was called."""
        return self._stop.is_set()

    def check(self, db: sqlite3.Connection) -> None:
        """Raise `SessionBusyError` unless the lease row is still this holder's (in a write)."""
        row = db.execute(_HOLDER, (self._session_id,)).fetchone()
        if row is None or row[0] != self._token:
            raise SessionBusyError(f"session {self._session_id!r} lost its lease (it expired "
                                   "and another agent took it): this agent stores no more")

    def release(self) -> None:
        """Stop renewing and delete the lease row (once; never raises)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._renewer is not threading.current_thread():
            self._renewer.join()
        _held.discard(self._token)
        try:
            self._run(lambda db: db.execute(_GIVE_UP, (self._session_id, self._token)))
        except Exception:  # the row stays until it expires, or this process is gone
            _log.warning("could not release the lease of session %r; it ends when this "
                         "process does, or expires", self._session_id, exc_info=True)

    def _renew(self) -> None:
        """The renewing thread: push the expiry back every third of the ttl, until released."""
        while not self._stop.wait(self._ttl / 3):
            try:
                renewed = self._run(lambda db: db.execute(
                    _RENEW, (time.time() + self._ttl, self._session_id, self._token)).rowcount)
            except Exception:
                _log.warning("could not renew the lease of session %r", self._session_id,
                             exc_info=True)
                continue
            if not renewed:
                _log.error("the lease of session %r was lost (it expired and another holder "
                           "took it)", self._session_id)
                return


def take_lease(run: Callable[[Callable[[sqlite3.Connection], Any]], Any], session_id: str,
               timeout: float, ttl: float, fingerprint: Callable[[sqlite3.Connection], Any],
               seen: Any, name: str) -> SqliteLease:
    """Take the lease of `session_id`, waiting up to `timeout` seconds (see the module).

    `run(action)` runs `action(connection)` in a write transaction of the session's database
    and returns its result. `fingerprint(connection)` tells the transcript's state, compared
    with `seen` (what the session object last saw) to tell the lease's `changed`. `name`
    names the session in `SessionBusyError`.
    """
    token = os.urandom(16).hex()
    deadline = time.monotonic() + timeout

    def attempt(db: sqlite3.Connection) -> tuple[bool, Any]:
        row = db.execute(_HOLDER, (session_id,)).fetchone()
        if row is not None and not _gone(*row):
            return False, row
        db.execute(_TAKE, (session_id, token, _HOST, _BOOT, os.getpid(), time.time() + ttl))
        return True, fingerprint(db)

    while True:
        _held.add(token)  # before the commit: from then on, this process's agents see it live
        try:
            taken, found = run(attempt)
            if taken:
                return SqliteLease(run, session_id, token, ttl, found != seen)
        except BaseException:
            _held.discard(token)
            raise
        _held.discard(token)
        left = deadline - time.monotonic()
        if left <= 0:
            _, host, _, pid, _ = found
            where = "this process" if host == _HOST and pid == os.getpid() else \
                f"process {pid} on {host}"
            raise SessionBusyError(
                f"{name} is being driven by another agent ({where} holds its lease); wait "
                "for its run to end, or give the agent a lease_timeout")
        time.sleep(min(_POLL, left))
