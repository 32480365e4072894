"""How OpenAI-compatible servers differ, detected from the model and overridable per field.

`Model.compat` may override any flag, in camelCase (as the reference writes them) or
snake_case: `{"supportsDeveloperRole": False, "maxTokensField": "max_tokens"}`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import attrs

from .._core import Model

__all__ = ["Compat", "resolve_compat"]

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
