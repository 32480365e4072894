"""When a request is tried again, after how long, and the rate-limit pauses runs share.

Retries. Connection errors and 408/409/429/5xx answers are retried (a server's
`x-should-retry` header overrides the status), but for a server error whose body says the
request itself was invalid (`_invalid.invalid_request`): that answer would only come again.
Retries wait what the server asks for (`retry-after-ms`, else `Retry-After` in seconds or as
an HTTP date) or else an exponential backoff with jitter. A server asking for more than the
policy's cap is not waited for: the request fails at once with a `RetryRefusal`, as the
reference does ("Server requested 120s retry delay (max: 60s)."). Server hints are untrusted
input: garbage, a negative or non-finite value, or one beyond any plausible wait
(`MAX_HINT_S`) counts as no hint, so the normal backoff applies.

Pauses. A 429 (or another retryable answer) naming a delay says the account is over its rate
limit, not just the request that got it: the process's other runs would only collect more
429s. So `HttpClient` calls `pause` with that delay, whether it retries or not, and `wait`
before each attempt; a request whose policy caps delays below what is left of a pause fails at
once with the refusal it would have got from that answer itself (`Refused`). Pauses are keyed
by `PauseKey`: the request's origin and a SHA-256 digest of its credentials, never the
credentials themselves. They live in one process-wide registry (the sharing is the point):
writers take a lock and swap the whole dict, so readers take none, and a request asks
`paused()` (one clock read) before deriving its key.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import re
import threading
import time
from collections.abc import Mapping
from datetime import timezone

import attrs

from .._core import ABORTED_TEXT, AbortSignal
from ._transport import RequestAborted

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "MAX_HINT_S",
    "PauseKey",
    "Refused",
    "RetryPolicy",
    "RetryRefusal",
    "backoff",
    "clear_pauses",
    "origin_of",
    "pause",
    "paused",
    "remaining",
    "server_delay",
    "shares",
    "wait",
]

_log = logging.getLogger(__name__)

DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_RETRY_DELAY_MS = 60_000
MAX_HINT_S = 86_400.0
"""The longest server-requested delay taken as a hint (a day); a longer one is read as garbage."""
_RETRY_STATUSES = frozenset({408, 409, 429})
_NUMBER = re.compile(r"\s*\+?[0-9]{1,20}(?:\.[0-9]{1,20})?\s*")


@attrs.frozen
class RetryRefusal:
    """A server asked to wait `asked_s` seconds, more than the cap of `max_ms` milliseconds."""

    asked_s: float
    max_ms: int

    @property
    def text(self) -> str:
        """The refusal as the error message starts: whole seconds, rounded up."""
        return (f"Server requested {int(-(-self.asked_s // 1))}s retry delay "
                f"(max: {int(-(-self.max_ms // 1000))}s).")


@attrs.frozen
class RetryPolicy:
    """How often a request is retried and the longest server-requested delay honoured.

    `max_delay_ms` of 0 honours any delay.
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    max_delay_ms: int = DEFAULT_MAX_RETRY_DELAY_MS

    @classmethod
    def of(cls, max_retries: int | None, max_delay_ms: int | None) -> RetryPolicy:
        """The policy for a request's options, where None means the default."""
        return cls(DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
                   DEFAULT_MAX_RETRY_DELAY_MS if max_delay_ms is None else max_delay_ms)

    def retries_status(self, attempt: int, status: int, headers: Mapping[str, str],
                       invalid: bool = False) -> bool:
        """Whether the answer `status` to try number `attempt` (from 0) is tried again.

        `invalid`: the answer's body says the request was invalid (`invalid_request`); such a
        5xx is not.
        """
        return attempt < self.max_retries and _should_retry(status, headers, invalid)

    def refusal(self, asked_s: float | None) -> RetryRefusal | None:
        """A `RetryRefusal` when the server's delay is longer than the cap, else None."""
        if asked_s is not None and self.max_delay_ms > 0 and asked_s * 1000 > self.max_delay_ms:
            return RetryRefusal(asked_s, self.max_delay_ms)
        return None

    def capped(self, backoff_s: float) -> float:
        """A backoff of ours, never longer than the cap (a cap of 1 s turns 2 s into 1 s)."""
        return min(backoff_s, self.max_delay_ms / 1000) if self.max_delay_ms > 0 else backoff_s


def server_delay(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `Retry-After`.

    None when neither holds a usable value: garbage, a malformed date, a negative or non-finite
    number or more than `MAX_HINT_S` are no hint (never an exception). An HTTP date in the past
    is a delay of 0.
    """
    lowered = {k.lower(): v for k, v in headers.items() if isinstance(v, str)}
    millis = _number(lowered.get("retry-after-ms"))
    if millis is not None:
        return _plausible(millis / 1000)
    value = lowered.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return _plausible(seconds)
    return _plausible(_date_delay(value))


def _number(value: str | None) -> float | None:
    """A plain non-negative decimal number, else None (no signs, exponents, `nan`, `1_0`)."""
    if value is None or not _NUMBER.fullmatch(value):
        return None
    return float(value)


def _date_delay(value: str) -> float | None:
    """Seconds until an HTTP date (at least 0), or None when `value` is no date."""
    if not value.strip() or len(value) > 64:
        return None
    import email.utils  # here: it loads base64, calendar and locale, unneeded until a 429

    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:  # "-0000": UTC, with no claim about the local zone
            when = when.replace(tzinfo=timezone.utc)
        return max(0.0, when.timestamp() - time.time())
    except (ValueError, TypeError, OverflowError, IndexError, OSError):
        return None


def _plausible(seconds: float | None) -> float | None:
    if seconds is None or not math.isfinite(seconds) or not 0 <= seconds <= MAX_HINT_S:
        return None
    return seconds


def backoff(attempt: int) -> float:
    """Seconds to wait before retry `attempt` (from 0): 0.5 s doubling up to 8 s, less ≤25 %."""
    return float(min(0.5 * 2**attempt, 8.0) * (1 - random.random() * 0.25))


def _should_retry(status: int, headers: Mapping[str, str], invalid: bool) -> bool:
    override = {k.lower(): v for k, v in headers.items()}.get("x-should-retry")
    if override in ("true", "false"):
        return override == "true"
    if status >= 500:
        return not invalid
    return status in _RETRY_STATUSES


# --- pauses shared by the process ------------------------------------------------------------

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


def clear_pauses(url: str | None = None) -> None:
    """Forget the pauses for the origin of `url`, or every pause (for tests).

    A test server on a port that an earlier test's server had must not inherit its pauses.
    """
    _REGISTRY.clear(None if url is None else origin_of(url))
