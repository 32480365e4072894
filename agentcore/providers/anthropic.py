"""Anthropic Messages (`anthropic-messages`): `{base_url}/v1/messages`.

Thinking blocks keep their signatures and are replayed to the same model; consecutive tool
results travel in one user message; prompt caching follows `cache_retention`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from .._core import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    ImageContent,
    Message,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .._http import HttpError
from ._wire import (
    Choice,
    Compat,
    DeltaKind,
    Deltas,
    ProviderError,
    ReplyBuilder,
    UnframedLines,
    WireApi,
    anthropic_schema,
    check_native_output,
    dumps,
    http_status_text,
    resolve,
    safe_id,
    sanitize,
    stream_http_reply,
    tool_choice,
    tool_result_text,
    transform_messages,
)

__all__ = ["build_body", "headers_for", "stream_anthropic"]

_log = logging.getLogger(__name__)

API_VERSION = "2023-06-01"
_STOP = {
    "end_turn": StopReason.STOP, "pause_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP, "max_tokens": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
}
_DEFAULT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_REDACTED = "[Reasoning redacted]"


def _normalize_id(call_id: str, _: AssistantMessage) -> str:
    return safe_id(call_id)[:64]


def _cache_control(model: Model, options: StreamOptions) -> dict[str, str] | None:
    retention = options.cache_retention or "short"
    if retention == "none":
        return None
    control = {"type": "ephemeral"}
    if retention == "long" and "api.anthropic.com" in model.base_url:
        control["ttl"] = "1h"
    return control


def _image(block: ImageContent) -> dict[str, Any]:
    return {"type": "image",
            "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}


def _user(message: UserMessage, model: Model) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        text = sanitize(message.content)
        return {"role": "user", "content": text} if text.strip() else None
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": sanitize(block.text)})
        elif "image" in model.input:
            blocks.append(_image(block))
    return {"role": "user", "content": blocks} if blocks else None


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": sanitize(block.text)})
        elif isinstance(block, ThinkingContent):
            # The signature is Anthropic's own: the `signature` of a thinking block, or the
            # encrypted `data` of a redacted one.
            if block.redacted:
                blocks.append({"type": "redacted_thinking", "data": block.thinking_signature})
            elif not block.thinking.strip():
                continue
            elif not block.thinking_signature:  # e.g. cut off by an abort: unverifiable
                blocks.append({"type": "text", "text": sanitize(block.thinking)})
            else:
                blocks.append({"type": "thinking", "thinking": sanitize(block.thinking),
                               "signature": block.thinking_signature})
        elif isinstance(block, ToolCall):
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name,
                           "input": block.arguments})
    return {"role": "assistant", "content": blocks} if blocks else None


def _tool_result(result: ToolResultMessage, model: Model) -> dict[str, Any]:
    text = tool_result_text(result)
    images = [b for b in result.content if isinstance(b, ImageContent)]
    content: Any = text
    if images and "image" in model.input:
        content = [{"type": "text", "text": text}, *(_image(b) for b in images)]
    return {"type": "tool_result", "tool_use_id": result.tool_call_id, "content": content,
            "is_error": result.is_error}


def _messages(messages: list[Message], model: Model) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in transform_messages(messages, model, _normalize_id):
        if isinstance(message, ToolResultMessage):
            result = _tool_result(message, model)
            last = out[-1] if out else None
            if (last is not None and last["role"] == "user" and isinstance(last["content"], list)
                    and all(b.get("type") == "tool_result" for b in last["content"])):
                last["content"].append(result)  # consecutive results share one user message
            else:
                out.append({"role": "user", "content": [result]})
            continue
        converted = (_user(message, model) if isinstance(message, UserMessage)
                     else _assistant(message))
        if converted is not None:
            out.append(converted)
    return out


def _mark_cache(messages: list[dict[str, Any]], control: dict[str, str]) -> None:
    if not messages or messages[-1]["role"] != "user":
        return
    last = messages[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    if last["content"] and last["content"][-1].get("type") in ("text", "image", "tool_result"):
        last["content"][-1] = {**last["content"][-1], "cache_control": control}


def _thinking(body: dict[str, Any], model: Model, compat: Compat,
              options: StreamOptions, forced: bool) -> bool:
    """Add the thinking parameters; True when thinking is on.

    With a `forced` tool call, extended thinking (a token budget) stays off: Anthropic rejects
    a forced tool choice with it. Adaptive thinking takes one (the model then skips thinking).
    """
    level = options.reasoning
    if not model.reasoning or level is None or level is ThinkingLevel.OFF:
        return False
    if compat.adaptive_thinking:  # an effort level instead of a token budget
        effort = {"minimal": "low", "xhigh": compat.xhigh_effort}.get(level.value, level.value)
        body["thinking"] = {"type": "adaptive"}
        body["output_config"] = {"effort": effort}
        return True
    if forced:
        _log.debug("%s: thinking left off for this request: its tool_choice %r forces a tool "
                   "call, which Anthropic rejects with extended thinking", model.id,
                   options.tool_choice)
        return False
    budget, body["max_tokens"] = thinking_budget(model, options, level, body["max_tokens"])
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return True


def thinking_budget(model: Model, options: StreamOptions, level: ThinkingLevel,
                    max_tokens: int) -> tuple[int, int]:
    """Claude's extended thinking at `level`: `(budget_tokens, max_tokens)`, here and on Bedrock.

    The budget is the level's in `options.thinking_budgets`, else the default (`xhigh` counts as
    `high`); it comes on top of `max_tokens`, capped at the model's limit, and when that cap
    leaves no room for an answer the budget shrinks to leave 1,024 tokens for it.
    """
    budgets = {**_DEFAULT_BUDGETS, **(options.thinking_budgets or {})}
    budget = budgets["high" if level is ThinkingLevel.XHIGH else level.value]
    max_tokens = min(max_tokens + budget, model.max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - 1024)
    return budget, max_tokens


def _tool_choice(choice: Choice) -> dict[str, str]:
    """Anthropic's `tool_choice` for `choice`: `"required"` is `any`, a tool's name `tool`."""
    if choice.name is not None:
        return {"type": "tool", "name": choice.name}
    return {"type": "any" if choice.mode == "required" else choice.mode}


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The request body for `context`.

    `options.tool_choice` becomes `tool_choice` (`auto`, `none`, `any` for `"required"`, or
    `{"type": "tool", "name": ...}`), sent only with tools. A forced choice (`any`, `tool`)
    leaves extended thinking off for that request (Anthropic rejects the two together; a debug
    log says so); adaptive thinking stays on. `options.output_schema` becomes structured
    output, `output_config.format` `{"type": "json_schema", "schema": ...}` (generally
    available, no beta header: https://platform.claude.com/docs/en/build-with-claude/structured-outputs),
    the schema fitted to Anthropic's limits by `_choice.anthropic_schema`. Raises `ValueError`
    for a `tool_choice` naming no tool, an `output_schema` for a model without native output
    (`compat` `supports_native_output`), or one with an object open to other properties.
    """
    compat = resolve(model)
    choice = tool_choice(options, context.tools)
    control = _cache_control(model, options)
    max_tokens = options.max_tokens or min(model.max_tokens, 32_000)
    body: dict[str, Any] = {"model": model.id,
                            "messages": _messages(list(context.messages), model),
                            "max_tokens": max_tokens, "stream": True}
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": sanitize(context.system_prompt)}
        if control:
            system["cache_control"] = control
        body["system"] = [system]
    if control:
        _mark_cache(body["messages"], control)
    if context.tools:
        body["tools"] = [{"name": t.name, "description": t.description, "input_schema": {
            "type": "object", "properties": t.parameters.get("properties", {}),
            "required": t.parameters.get("required", [])}} for t in context.tools]
    if choice is not None:
        body["tool_choice"] = _tool_choice(choice)
    forced = choice is not None and choice.mode in ("required", "tool")
    thinking = _thinking(body, model, compat, options, forced)
    if options.output_schema is not None:
        check_native_output(model, with_tools=bool(context.tools))
        body.setdefault("output_config", {})["format"] = {
            "type": "json_schema", "schema": anthropic_schema(options.output_schema)}
    if options.temperature is not None and not thinking:
        body["temperature"] = options.temperature
    user_id = (options.metadata or {}).get("user_id")
    if isinstance(user_id, str):
        body["metadata"] = {"user_id": user_id}
    return body


