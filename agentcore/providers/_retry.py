"""When a failed request is tried again, and after how long.

Connection errors and 408/409/429/5xx answers are retried (a server's `x-should-retry` header
overrides the status), waiting what the server asks for (`retry-after-ms`, else `Retry-After` in
seconds or as an HTTP date) or else an exponential backoff with jitter. A server asking for more
than the policy's cap is not waited for: the request fails at once with a `RetryRefusal`, as
the reference does ("Server requested 120s retry delay (max: 60s).").
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

import attrs

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "RetryPolicy",
    "RetryRefusal",
    "backoff",
    "server_delay",
]

DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_RETRY_DELAY_MS = 60_000
_RETRY_STATUSES = frozenset({408, 409, 429})


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

    def retries_status(self, attempt: int, status: int, headers: Mapping[str, str]) -> bool:
        """Whether the answer `status` to try number `attempt` (from 0) is tried again."""
        return attempt < self.max_retries and _should_retry(status, headers)

    def refusal(self, asked_s: float | None) -> RetryRefusal | None:
        """A `RetryRefusal` when the server's delay is longer than the cap, else None."""
        if asked_s is not None and self.max_delay_ms > 0 and asked_s * 1000 > self.max_delay_ms:
            return RetryRefusal(asked_s, self.max_delay_ms)
        return None


def server_delay(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `Retry-After`."""
    lowered = {k.lower(): v for k, v in headers.items()}
    value = lowered.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    when = email.utils.parsedate_to_datetime(value) if value.strip() else None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff(attempt: int) -> float:
    """Seconds to wait before retry `attempt` (from 0): 0.5 s doubling up to 8 s, less ≤25 %."""
    return float(min(0.5 * 2**attempt, 8.0) * (1 - random.random() * 0.25))


def _should_retry(status: int, headers: Mapping[str, str]) -> bool:
    override = {k.lower(): v for k, v in headers.items()}.get("x-should-retry")
    if override in ("true", "false"):
        return override == "true"
    return status in _RETRY_STATUSES or status >= 500
