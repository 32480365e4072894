"""Fallback models (API §24): which failures a fallback takes over, and each model's options.

A model call that ends in error is tried again on the next of the run's `fallback_models`,
unless it was aborted or stopped by a usage limit, or the config's `fallback_on` says no. The
circuit breaker counts only failures that say something about the model's health: a refused
request (a 4xx answer other than 408 and 429) or a context too long for the model is the
request's fault, and counts as an answer from a live model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .._core import (
    GUARDRAIL_TEXT,
    USAGE_LIMIT_TEXT,
    AssistantMessage,
    Model,
    StopReason,
    StreamOptions,
    is_context_overflow,
    is_credential_header,
    model_hint,
    type_error,
)
from ..providers import require_api_key, speaks_http

__all__ = ["FallbackOn", "check_fallbacks", "falls_back", "health", "model_list",
           "options_for", "tried_text"]

FallbackOn = Callable[[AssistantMessage], bool]
"""Decides whether a failed reply is tried again on the next fallback model."""

_STATUS = re.compile(r"(\d{3})\b")
_REQUEST_FAULTS = range(400, 500)
_NOT_THE_REQUEST = frozenset({408, 429})
_OWN_CREDENTIALS = frozenset({"amazon-bedrock", "google-vertex"})  # looked up at call time


def model_list(value: object) -> list[Model]:
    """Attrs converter of `fallback_models`: a list or tuple of `Model`, copied into a list."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        hint = model_hint(value)
        raise type_error("fallback_models", "a list of Model", value,
                         "wrap the model in a list" if isinstance(value, Model) else hint)
    for i, model in enumerate(value):
        if not isinstance(model, Model):
            raise type_error(f"fallback_models[{i}]", "a Model", model, model_hint(model))
    return list(value)


def check_fallbacks(config: Any, _: attrs.Attribute[Any], models: list[Model]) -> None:
    """Attrs validator: each model (`model_list` checked them) that needs a key can get one.

    A key comes from `get_api_key` (trusted to have it), from `api_key` for a model of the
    run's own provider, or from the environment; local servers need none.
    """
    if not isinstance(models, list):
        raise type_error("fallback_models", "a list of Model", models)
    for i, model in enumerate(models):
        if config.get_api_key is not None or not speaks_http(model.api) \
                or model.provider in _OWN_CREDENTIALS:
            continue
        given = config.api_key if model.provider == config.model.provider else None
        try:
            require_api_key(model.provider, given, base_url=model.base_url)
        except Exception as exc:
            raise type(exc)(f"'fallback_models[{i}]' ({model.provider}/{model.id}) has no "
                            f"API key: {exc}; or pass get_api_key=fn(provider)") from None


def falls_back(reply: AssistantMessage, fallback_on: FallbackOn | None) -> bool:
    """Whether the failed `reply` may be tried on the next model (never an abort or a limit)."""
    if reply.stop_reason is not StopReason.ERROR:
        return False
    if (reply.error_message or "").startswith((USAGE_LIMIT_TEXT, GUARDRAIL_TEXT)):
        return False
    return fallback_on is None or bool(fallback_on(reply))


def health(reply: AssistantMessage) -> bool | None:
    """What `reply` says of its model, for the circuit breaker: up, down, or nothing.

    An abort says nothing; an error is the model's failure unless the request was at fault
    (a 4xx answer other than 408 and 429, or a context overflow), which a live server gave.
    """
    if reply.stop_reason is StopReason.ABORTED:
        return None
    if reply.stop_reason is not StopReason.ERROR:
        return True
    text = reply.error_message or ""
    if text.startswith((USAGE_LIMIT_TEXT, GUARDRAIL_TEXT)):
        return None
    status = _STATUS.match(text)
    if status is not None:
        code = int(status.group(1))
        if code in _REQUEST_FAULTS and code not in _NOT_THE_REQUEST:
            return True
    return is_context_overflow(reply)


def options_for(model: Model, primary: Model, options: StreamOptions,
                api_key: str | None) -> StreamOptions:
    """The run's `options` for a call to fallback `model` of a run on `primary`.

    A model of another provider gets neither the run's `api_key` (only `api_key` here, what
    `get_api_key` gave for it, if anything) nor the credential headers of `options.headers`.
    """
    if model.provider == primary.provider:
        return options
    headers = options.headers
    if headers:
        headers = {k: v for k, v in headers.items() if not is_credential_header(k)} or None
    return attrs.evolve(options, api_key=api_key, headers=headers)


def tried_text(tried: Sequence[tuple[Model, str]]) -> str:
    """The error of a turn every model failed: each model tried, and why, in order."""
    parts = [f"{model.provider}/{model.id}: {why}" for model, why in tried]
    return f"all {len(tried)} models failed: " + "; ".join(parts)
