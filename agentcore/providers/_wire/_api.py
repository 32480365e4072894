"""The one seam every HTTP wire API plugs into, and the request/reply skeleton that drives it.

A wire module describes its API as a `WireApi` (URL, headers, body, how to decode the reply's
body, how to read the items, error text, and optionally how to sign each request, and for JSON
events the kinds of plain delta the framework reads by template); `stream_http_reply` sends the
request and streams the reply of any of them.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import attrs

from ..._core import (
    ABORTED_TEXT,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
    describe,
    is_credential_header,
)
from ..._http import (
    HttpClient,
    HttpError,
    HttpRequest,
    Opening,
    Outgoing,
    RequestAborted,
    RequestsTransport,
    TransportBug,
    default_client,
    redact,
)
from .._keys import is_placeholder_key, require_api_key
from ._builder import ReplyBuilder
from ._deltas import Deltas, apply_deltas
from ._framing import Decode
from ._reading import finish_body, iter_events
from ._sse import ServerSentEvent, UnframedLines, decode_sse
from ._text import dumps

__all__ = [
    "ProviderError",
    "WireApi",
    "api_key_for",
    "client_for",
    "default_max_tokens",
    "http_status_text",
    "message_text",
    "post_json",
    "stream_http_reply",
]

_log = logging.getLogger(__name__)

EventHandler = Callable[[ReplyBuilder, Iterator[Any]], Iterator[AssistantMessageEvent]]
"""Turns the items of a reply's body (what `WireApi.decode` makes of it: `SseItem`s by default;
with `WireApi.deltas`, what `apply_deltas` makes of those) into the event protocol, through the
builder."""


class ProviderError(Exception):
    """A failure reported by the provider inside the stream; its text becomes `error_message`."""


_MALFORMED = (KeyError, IndexError, TypeError, AttributeError)
"""What a handler raises on JSON of an unexpected shape (`{"choices": []}` indexed at 0)."""
_EXCERPT = 160
_BAD_HEADER_CHAR = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@attrs.frozen
class WireApi:
    """One HTTP wire API: how to ask for a reply and how to read it.

    Attributes:
        url: The endpoint for a model.
        headers: The API's own headers for a model and key (the key's header among them).
        body: The JSON request body for a call.
        handle: Reads the events into the builder and yields the protocol events; raises
            `ProviderError` for a failure the server reports inside the stream. With `deltas`,
            it reads `Delta`s, `Chunk`s and the unframed lines (`apply_deltas`), and parses
            nothing itself.
        http_error_text: The `error_message` of a non-2xx answer (`status` is never None:
            connection errors keep their own text).
        auto_close: Whether a new block closes the open one (False: blocks may interleave and
            close only when the server says so).
        decode: Makes the decoder of one reply body from the largest item allowed
            (`max_event_bytes`): its items are what `handle` reads. Server-Sent Events by
            default; a binary framing is another decoder (`_framing.Decoder`).
        sign: Sees each attempt at the request as it will be sent (URL, headers with `on_payload`
            and every header applied, the exact body bytes) and returns it signed, e.g. with
            headers added; called again for every retry. Credential headers it adds are
            redacted from error text like the API key.
        api_key: The credential handed to `headers`, looked up when the stream is made (before
            any request): `api_key_for` by default; an API with other credentials (a cloud's
            token, say) brings its own, raising `MissingApiKeyError` naming what to set. What
            it returns is redacted from error text.
        opening: Reads the start of each 2xx body before the reply is streamed, for an API
            that reports errors such as throttling inside a 200 reply (`_http.Opening`): an
            error it finds is retried like the HTTP answer it stands for. None: no such check.
        deltas: For an API whose Server-Sent Events carry JSON: the framework parses each
            event's data once and reads the plain deltas of these kinds by learned templates
            (`_deltas`). None: `handle` reads the decoder's items as they are.
    """

    url: Callable[[Model], str]
    headers: Callable[[Model, str], dict[str, str]]
    body: Callable[[Model, Context, StreamOptions], Any]
    handle: EventHandler
    http_error_text: Callable[[HttpError], str]
    auto_close: bool = True
    decode: Decode = decode_sse
    sign: Callable[[Outgoing], Outgoing] | None = None
    api_key: Callable[[Model, StreamOptions], str] = attrs.field(
        default=attrs.Factory(lambda: api_key_for))
    opening: Opening | None = None
    deltas: Deltas | None = None


def api_key_for(model: Model, options: StreamOptions) -> str:
    """The key to send: the option, else the provider's environment variable.

    Raises `MissingApiKeyError` naming the variable; servers on this machine need no key.
    """
    return require_api_key(model.provider, options.api_key, base_url=model.base_url)


def default_max_tokens(model: Model, options: StreamOptions) -> int:
    """`options.max_tokens`, else the model's limit capped at 32,000."""
    return options.max_tokens or min(model.max_tokens, 32_000)


