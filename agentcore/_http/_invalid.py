"""A server error that says the request itself was invalid: never worth a retry.

Servers built on FastAPI that catch every exception as a 500 (llama-cpp-python's server does)
answer a request that fails validation with a 500 whose message is FastAPI's text of the
`RequestValidationError`: "N validation errors:" then one pydantic error dict per line (FastAPI
0.124 and later), or the repr of the list of those dicts (before). Each dict's `loc` starts
with the part of the request it is about ("body", "query", "path", "header", "cookie"). Only
that is recognised: a validation error about the server's own response ("response"), or any
other message, is a server error like another, and retried.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

__all__ = ["invalid_request"]

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
