"""One driver per conversation (API §27): the optional lease of a `Session` store.

A store with a `lease` method (`SqliteSession`, `PostgresSession`) lets one holder at a time
drive its session: the `Agent` takes the lease before each run and releases it when the run
ends, so that two processes never run the same conversation's tool calls, and an agent
opening a session never repairs calls that a live holder is still running.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Lease", "SessionLease"]


@runtime_checkable
class Lease(Protocol):
    """A held lease on a session: release it once (releasing again does nothing)."""

    @property
    def changed(self) -> bool:
        """Whether the transcript may have changed since the store object last touched it.

        Another process appended, say: the holder then loads it again. True when unsure.
        """
        ...

    def release(self) -> None:
        """Give the lease up; never raises for a lease already lost or released."""
        ...


@runtime_checkable
class SessionLease(Protocol):
    """The optional lease of a `Session`: one holder at a time, across processes and machines.

    `lease(timeout)` takes it, waiting up to `timeout` seconds while another holder keeps
    it, then raising `SessionBusyError`; a holder that died (its process gone, its
    connection closed, its lease expired) loses it at once. Leases are not reentrant: a
    second `lease` of the same session, by any object of any process, waits like any other.
    """

    def lease(self, timeout: float = 0.0) -> Lease:
        """Take the session's lease (see the class); raises `SessionBusyError` when busy."""
        ...
