"""What every HTTP provider shares: key lookup, headers, the request/response skeleton."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .._core import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Model,
    StreamOptions,
    ThinkingLevel,
    is_credential_header,
)
from ._builder import ReplyBuilder
from ._http import HttpError, HttpRequest, RequestAborted, iter_events, open_stream, redact
from ._sse import ServerSentEvent
from ._wire import dumps

__all__ = ["ProviderError", "api_key_for", "default_max_tokens", "run", "send"]

_log = logging.getLogger(__name__)
_REFUSED_DELAY = re.compile(r"Server requested \d+s retry delay \(max: \d+s\)\.")


class ProviderError(Exception):
    """A failure reported by the provider inside the stream; its text becomes `error_message`."""


def api_key_for(model: Model, options: StreamOptions) -> str:
    """The key to send: the option, else the provider's environment variable.

    Raises `MissingApiKeyError` naming the variable; servers on this machine need no key.
    """
    from .models import require_api_key

    return require_api_key(model.provider, options.api_key, base_url=model.base_url)


def default_max_tokens(model: Model, options: StreamOptions) -> int:
    """`options.max_tokens`, else the model's limit capped at 32,000."""
    return options.max_tokens or min(model.max_tokens, 32_000)


def clamp_level(level: ThinkingLevel | None) -> ThinkingLevel | None:
    """`xhigh` for models that lack it is sent as `high`; `off` means no reasoning option."""
    if level is ThinkingLevel.OFF:
        return None
    return level


def secrets_of(api_key: str, model: Model, options: StreamOptions) -> tuple[str, ...]:
    """What to redact from error text: the key and credential-like header values.

    A key may come in `model.headers` or `options.headers` (`Authorization: Bearer ...`,
    `x-api-key`) rather than as `api_key`; servers echo those back just the same.
    """
    from .models import _NO_KEY

    # The placeholder sent to local servers is no secret: redacting it would mangle any
    # "none" in their messages ('model "nonexistent" not found').
    found = [api_key] if api_key != _NO_KEY else []
    for headers in (model.headers, options.headers):
        for name, value in (headers or {}).items():
            if is_credential_header(name):
                found.append(value)
                found.append(value.partition(" ")[2])  # the credential after "Bearer "
    return tuple(secret for secret in found if len(secret.strip()) >= 4)


def send(url: str, body: Any, headers: Mapping[str, str], model: Model, options: StreamOptions,
         api_key: str) -> Any:
    """Apply `on_payload`, POST the JSON and return the open 2xx response."""
    if options.on_payload is not None:
        replaced = options.on_payload(body, model)
        if replaced is not None:
            body = replaced
    merged = {"Content-Type": "application/json", "Accept": "text/event-stream", **headers}
    merged.update(model.headers or {})
    merged.update(options.headers or {})
    request = HttpRequest(
        url, dumps(body).encode("utf-8"), merged, signal=options.signal,
        timeout=options.timeout, max_retries=options.max_retries,
        max_retry_delay_ms=options.max_retry_delay_ms, on_response=options.on_response,
        secrets=secrets_of(api_key, model, options),
    )
    return open_stream(request)


Handler = Callable[[ReplyBuilder, ServerSentEvent], Iterator[AssistantMessageEvent]]
FormatHttpError = Callable[[HttpError], str]


def run(
    model: Model,
    options: StreamOptions,
    api_key: str,
    connect: Callable[[], Any],
    handle: Callable[[ReplyBuilder, Iterator[ServerSentEvent]], Iterator[AssistantMessageEvent]],
    format_http_error: FormatHttpError,
    auto_close: bool = True,
) -> AssistantMessageEventStream:
    """The skeleton of every HTTP provider, as a lazily consumed stream.

    `connect()` builds and sends the request; `handle` turns the events into the protocol.
    Every failure ends the stream with an `error` event carrying what arrived so far.
    """
    signal = options.signal

    def events() -> Iterator[AssistantMessageEvent]:
        builder = ReplyBuilder(model, auto_close)
        try:
            response = connect()
            yield builder.start()
            yield from handle(builder, iter_events(response, signal))
            if signal is not None and signal.aborted:
                raise RequestAborted("Request was aborted")
            yield from builder.done()
        except Exception as exc:
            aborted = signal is not None and signal.aborted
            if aborted or isinstance(exc, RequestAborted):
                message, aborted = "Request was aborted", True
            elif isinstance(exc, HttpError):
                message = format_http_error(exc)
                refused = _REFUSED_DELAY.match(str(exc))
                if refused and not message.startswith(refused.group()):
                    message = f"{refused.group()} {message}"  # why we did not wait, then why
            elif isinstance(exc, json.JSONDecodeError):
                message = f"invalid JSON from the provider: {exc.msg}"
            else:
                message = str(exc) or type(exc).__name__
                if not isinstance(exc, ProviderError):
                    _log.debug("%s stream failed", model.api, exc_info=True)
            yield builder.error(redact(message, secrets_of(api_key, model, options)), aborted)

    return AssistantMessageEventStream.from_iterator(events())  # type: ignore[return-value]
