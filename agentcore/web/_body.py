"""Request bodies as JSON, with a bound on how deeply they nest; refusals and their answer.

`json.loads` recurses once per level of nesting: 100 KB of `[` raises `RecursionError`, which
would reach the client as a 500 with a traceback in the server's log, and a body just under the
interpreter's limit still costs every later validator the same recursion. No request of the
app's protocols nests more than a few levels (a tool's JSON schema, a message's parts, a
client's `forwardedProps`), so `load_json` refuses anything deeper than `MAX_DEPTH` with a 400.
Every refusal of the app, its routes' (`BadInput`) and its guard's, is answered by `json_error`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse

__all__ = ["MAX_DEPTH", "BadInput", "json_error", "load_json"]

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a request body may have."""


class BadInput(Exception):
    """A request the app refuses: `status` (4xx) and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_error(status: int, message: str,
               headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The app's answer to a refused request: `{"error": message}` with `status`."""
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def load_json(body: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of `body`; `BadInput` 400 if it is not JSON or nests beyond `max_depth`."""
    try:
        value = json.loads(body)
    except RecursionError:
        raise BadInput(400, f"the body nests deeper than {max_depth} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(400, f"the body is not JSON: {exc}") from None
    if _depth_exceeds(value, max_depth):
        raise BadInput(400, f"the body nests deeper than {max_depth} levels")
    return value


def _depth_exceeds(value: Any, max_depth: int) -> bool:
    """Whether `value` nests deeper than `max_depth` (iterative: no recursion of its own)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))
    return False
