"""The one seam every HTTP wire API plugs into, and the request/reply skeleton that drives it.

A wire module describes its API as a `WireApi` (URL, headers, body, event handler, error text);
`stream_http_reply` sends the request and streams the reply of any of them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from .._core import (
    ABORTED_TEXT,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
    describe,
    is_credential_header,
)
from ._builder import ReplyBuilder
from ._http import HttpError, HttpRequest, RequestAborted, iter_events, open_stream, redact
from ._sse import SseItem
from ._text import dumps

__all__ = [
    "ProviderError",
    "WireApi",
    "api_key_for",
    "default_max_tokens",
    "http_status_text",
    "post_json",
    "stream_http_reply",
]

_log = logging.getLogger(__name__)

EventHandler = Callable[[ReplyBuilder, Iterator[SseItem]], Iterator[AssistantMessageEvent]]
"""Turns a reply's server-sent events into the event protocol, through the builder."""


class ProviderError(Exception):
    """A failure reported by the provider inside the stream; its text becomes `error_message`."""


@attrs.frozen
class WireApi:
    """One HTTP wire API: how to ask for a reply and how to read it.

    Attributes:
        url: The endpoint for a model.
        headers: The API's own headers for a model and key (the key's header among them).
        body: The JSON request body for a call.
        handle: Reads the events into the builder and yields the protocol events; raises
            `ProviderError` for a failure the server reports inside the stream.
        http_error_text: The `error_message` of a non-2xx answer (`status` is never None:
            connection errors keep their own text).
        auto_close: Whether a new block closes the open one (False: blocks may interleave and
            close only when the server says so).
    """

    url: Callable[[Model], str]
    headers: Callable[[Model, str], dict[str, str]]
    body: Callable[[Model, Context, StreamOptions], Any]
    handle: EventHandler
    http_error_text: Callable[[HttpError], str]
    auto_close: bool = True


def api_key_for(model: Model, options: StreamOptions) -> str:
    """The key to send: the option, else the provider's environment variable.

    Raises `MissingApiKeyError` naming the variable; servers on this machine need no key.
    """
    from .models import require_api_key

    return require_api_key(model.provider, options.api_key, base_url=model.base_url)


def default_max_tokens(model: Model, options: StreamOptions) -> int:
    """`options.max_tokens`, else the model's limit capped at 32,000."""
    return options.max_tokens or min(model.max_tokens, 32_000)


def secrets_of(api_key: str, model: Model, options: StreamOptions) -> tuple[str, ...]:
    """What to redact from error text: the key and credential-like header values.

    A key may come in `model.headers` or `options.headers` (`Authorization: Bearer ...`,
    `x-api-key`) rather than as `api_key`; servers echo those back just the same.
    """
    from .models import is_placeholder_key

    # The placeholder sent to local servers is no secret: redacting it would mangle any
    # "none" in their messages ('model "nonexistent" not found').
    found = [] if is_placeholder_key(api_key) else [api_key]
    for headers in (model.headers, options.headers):
        for name, value in (headers or {}).items():
            if is_credential_header(name):
                found.append(value)
                found.append(value.partition(" ")[2])  # the credential after "Bearer "
    return tuple(secret for secret in found if len(secret.strip()) >= 4)


def http_status_text(error: HttpError, from_json: Callable[[Any], str | None]) -> str:
    """`"<status> <text>"` for a non-2xx answer, as the official SDKs word it.

    An empty body is `"<status> status code (no body)"`; a JSON body gives `from_json(payload)`
    as the text; a body that is no JSON, or a None from `from_json`, keeps the message as it is
    (`"<status> <body>"`, or a retry refusal).
    """
    if not error.body:
        return f"{error.status} status code (no body)"
    try:
        payload = json.loads(error.body)
    except ValueError:
        return str(error)
    text = from_json(payload)
    return str(error) if text is None else f"{error.status} {text}"


def post_json(url: str, body: Any, headers: Mapping[str, str], model: Model,
              options: StreamOptions, api_key: str) -> Any:
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


def _http_error_message(wire: WireApi, error: HttpError) -> str:
    if error.status is None:  # a connection error
        return str(error)
    message = wire.http_error_text(error)
    refusal = error.refusal
    if refusal is not None and not message.startswith(refusal.text):
        message = f"{refusal.text} {message}"  # why we did not wait, then why it failed
    return message


def stream_http_reply(
    wire: WireApi, model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream `model`'s reply to `context` over `wire`, as a lazily consumed stream.

    The API key is looked up now (a missing one raises `MissingApiKeyError`); the body is built
    and sent when the stream is first read. Every later failure ends the stream with an `error`
    event carrying what arrived so far.
    """
    api_key = api_key_for(model, options)
    signal = options.signal

    def events() -> Iterator[AssistantMessageEvent]:
        builder = ReplyBuilder(model, wire.auto_close)
        try:
            response = post_json(wire.url(model), wire.body(model, context, options),
                                 wire.headers(model, api_key), model, options, api_key)
            yield builder.start()
            yield from wire.handle(builder, iter_events(response, signal))
            if signal is not None and signal.aborted:
                raise RequestAborted(ABORTED_TEXT)
            yield from builder.done()
        except Exception as exc:
            aborted = signal is not None and signal.aborted
            if aborted or isinstance(exc, RequestAborted):
                message, aborted = ABORTED_TEXT, True
            elif isinstance(exc, HttpError):
                message = _http_error_message(wire, exc)
            elif isinstance(exc, json.JSONDecodeError):
                message = f"invalid JSON from the provider: {exc.msg}"
            else:
                message = describe(exc)
                if not isinstance(exc, ProviderError):
                    _log.debug("%s stream failed", model.api, exc_info=True)
            yield builder.error(redact(message, secrets_of(api_key, model, options)), aborted)

    return AssistantMessageEventStream.from_iterator(events())
