"""AWS Bedrock ConverseStream (`bedrock-converse-stream`), provider `amazon-bedrock`.

`POST {endpoint}/model/{model id}/converse-stream`, answered by an AWS event stream
(`application/vnd.amazon.eventstream`, decoded by `_eventstream`). The request body is built by
`_bedrock_body`; the endpoint, region, credentials and SigV4 signing come from `_aws` (extra
`bedrock`: botocore, needed unless a Bedrock API key is used).

The reply: text, tool calls (arguments as partial JSON), reasoning with its signature or redacted
(Claude's thinking), usage with cache reads and writes, and every stop reason: `end_turn` and
`stop_sequence` stop, `tool_use`, `max_tokens` and `model_context_window_exceeded` (the reply
was cut off), while `guardrail_intervened`, `content_filtered`, `malformed_model_output` and
`malformed_tool_use` end the reply as an error saying so (usage kept). An exception in the
stream (`throttlingException`, `serviceUnavailableException`, ...) before any output counts as
its HTTP answer (429, 503, ...) and is retried like one; after output it ends the reply as an
error naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs

from .._core import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    Model,
    StopReason,
    StreamOptions,
    Usage,
)
from .._http import HttpError, StreamedError
from ._bedrock_body import build_body
from ._clouds import aws
from ._wire import (
    EventMessage,
    EventStreamDecoder,
    FramingError,
    ProviderError,
    ReplyBuilder,
    WireApi,
    decode_eventstream,
    decode_json,
    http_status_text,
    message_text,
    stream_http_reply,
)

__all__ = ["build_body", "stream_bedrock"]

_STOP = {
    "end_turn": StopReason.STOP, "stop_sequence": StopReason.STOP,
    "tool_use": StopReason.TOOL_USE, "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
}
_FAILED_STOP = {
    "guardrail_intervened": "a guardrail intervened and blocked the reply",
    "content_filtered": "the reply was blocked by Bedrock's content filter",
    "malformed_model_output": "the model's output was malformed",
    "malformed_tool_use": "the model made a malformed tool call",
}
_STATUS = {  # an exception in the stream, as the HTTP answer it stands for (service-2.json)
    "throttlingException": 429, "serviceUnavailableException": 503,
    "internalServerException": 500, "modelStreamErrorException": 424,
    "validationException": 400,
}
_RETRIED = frozenset({"throttlingException", "serviceUnavailableException",
                      "internalServerException"})
_REDACTED = "[Reasoning redacted]"
_ERROR_TYPE = "x-amzn-ErrorType"


def _kind_name(kind: str) -> str:
    """`ThrottlingException` for `throttlingException` (the name its HTTP answer carries)."""
    return kind[:1].upper() + kind[1:]


def _exception_text(message: EventMessage) -> str:
    """`"ThrottlingException: Too many requests"` for an exception (or error) message."""
    headers = message.headers
    kind = str(headers.get(":exception-type") or headers.get(":error-code") or "error")
    try:
        payload = json.loads(message.payload) if message.payload else {}
    except ValueError:
        payload = {}
    text = headers.get(":error-message")
    if isinstance(payload, dict):
        text = payload.get("message") or payload.get("Message") or text
        original = payload.get("originalMessage")
        if original:
            status = payload.get("originalStatusCode")
            text = f"{text} ({f'{status}: ' if status else ''}{original})"
    return f"{_kind_name(kind)}: {text or message.payload.decode('utf-8', 'replace')}"


def _usage(builder: ReplyBuilder, raw: dict[str, Any]) -> None:
    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else 0

    builder.set_usage(Usage(input=count("inputTokens"), output=count("outputTokens"),
                            cache_read=count("cacheReadInputTokens"),
                            cache_write=count("cacheWriteInputTokens")))


def _delta(builder: ReplyBuilder, index: Any, delta: dict[str, Any]) -> Iterator[
        AssistantMessageEvent]:
    if "toolUse" in delta:
        yield from builder.tool_call(index, args_delta=(delta["toolUse"] or {}).get("input") or "",
                                     always_emit=True)
    elif "reasoningContent" in delta:
        reasoning = delta["reasoningContent"] or {}
        if "redactedContent" in reasoning:
            first = not builder.has(index)
            yield from builder.thinking(index, _REDACTED if first else "", redacted=True)
            builder.append_signature(index, reasoning["redactedContent"] or "")
        elif "signature" in reasoning:
            yield from builder.thinking(index, "")
            builder.append_signature(index, reasoning["signature"] or "")
        else:
            yield from builder.thinking(index, reasoning.get("text") or "")


def _handle(builder: ReplyBuilder, messages: Iterator[EventMessage]) -> Iterator[
        AssistantMessageEvent]:
    failed: str | None = None
    for message in messages:
        kind = message.headers.get(":message-type")
        if kind in ("exception", "error"):
            text = _exception_text(message)
            if message.headers.get(":exception-type") in _RETRIED:
                text += " (not retried: part of the reply had already arrived)"
            raise ProviderError(text)
        if kind != "event":
            continue
        event = message.headers.get(":event-type")
        data = decode_json(message.payload.decode("utf-8")) if message.payload else {}
        if event == "contentBlockDelta":
            delta = data.get("delta") or {}
            piece = delta.get("text")
            if piece is not None:  # the hot path: no generator of its own
                yield from builder.text(data.get("contentBlockIndex"), piece)
            else:
                yield from _delta(builder, data.get("contentBlockIndex"), delta)
        elif event == "contentBlockStart":
            start = (data.get("start") or {}).get("toolUse")
            if start is not None:
                yield from builder.tool_call(data.get("contentBlockIndex"),
                                             call_id=start.get("toolUseId"),
                                             name=start.get("name"))
        elif event == "contentBlockStop":
            yield from builder.end(data.get("contentBlockIndex"))
        elif event == "messageStop":
            reason = data.get("stopReason")
            mapped = _STOP.get(reason) if isinstance(reason, str) else None
            if mapped is not None:
                builder.stop_reason = mapped
            else:  # the usage that follows is kept: fail at the end
                failed = _FAILED_STOP.get(str(reason), "the reply ended with an unknown stop "
                                                       "reason")
                failed = f"{failed} (stop reason {reason!r})"
        elif event == "metadata":
            _usage(builder, data.get("usage") or {})
    if failed is not None:
        raise ProviderError(failed)
    if builder.stop_reason is None:
        raise ProviderError("Bedrock stream ended without a stop reason")


def _opening(chunks: Iterator[bytes]) -> tuple[bytes, StreamedError | None]:
    """Read the stream up to its first message after `messageStart` (`_http.Opening`).

    An exception there is answered as its HTTP status, so that a throttled request is retried.
    """
    decoder = EventStreamDecoder()
    head = bytearray()
    for chunk in chunks:
        head += chunk
        try:
            messages = decoder.feed(chunk)
        except FramingError:  # the reply's own decoder says so
            return bytes(head), None
        for message in messages:
            if message.headers.get(":event-type") == "messageStart":
                continue
            kind = str(message.headers.get(":exception-type"))
            if message.headers.get(":message-type") != "exception" or kind not in _STATUS:
                return bytes(head), None
            body = message.payload.decode("utf-8", "replace")
            return bytes(head), StreamedError(_STATUS[kind], body,
                                              {_ERROR_TYPE: _kind_name(kind)})
    return bytes(head), None


def _error_type(headers: dict[str, str]) -> str | None:
    """`ValidationException` from `x-amzn-ErrorType: ValidationException:http://...`."""
    for name, value in headers.items():
        if name.lower() == _ERROR_TYPE.lower() and value:
            return value.split(":", 1)[0]
    return None


def http_error_text(error: HttpError) -> str:
    """`"403 AccessDeniedException: You don't have access to the model..."`.

    An empty message gives the body's JSON instead (`_reply.message_text`).
    """
    kind = _error_type(error.headers)

    def text(payload: Any) -> str | None:
        message = payload.get("message", payload.get("Message")) if isinstance(
            payload, dict) else None
        if not isinstance(message, str):
            return None
        said = message_text(message, payload)
        return f"{kind}: {said}" if kind else said

    return http_status_text(error, text)


_WIRE = WireApi(
    url=lambda model: model.base_url,  # replaced per stream: see `stream_bedrock`
    headers=lambda model, key: {},
    body=build_body,
    handle=_handle,
    http_error_text=http_error_text,
    auto_close=False,
    decode=decode_eventstream,
    opening=_opening,
)
"""Bedrock ConverseStream as a `WireApi`; the endpoint and credentials are each stream's."""


def stream_bedrock(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream a reply from Bedrock's `ConverseStream` for `model`.

    The credentials and the region are found now (see `_aws`): raises `MissingApiKeyError` when
    there are no credentials, `ImportError` when AWS credentials need botocore and it is
    missing, `ValueError` when no region is set (`agentcore.stream` turns the last two into an
    error reply naming what to install or set).
    """
    access = aws.access(model, options)
    wire = attrs.evolve(_WIRE, url=lambda _: access.url, headers=access.headers,
                        sign=None if access.credentials is None else access.sign,
                        api_key=lambda _model, _options: access.key)
    return stream_http_reply(wire, model, context, options)