def secrets_of(api_key: str, model: Model, options: StreamOptions) -> tuple[str, ...]:
    """What to redact from error text: the key and credential-like header values.

    A key may come in `model.headers` or `options.headers` (`Authorization: Bearer ...`,
    `x-api-key`) rather than as `api_key`; servers echo those back just the same. HTTP Basic
    credentials count with their decoded password too.
    """
    # The placeholder sent to local servers is no secret: redacting it would mangle any
    # "none" in their messages ('model "nonexistent" not found').
    found = [] if is_placeholder_key(api_key) else [api_key]
    for headers in (model.headers, options.headers):
        for name, value in (headers or {}).items():
            if is_credential_header(name):
                scheme, _, credential = value.partition(" ")
                found += [value, credential]  # the credential after "Bearer "
                if scheme.lower() == "basic":
                    found += _basic_parts(credential)
    return tuple(secret for secret in found if len(secret.strip()) >= 4)


def _basic_parts(credential: str) -> list[str]:
    """`user:password` and the password of HTTP Basic credentials, when they decode."""
    try:
        decoded = base64.b64decode(credential.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return []
    return [decoded, decoded.partition(":")[2]]


def _header_problem(value: str) -> str | None:
    """Why `value` cannot be sent as an HTTP header value, or None when it can."""
    if value.isascii() and value.isprintable():  # the common case: only a space can be wrong
        return "it starts with whitespace" if value[:1] == " " else None
    if "\n" in value or "\r" in value:
        return "it contains a line break (often a trailing newline copied with the key)"
    if _BAD_HEADER_CHAR.search(value):
        return "it contains a control character"
    if value[:1].isspace():
        return "it starts with whitespace"
    if not value.isascii() and any(ord(c) > 0xFF for c in value):
        return "it contains a character that is not Latin-1"
    return None


def check_headers(headers: Mapping[str, str], api_key: str, model: Model) -> None:
    """Raise `ProviderError` naming the provider and the problem for a header that cannot be sent.

    The key is checked by itself too (a leading space hides after `Bearer `). The value is never
    shown: it is usually the key, and requests' own error would quote it.
    """
    where = f"{model.provider} ({model.api})"
    if api_key and any(api_key in value for value in headers.values()):
        problem = _header_problem(api_key)
        if problem is not None:
            raise ProviderError(f"{where}: the API key is not a valid HTTP header value: "
                                f"{problem}")
    for name, value in headers.items():
        problem = _header_problem(value)
        if problem is not None:
            raise ProviderError(f"{where}: the value of header {name!r} is not a valid HTTP "
                                f"header value: {problem}")


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


def message_text(message: Any, error: Any) -> str:
    """An error's text: its `message` when that is a string with something in it, else JSON.

    The JSON, compacted, is that of a `message` of another kind, or of the whole `error` (the
    object the message came in) when the message is empty, blank or missing, as OpenAI's SDKs
    word it: llama-cpp-python's 500 `{"error": {"message": "", "type":
    "internal_server_error"}}` reads `500 {"message":"","type":"internal_server_error"}`, not
    `500 ` (an empty message says nothing, the object around it does). Every wire API's
    `http_error_text` reads messages through this.
    """
    if isinstance(message, str) and message.strip():
        return message
    return dumps(message if message and not isinstance(message, str) else error)


def post_json(url: str, body: Any, headers: Mapping[str, str], model: Model,
              options: StreamOptions, api_key: str, client: HttpClient, *,
              sign: Callable[[Outgoing], Outgoing] | None = None,
              opening: Opening | None = None) -> Any:
    """Apply `on_payload`, check the headers, POST the JSON and return the open 2xx response.

    `sign` signs each attempt (`WireApi.sign`); `opening` reads the start of a 2xx body
    (`WireApi.opening`).
    """
    if options.on_payload is not None:
        replaced = options.on_payload(body, model)
        if replaced is not None:
            body = replaced
    merged = {"Content-Type": "application/json", "Accept": "text/event-stream", **headers}
    merged.update(model.headers or {})
    merged.update(options.headers or {})
    check_headers(merged, api_key, model)
    request = HttpRequest(
        url, dumps(body).encode("utf-8"), merged, signal=options.signal,
        timeout=options.timeout, max_retries=options.max_retries,
        max_retry_delay_ms=options.max_retry_delay_ms, on_response=options.on_response,
        secrets=secrets_of(api_key, model, options), sign=sign, opening=opening,
    )
    return client.open(request)


def client_for(options: StreamOptions) -> HttpClient:
    """The client a request goes through.

    `options.http_client`, else one over `options.http_session` (the caller's, never closed
    here), else the process's shared one (`default_client()`).
    """
    if options.http_client is not None:
        return cast(HttpClient, options.http_client)
    if options.http_session is not None:
        return HttpClient(RequestsTransport(options.http_session))
    return default_client()


def _http_error_message(wire: WireApi, error: HttpError) -> str:
    if error.status is None:  # a connection error
        return str(error)
    if error.invalid is not None:  # the server's validation error, in short
        return f"{error.status} {error.invalid}"
    message = wire.http_error_text(error)
    refusal = error.refusal
    if refusal is not None and not message.startswith(refusal.text):
        message = f"{refusal.text} {message}"  # why we did not wait, then why it failed
    return message


def _unexpected(model: Model, exc: BaseException, item: Any) -> str:
    """The message for a handler that met JSON of a shape it did not expect."""
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    message = f"unexpected response from {model.provider} ({model.api}): {what}"
    if item is not None:
        if isinstance(item, ServerSentEvent):
            text = item.data
        elif isinstance(item, UnframedLines):
            text = item.text
        else:  # an item of another decoder
            text = repr(item)
        excerpt = text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."
        message += f", in {excerpt!r}"
    return message


def stream_http_reply(
    wire: WireApi, model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream `model`'s reply to `context` over `wire`, as a lazily consumed stream.

    The API key is looked up now (a missing one raises `MissingApiKeyError`); the body is built
    and sent when the stream is first read. Every later failure ends the stream with an `error`
    event carrying what arrived so far. The request goes through `client_for(options)`.
    """
    api_key = wire.api_key(model, options)
    signal = options.signal

    def events() -> Iterator[AssistantMessageEvent]:
        builder = ReplyBuilder(model, wire.auto_close)
        last: list[Any] = [None]
        reading = False
        try:
            response = post_json(wire.url(model), wire.body(model, context, options),
                                 wire.headers(model, api_key), model, options, api_key,
                                 client_for(options), sign=wire.sign, opening=wire.opening)
            yield builder.start()
            items = iter_events(response, signal, options.max_event_bytes, last, wire.decode)
            reading = True
            deltas = wire.deltas
            yield from wire.handle(
                builder, items if deltas is None else apply_deltas(items, deltas))
            reading = False
            finish_body(items, response)
            if signal is not None and signal.aborted:
                raise RequestAborted(ABORTED_TEXT)
            yield from builder.done()
        except Exception as exc:
            secrets = secrets_of(api_key, model, options)
            aborted = signal is not None and signal.aborted
            if aborted or isinstance(exc, RequestAborted):
                message, aborted = ABORTED_TEXT, True
            elif isinstance(exc, HttpError):
                message = _http_error_message(wire, exc)
            elif isinstance(exc, TransportBug):
                message = f"the HTTP transport failed (a bug, not the connection): {exc}"
            elif isinstance(exc, json.JSONDecodeError):
                message = f"invalid JSON from the provider: {exc.msg}"
            elif reading and isinstance(exc, _MALFORMED):
                message = _unexpected(model, exc, last[0])
            else:
                message = describe(exc)
            if not isinstance(exc, (ProviderError, RequestAborted, HttpError)):
                # The traceback as redacted text: a record's exc_info would be formatted
                # later, by any handler, with the exception's own (unredacted) message.
                trace = "".join(traceback.format_exception(exc))
                level = logging.ERROR if isinstance(exc, TransportBug) else logging.DEBUG
                _log.log(level, "%s stream failed:\n%s", model.api, redact(trace, secrets))
            yield builder.error(redact(message, secrets), aborted)

    return AssistantMessageEventStream.from_iterator(events())
