"""Shared rate limits: a server's delay seen by one run pauses every run to that provider and key.

A 429 (or another retryable answer) naming a delay says the account is over its rate limit, not
just the request that got it: the process's other runs would only collect more 429s. So
`open_stream` calls `pause` with that delay, whether it retries or not, and `wait` before each
attempt. A request whose retry policy caps delays below what is left of a pause fails at once
with the refusal it would have got from that answer itself (`Refused`), rather than wait longer
than its policy allows.

Pauses are keyed by `PauseKey`: the origin of the request's URL (`scheme://host:port`) and a
SHA-256 digest of its credentials, never the credentials themselves. They live in one
process-wide registry, the one module-level mutable state besides the provider registry: it is
what the sharing means. Writers take a lock and replace the whole dict (copy-on-write, dropping
expired pauses), so readers take none: a request first asks `paused()`, one clock read and a
comparison, and derives its key and looks it up only while some pause lasts.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Mapping

import attrs

from .._core import ABORTED_TEXT, AbortSignal
from ._opener import RequestAborted
from ._retry import RetryPolicy, RetryRefusal

__all__ = [
    "PauseKey",
    "Refused",
    "clear",
    "origin_of",
    "pause",
    "paused",
    "remaining",
    "shares",
    "wait",
]

_log = logging.getLogger(__name__)

_CREDENTIAL_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_ONE_RETRY = RetryPolicy(max_retries=1)


@attrs.frozen
class PauseKey:
    """Who a pause applies to: one provider origin and one set of credentials.

    `digest` is the SHA-256 of the credentials (hex), kept out of the repr all the same.
    """

    origin: str
    digest: str = attrs.field(repr=False)

    @classmethod
    def of(cls, url: str, secrets: tuple[str, ...], headers: Mapping[str, str]) -> PauseKey:
        """The key of a request to `url` sent with `secrets` (else its credential headers)."""
        credentials = secrets or tuple(
            value for name, value in headers.items() if name.lower() in _CREDENTIAL_HEADERS)
        digest = hashlib.sha256("\0".join(credentials).encode("utf-8", "surrogatepass"))
        return cls(origin_of(url), digest.hexdigest())


def origin_of(url: str) -> str:
    """`scheme://host:port` of `url`: no credentials, path or query, the default port filled in."""
    from urllib.parse import urlsplit  # here: urlsplit caches, and this module loads with _http

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is no number: keep what the URL says
        port = None
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


@attrs.frozen
class Refused:
    """A pause longer than the waiting request's policy allows: the request fails at once.

    `status` is the answer that set the pause; `refusal` says how long is left and the cap.
    """

    refusal: RetryRefusal
    status: int


@attrs.frozen
class _Pause:
    until: float  # time.monotonic()
    status: int


@attrs.define(eq=False)
class _Registry:
    """The pauses by key, and when the last one ends (monotonic).

    Thread-safe: writers hold `_lock` and swap `pauses` for a new dict, so readers need none.
    """

    pauses: dict[PauseKey, _Pause] = attrs.field(factory=dict)
    last: float = float("-inf")
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def pause(self, key: PauseKey, seconds: float, status: int) -> bool:
        """Extend the pause for `key` to `seconds` from now; whether it was extended."""
        if seconds <= 0:
            return False
        now = time.monotonic()
        until = now + seconds
        with self._lock:
            old = self.pauses.get(key)
            if old is not None and old.until >= until:
                return False
            pauses = {k: p for k, p in self.pauses.items() if p.until > now}
            pauses[key] = _Pause(until, status)
            self.pauses, self.last = pauses, max(self.last, until)
        return True

    def get(self, key: PauseKey) -> _Pause | None:
        pauses = self.pauses
        return pauses.get(key) if pauses else None

    def clear(self, origin: str | None) -> None:
        with self._lock:
            if origin is None:
                self.pauses = {}
            else:
                self.pauses = {k: p for k, p in self.pauses.items() if k.origin != origin}
            self.last = max((p.until for p in self.pauses.values()), default=float("-inf"))


_REGISTRY = _Registry()


def shares(status: int, headers: Mapping[str, str], invalid: bool = False) -> bool:
    """Whether an answer's server delay pauses every run with its key: a 429 or retryable answer.

    A 429 always does, whatever its `x-should-retry`: it is the rate limit speaking. `invalid`:
    the answer says the request was invalid (a server error that is then not retryable).
    """
    return status == 429 or _ONE_RETRY.retries_status(0, status, headers, invalid)


def paused() -> bool:
    """Whether any request at all is paused now: the one check a request makes when none is."""
    return time.monotonic() < _REGISTRY.last


def pause(key: PauseKey, seconds: float, status: int = 429) -> None:
    """Pause new requests for `key` for `seconds` from now, after an answer of `status`.

    A pause is extended, never shortened: a later, shorter delay leaves it as it is. The first
    pause and each extension are logged at INFO with the origin, never the key.
    """
    if _REGISTRY.pause(key, seconds, status):
        _log.info("rate limited by %s: pausing requests for %s s", key.origin,
                  f"{round(seconds, 3):g}")


def remaining(key: PauseKey) -> float:
    """Seconds left of the pause for `key`, 0.0 when there is none."""
    found = _REGISTRY.get(key)
    return 0.0 if found is None else max(0.0, found.until - time.monotonic())


def wait(key: PauseKey, signal: AbortSignal | None, policy: RetryPolicy) -> Refused | None:
    """Block until the pause for `key` has passed; None then (at once when there is none).

    A pause longer than `policy` allows a server's delay to be is not waited for: `Refused` comes
    back at once, also when another run extends the pause during the wait. An abort of `signal`
    during the wait raises `RequestAborted`.
    """
    found = _REGISTRY.get(key)
    while found is not None:
        left = found.until - time.monotonic()
        if left <= 0:
            break
        refusal = policy.refusal(left)
        if refusal is not None:
            return Refused(refusal, found.status)
        _log.debug("waiting %.3f s for the rate limit of %s", left, key.origin)
        if signal is None:
            time.sleep(left)
        elif signal.wait(left):
            raise RequestAborted(ABORTED_TEXT)
        found = _REGISTRY.get(key)  # another run may have extended it meanwhile
    return None


def clear(url: str | None = None) -> None:
    """Forget the pauses for the origin of `url`, or every pause (for tests).

    A test server on a port that an earlier test's server had must not inherit its pauses.
    """
    _REGISTRY.clear(None if url is None else origin_of(url))
