"""The provider registry: which stream function serves which `Model.api`.

The registry is the one piece of module-level mutable state, changed only through
`register_provider`/`unregister_provider` and guarded by a lock.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from collections.abc import Callable

from .._core import (
    AgentcoreError,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    ErrorEvent,
    Model,
    ProviderNotFoundError,
    StreamOptions,
    describe,
    error_reply,
)

__all__ = [
    "StreamFn",
    "complete",
    "get_apis",
    "register_provider",
    "speaks_http",
    "stream",
    "unregister_provider",
]

_log = logging.getLogger(__name__)

StreamFn = Callable[[Model, Context, StreamOptions], AssistantMessageEventStream]
"""A provider: `(model, context, options) -> AssistantMessageEventStream`."""

_lock = threading.Lock()
_providers: dict[str, StreamFn] = {}


def register_provider(api: str, stream_fn: StreamFn) -> None:
    """Serve models whose `api` is `api` with `stream_fn`, replacing any earlier one."""
    if not isinstance(api, str) or not api:
        raise TypeError(f"register_provider: 'api' must be a non-empty str, got {api!r}")
    if not callable(stream_fn):
        raise TypeError(f"register_provider: 'stream_fn' must be callable, got {stream_fn!r}")
    with _lock:
        _providers[api] = stream_fn


def unregister_provider(api: str) -> None:
    """Remove the provider for `api`; raises `ProviderNotFoundError` if there is none."""
    with _lock:
        if _providers.pop(api, None) is None:
            raise ProviderNotFoundError(f"no provider registered for api {api!r}")


_BUILTIN = {
    "openai-completions": ("openai_completions", "stream_openai_completions"),
    "openai-responses": ("openai_responses", "stream_openai_responses"),
    "anthropic-messages": ("anthropic", "stream_anthropic"),
    "google-generative-ai": ("google", "stream_google"),
    "google-vertex": ("vertex", "stream_vertex"),
    "bedrock-converse-stream": ("bedrock", "stream_bedrock"),
}
"""Built-in providers, imported on first use so that `import agentcore` stays light."""


def get_apis() -> list[str]:
    """Return the API names `stream` serves: the built-in ones, then those registered, sorted.

    Returns:
        A new list, e.g. `["openai-completions", "openai-responses", "anthropic-messages",
        "google-generative-ai"]` plus any `register_provider` added (a faux provider's, say).
    """
    with _lock:
        registered = sorted(api for api in _providers if api not in _BUILTIN)
    return [*_BUILTIN, *registered]


def speaks_http(api: str) -> bool:
    """Whether `api` is served by one of the built-in HTTP wire modules (no custom provider)."""
    with _lock:
        custom = api in _providers
    return api in _BUILTIN and not custom


def _builtin(api: str) -> StreamFn | None:
    where = _BUILTIN.get(api)
    return None if where is None else _imported(*where)


@functools.cache  # six entries at most: `import_module` runs once per module, not per request
def _imported(module_name: str, name: str) -> StreamFn | None:
    try:
        module = importlib.import_module(f"{__package__}.{module_name}")
    except ModuleNotFoundError:  # a provider this version does not ship yet
        return None
    fn: StreamFn = getattr(module, name)
    return fn


def _lookup(model: Model) -> StreamFn:
    if not isinstance(model, Model):
        raise TypeError(f"'model' must be a Model, got {model!r}")
    with _lock:
        fn = _providers.get(model.api)
    if fn is None:
        fn = _builtin(model.api)
    if fn is None:
        raise ProviderNotFoundError(f"no provider registered for api {model.api!r}")
    return fn


def failed_stream(
    model: Model, message: str, *, aborted: bool = False
) -> AssistantMessageEventStream:
    """A stream holding a single `error` event: how a request that never started fails."""
    final = error_reply(model, message, aborted=aborted)
    out = AssistantMessageEventStream()
    out.push(ErrorEvent(final.stop_reason, final))
    return out


def stream(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Start a model reply; dispatches on `model.api`.

    Provider failures arrive as an `error` event, never as an exception; misuse (an unknown
    api, a missing API key, wrong argument types) raises.
    """
    fn = _lookup(model)
    if not isinstance(context, Context):
        raise TypeError(f"'context' must be a Context, got {context!r}")
    if options is None:
        options = StreamOptions()
    elif not isinstance(options, StreamOptions):
        raise TypeError(f"'options' must be StreamOptions or None, got {options!r}")
    try:
        return fn(model, context, options)
    except AgentcoreError:
        raise
    except Exception as exc:
        _log.debug("provider for api %r raised", model.api, exc_info=True)
        return failed_stream(model, describe(exc))


def complete(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessage:
    """Run `stream` to the end and return the final message (an error message on failure)."""
    return stream(model, context, options).result()
