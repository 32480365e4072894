"""Options for one model request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs
from attrs.validators import deep_mapping, in_, instance_of, is_callable, optional

from ._abort import AbortSignal
from ._enums import ThinkingLevel, member_of, to_thinking_level
from ._model import Model
from ._validators import count, secret_headers, secret_str

__all__ = ["StreamOptions"]

CacheRetention = Literal["none", "short", "long"]
OnPayload = Callable[[Any, Model], Any]
OnResponse = Callable[[int, Mapping[str, str]], None]

# Shared with AgentLoopConfig, so that a bad option fails when the config is built.
opt_count: Any = optional(count)
opt_budgets: Any = optional(deep_mapping(instance_of(str), count, instance_of(dict)))
opt_number = optional(instance_of((int, float)))
opt_headers: Any = secret_headers  # names a bad value's type, never the value


def _redacted_headers(headers: dict[str, str] | None) -> str:
    return "None" if headers is None else "{" + ", ".join(f"{k!r}: '***'" for k in headers) + "}"


@attrs.frozen(kw_only=True)
class StreamOptions:
    """Options for `stream`/`complete`; every field is optional.

    `api_key` and header values never appear in the repr. `on_payload(payload, model)` may
    return a replacement request body; `on_response(status, headers)` sees each response.
    """

    api_key: str | None = attrs.field(default=None, validator=secret_str, repr=False)
    signal: AbortSignal | None = attrs.field(default=None,
                                             validator=optional(instance_of(AbortSignal)))
    reasoning: ThinkingLevel | None = attrs.field(
        default=None, converter=to_thinking_level, validator=optional(member_of(ThinkingLevel))
    )
    thinking_budgets: dict[str, int] | None = attrs.field(
        default=None, validator=opt_budgets
    )
    max_tokens: int | None = attrs.field(default=None, validator=opt_count)
    temperature: float | None = attrs.field(default=None, validator=opt_number)
    session_id: str | None = attrs.field(default=None, validator=optional(instance_of(str)))
    cache_retention: CacheRetention | None = attrs.field(
        default=None, validator=optional(in_(("none", "short", "long")))
    )
    headers: dict[str, str] | None = attrs.field(
        default=None,
        validator=opt_headers,
        repr=_redacted_headers,
    )
    metadata: dict[str, Any] | None = attrs.field(default=None,
                                                  validator=optional(instance_of(dict)))
    on_payload: OnPayload | None = attrs.field(default=None, validator=optional(is_callable()))
    on_response: OnResponse | None = attrs.field(default=None, validator=optional(is_callable()))
    max_retry_delay_ms: int | None = attrs.field(default=None, validator=opt_count)
    max_retries: int | None = attrs.field(default=None, validator=opt_count)
    transport: str = attrs.field(default="sse", validator=instance_of(str))
    timeout: float | None = attrs.field(default=None, validator=opt_number)