def headers_for(model: Model, key: str, interleaved: bool = True) -> dict[str, str]:
    """The Anthropic headers: the key (or an OAuth token as a bearer), version and betas."""
    betas = ["fine-grained-tool-streaming-2025-05-14"]
    if interleaved and not resolve(model).adaptive_thinking:
        betas.append("interleaved-thinking-2025-05-14")
    headers = {"anthropic-version": API_VERSION, "anthropic-beta": ",".join(betas)}
    if "sk-ant-oat" in key:
        headers["Authorization"] = f"Bearer {key}"
    else:
        headers["x-api-key"] = key
    return headers


def _usage(builder: ReplyBuilder, raw: dict[str, Any]) -> None:
    """Update usage from `raw`, keeping fields it leaves out or sets to null (proxies do)."""

    def pick(key: str, old: int) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else old

    current = builder.usage
    builder.set_usage(Usage(input=pick("input_tokens", current.input),
                            output=pick("output_tokens", current.output),
                            cache_read=pick("cache_read_input_tokens", current.cache_read),
                            cache_write=pick("cache_creation_input_tokens", current.cache_write)))


def _plain_text(data: dict[str, Any]) -> bool:
    """A text delta (`DeltaKind.plain`): handled by its block's index and its text alone.

    Only data that names its own kind: a template reads the data whatever the event's name
    (which gives the kind of data without one).
    """
    delta = data.get("delta")
    return (data.get("type") == "content_block_delta" and delta.__class__ is dict
            and delta.get("type") == "text_delta" and delta.get("text").__class__ is str)


