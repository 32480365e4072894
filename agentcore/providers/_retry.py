"""When a failed request is tried again, and after how long.

Connection errors and 408/409/429/5xx answers are retried (a server's `x-should-retry` header
overrides the status), but for a server error whose body says the request itself was invalid
(`invalid_request`): that answer would only come again. Retries wait what the server asks for
(`retry-after-ms`, else `Retry-After` in seconds or as an HTTP date) or else an exponential
backoff with jitter. A server asking for more than the policy's cap is not waited for: the
request fails at once with a `RetryRefusal`, as the reference does ("Server requested 120s
retry delay (max: 60s).").

Server hints are untrusted input: a value that is garbage, negative, not finite or beyond any
plausible wait (`MAX_HINT_S`) counts as no hint at all, so the normal backoff applies (never
longer than the cap) and a retryable answer stays retryable.
"""

from __future__ import annotations

import ast
import json
import math
import random
import re
import time
from collections.abc import Mapping
from datetime import timezone
from typing import Any

import attrs

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "MAX_HINT_S",
    "RetryPolicy",
    "RetryRefusal",
    "backoff",
    "invalid_request",
    "server_delay",
]

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


# --- a server error that says the request was invalid ------------------------------------------
#
# Servers built on FastAPI that catch every exception as a 500 (llama-cpp-python's server does)
# answer a request that fails validation with a 500 whose message is FastAPI's text of the
# `RequestValidationError`: "N validation errors:" then one pydantic error dict per line (FastAPI
# 0.124 and later), or the repr of the list of those dicts (before). Each dict's `loc` starts
# with the part of the request it is about ("body", "query", "path", "header", "cookie"). Only
# that is recognised: a validation error about the server's own response ("response"), or any
# other message, is a server error like another, and retried.

_VALIDATION_HEAD = re.compile(r"\d+ validation errors?:\n")
_REQUEST_PARTS = frozenset({"body", "query", "path", "header", "cookie"})
_SHOWN = 3  # validation errors quoted in the message, at most
_NOISE: dict[Any, int] = {"missing": 1, "literal_error": 2}
"""Errors ranked after the others: in a union (a message of any role), every alternative that
does not apply reports its own literal (`role`) mismatch and its missing fields."""


def invalid_request(body: str) -> str | None:
    """The gist of a server error's `body` when it says the request was invalid, else None.

    `body` is JSON whose message (`error.message`, or `detail` or `message`) is FastAPI's text
    of a request validation error, in either form (see above); every error in it must be about
    the request. The gist reads `"invalid request: messages.1.content: Input should be a valid
    string, got None (and 6 more validation errors)"`: the most telling errors first (a value of
    the wrong type before a missing field before a union alternative that does not apply).
    """
    if "'loc': (" not in body:  # the cheap test that nearly every body fails
        return None
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    errors = _validation_errors(_message_of(payload))
    if not errors:
        return None
    best = min(_NOISE.get(error.get("type"), 0) for error in errors)
    shown: list[str] = []
    for error in errors:
        text = _error_text(error)
        if _NOISE.get(error.get("type"), 0) == best and text not in shown:
            shown.append(text)
    shown = shown[:_SHOWN]
    more = len(errors) - len(shown)
    tail = f" (and {more} more validation error{'s' if more != 1 else ''})" if more else ""
    return f"invalid request: {'; '.join(shown)}{tail}"


def _message_of(payload: Any) -> Any:
    """The message of an error body: OpenAI's `error.message`, else `detail` or `message`."""
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        return error.get("message")
    if isinstance(error, str):
        return error
    return payload.get("detail", payload.get("message"))


def _validation_errors(message: Any) -> list[dict[str, Any]] | None:
    """The error dicts of a FastAPI request validation error's text, or None for other text."""
    if not isinstance(message, str):
        return None
    text = message.strip()
    head = _VALIDATION_HEAD.match(text)
    try:
        if head is not None:  # one dict per indented line, then the endpoint's place
            lines = text[head.end():].splitlines()
            errors = [ast.literal_eval(line.strip()) for line in lines
                      if line.startswith("  {")]
        elif text.startswith("[{"):
            errors = ast.literal_eval(text)
        else:
            return None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(errors, list) or not errors or not all(map(_about_request, errors)):
        return None
    return errors


def _about_request(error: object) -> bool:
    """Whether `error` is a pydantic error dict about a part of the request."""
    if not isinstance(error, dict) or not isinstance(error.get("msg"), str):
        return False
    loc = error.get("loc")
    return isinstance(loc, tuple) and bool(loc) and loc[0] in _REQUEST_PARTS


def _error_text(error: dict[str, Any]) -> str:
    """`messages.1.content: Input should be a valid string, got None`.

    The location leaves out the request part and the union alternatives pydantic names
    (`typed-dict`, or a class name such as `ChatCompletionRequestAssistantMessage`).
    """
    path = ".".join(str(part) for part in error["loc"][1:] if not _is_tag(part))
    text = f"{path}: {error['msg']}" if path else str(error["msg"])
    value = error.get("input", ...)
    if value is None or isinstance(value, (bool, int, float)) or (
            isinstance(value, str) and len(value) <= 40):
        text += f", got {value!r}"
    return text


def _is_tag(part: object) -> bool:
    return isinstance(part, str) and (part[:1].isupper() or "-" in part or "[" in part)
