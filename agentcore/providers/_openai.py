"""What the two OpenAI APIs share: server quirks, model abilities and error text.

How OpenAI-compatible servers differ is detected from the model and overridable per field:
`Model.compat` may override any flag, in camelCase (as the reference writes them) or
snake_case: `{"supportsDeveloperRole": False, "maxTokensField": "max_tokens"}`.

Errors follow the official SDK's messages, so that overflow and retry patterns written for it
keep matching: `"<status> <error.message>"` for an HTTP error, the bare message for an error
inside the stream.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import attrs

from .._core import Model
from ._http import HttpError
from ._reply import http_status_text
from ._text import dumps

__all__ = [
    "Compat",
    "error_text",
    "http_error_text",
    "loads_or_none",
    "resolve_compat",
    "supports_xhigh",
]

ThinkingFormat = Literal["openai", "zai", "qwen", "qwen-chat-template", "openrouter", "deepseek"]

_NON_STANDARD_PROVIDERS = {"cerebras", "xai", "opencode", "zai", "nvidia", "together", "moonshot"}
_NON_STANDARD_HOSTS = ("cerebras.ai", "api.x.ai", "chutes.ai", "deepseek.com", "api.z.ai",
                       "opencode.ai", "together.xyz", "moonshot", "nvidia.com")
_MAX_TOKENS_HOSTS = ("chutes.ai", "deepseek.com", "moonshot", "together.xyz", "nvidia.com",
                     "api.z.ai")


@attrs.frozen(kw_only=True)
class Compat:
    """The quirks of one OpenAI-compatible server."""

    supports_store: bool = True
    supports_developer_role: bool = True
    supports_reasoning_effort: bool = True
    reasoning_effort_map: dict[str, str] | None = None
    supports_usage_in_streaming: bool = True
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    requires_thinking_as_text: bool = False
    thinking_format: ThinkingFormat = "openai"
    supports_strict_mode: bool = True


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def resolve_compat(model: Model) -> Compat:
    """Detected defaults for `model`, then its explicit `compat` overrides."""
    url = model.base_url.lower()
    provider = model.provider
    non_standard = provider in _NON_STANDARD_PROVIDERS or any(h in url for h in _NON_STANDARD_HOSTS)
    detected: dict[str, Any] = {
        "supports_store": not non_standard,
        "supports_developer_role": not non_standard,
        "supports_reasoning_effort": provider not in ("xai", "zai", "moonshot", "together")
        and "api.x.ai" not in url and "api.z.ai" not in url,
        "max_tokens_field": "max_tokens" if any(h in url for h in _MAX_TOKENS_HOSTS)
        else "max_completion_tokens",
    }
    if provider == "zai" or "api.z.ai" in url:
        detected["thinking_format"] = "zai"
    elif provider == "deepseek" or "deepseek.com" in url:
        detected["thinking_format"] = "deepseek"
    elif "openrouter.ai" in url:
        detected["thinking_format"] = "openrouter"
        detected["supports_developer_role"] = model.id.startswith(("anthropic/", "openai/"))
    if provider == "groq" and model.id == "qwen/qwen3-32b":
        detected["reasoning_effort_map"] = dict.fromkeys(
            ("minimal", "low", "medium", "high", "xhigh"), "default")
    fields = {f.name for f in attrs.fields(Compat)}
    for key, value in (model.compat or {}).items():
        name = _snake(key)
        if name not in fields:
            raise ValueError(f"unknown compat flag {key!r} on model {model.id!r}; "
                             f"known: {sorted(fields)}")
        detected[name] = value
    return Compat(**detected)


def supports_xhigh(model: Model) -> bool:
    """Whether `model` takes the `xhigh` reasoning effort (others are sent `high`)."""
    return any(tag in model.id for tag in ("gpt-5.2", "gpt-5.3", "gpt-5.4", "opus-4-6",
                                           "opus-4.6"))


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