def _handle(builder: ReplyBuilder, items: Iterator[Any]) -> Iterator[AssistantMessageEvent]:
    for item in items:
        if item.__class__ is tuple:  # a text `Delta`, handled as its chunk would be
            _, text, chunk = item
            yield from builder.text(chunk.get("index"), text)
            continue
        if isinstance(item, UnframedLines):
            continue
        data = item.data
        kind = data.get("type") or item.event
        if kind == "message_start":
            message = data.get("message") or {}
            builder.response_id = message.get("id")
            _usage(builder, message.get("usage") or {})
        elif kind == "content_block_start":
            index, block = data.get("index"), data.get("content_block") or {}
            btype = block.get("type")
            if btype == "text":
                yield from builder.text(index, block.get("text") or "")
            elif btype == "thinking":
                yield from builder.thinking(index, block.get("thinking") or "")
            elif btype == "redacted_thinking":
                yield from builder.thinking(index, _REDACTED, signature=block.get("data"),
                                            redacted=True)
            elif btype == "tool_use":
                initial = block.get("input") or {}
                yield from builder.tool_call(index, call_id=block.get("id"),
                                             name=block.get("name"),
                                             args_delta=dumps(initial) if initial else "")
        elif kind == "content_block_delta":
            index, delta = data.get("index"), data.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                yield from builder.text(index, delta.get("text") or "")
            elif dtype == "thinking_delta":
                yield from builder.thinking(index, delta.get("thinking") or "")
            elif dtype == "input_json_delta":
                yield from builder.tool_call(index, args_delta=delta.get("partial_json") or "",
                                             always_emit=True)
            elif dtype == "signature_delta":
                builder.append_signature(index, delta.get("signature") or "")
        elif kind == "content_block_stop":
            yield from builder.end(data.get("index"))
        elif kind == "message_delta":
            _usage(builder, data.get("usage") or {})  # first: an error reply keeps it too
            reason = (data.get("delta") or {}).get("stop_reason")
            if reason:
                mapped = _STOP.get(reason)
                if mapped is None:
                    if reason == "refusal":
                        raise ProviderError("The model refused to complete the request")
                    if reason == "sensitive":
                        raise ProviderError("Provider stopped with: sensitive")
                    raise ProviderError(f"Unhandled stop reason: {reason}")
                builder.stop_reason = mapped
        elif kind == "error":
            raise ProviderError(dumps(data))
    if builder.stop_reason is None:
        raise ProviderError("Anthropic stream ended without a stop reason")


def _http_error_text(error: HttpError) -> str:
    """`"<status> <body JSON>"`, compacted, as the official SDK words it."""
    return http_status_text(error, dumps)


_WIRE = WireApi(
    url=lambda model: f"{model.base_url.rstrip('/')}/v1/messages",
    headers=headers_for,
    body=build_body,
    handle=_handle,
    http_error_text=_http_error_text,
    deltas=Deltas((DeltaKind("text", ("delta", "text"), _plain_text),)),
)
"""Anthropic Messages as a `WireApi`."""


def stream_anthropic(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream a reply from `{base_url}/v1/messages`."""
    return stream_http_reply(_WIRE, model, context, options)
