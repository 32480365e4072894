"""What the two OpenAI APIs share: server quirks, model abilities and error text.

How OpenAI-compatible servers differ is detected here from the provider and the base URL, once
per server, and `Model.compat` overrides any of it (see `_compat`): `{"supports_developer_role":
False, "max_tokens_field": "max_tokens"}`, or camelCase as the reference writes the keys.

Errors follow the official SDK's messages, so that overflow and retry patterns written for it
keep matching: `"<status> <error.message>"` for an HTTP error, the bare message for an error
inside the stream.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from .._core import Model
from ._compat import Compat, resolve
from ._http import HttpError
from ._reply import http_status_text
from ._text import dumps

__all__ = [
    "error_text",
    "http_error_text",
    "is_openai",
    "loads_or_none",
    "resolve_compat",
]

_NON_STANDARD_PROVIDERS = {"cerebras", "xai", "opencode", "zai", "nvidia", "together", "moonshot"}
_NON_STANDARD_HOSTS = ("cerebras.ai", "api.x.ai", "chutes.ai", "deepseek.com", "api.z.ai",
                       "opencode.ai", "together.xyz", "moonshot", "nvidia.com")
_NO_REASONING_EFFORT = {"xai", "zai", "moonshot", "together", "ollama"}


def is_openai(base_url: str) -> bool:
    """Whether `base_url` is OpenAI's own API (or Azure's OpenAI service), not a look-alike."""
    try:
        host = urlsplit(base_url).hostname or ""
    except ValueError:
        return False
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def _detected(model: Model) -> dict[str, Any]:
    """What the server behind `model.base_url` is known to need, said once per server."""
    url = model.base_url.lower()
    provider = model.provider
    non_standard = provider in _NON_STANDARD_PROVIDERS or any(h in url for h in _NON_STANDARD_HOSTS)
    openai = is_openai(model.base_url)
    detected: dict[str, Any] = {
        "supports_store": not non_standard,
        "supports_developer_role": not non_standard and provider != "ollama",
        "supports_reasoning_effort": provider not in _NO_REASONING_EFFORT
        and "api.x.ai" not in url and "api.z.ai" not in url,
        # Other servers (llama.cpp, vLLM, Ollama, LM Studio...) ignore max_completion_tokens,
        # and llama-cpp-python's answers an assistant `content: null` with a 500.
        "max_tokens_field": "max_completion_tokens" if openai else "max_tokens",
        "supports_null_content": openai,
    }
    if provider == "zai" or "api.z.ai" in url:
        detected["thinking_format"] = "zai"
    elif provider == "deepseek" or "deepseek.com" in url:
        detected["thinking_format"] = "deepseek"
    elif "openrouter.ai" in url:
        detected["thinking_format"] = "openrouter"
        # OpenRouter passes the developer role on to OpenAI's and Anthropic's models only:
        # their catalogue rows turn it back on.
        detected["supports_developer_role"] = False
    return detected


def resolve_compat(model: Model) -> Compat:
    """An `openai-completions` model's `Compat`: detected from its server, then its `compat`."""
    return resolve(model, _detected(model))


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


def _payload_text(payload: Any) -> str | None:
    if isinstance(payload, dict) and "error" in payload:
        return error_text(payload["error"])
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return str(payload["message"])
    return None


def http_error_text(error: HttpError) -> str:
    """`"<status> <message>"` for a non-2xx answer."""
    return http_status_text(error, _payload_text)
