"""How the OpenAI APIs (and compatible servers) report errors, turned into `error_message` text.

The shapes follow the official SDK's messages, so that overflow and retry patterns written
for it keep matching: `"<status> <error.message>"` for an HTTP error, the bare message for
an error inside the stream.
"""

from __future__ import annotations

import json
from typing import Any

from ._http import HttpError
from ._wire import dumps

__all__ = ["error_text", "http_error", "loads_or_none"]


def loads_or_none(text: str) -> Any:
    """Parsed JSON, or None when `text` is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def error_text(error: Any) -> str:
    """`error.message` (JSON of a non-string message, or of the whole error if it has none).

    OpenRouter's `metadata.raw` (the upstream provider's own text) is appended on a new line.
    """
    if not isinstance(error, dict):
        return str(error)
    message = error.get("message")
    text = message if isinstance(message, str) else dumps(message if message else error)
    metadata = error.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    return f"{text}\n{raw}" if raw else text


def http_error(error: HttpError) -> str:
    """`"<status> <message>"` for a non-2xx answer; connection errors pass through."""
    if error.status is None:
        return str(error)
    if not error.body:
        return f"{error.status} status code (no body)"
    payload = loads_or_none(error.body)
    if isinstance(payload, dict) and "error" in payload:
        return f"{error.status} {error_text(payload['error'])}"
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return f"{error.status} {payload['message']}"
    return str(error)
