"""OpenAI Responses (`openai-responses`): `{base_url}/responses` with typed stream events.

Reasoning items are kept whole (as JSON in `thinking_signature`) and replayed verbatim, tool-call
ids are `call_id|item_id`, and text blocks remember their message item id. Azure OpenAI serves
the same API at its v1 endpoint (`_azure`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import attrs

from .._core import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    ImageContent,
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
from ._clouds import AZURE_PROVIDER, filter_text, is_azure
from ._openai import azure_wire, error_text, http_error_text
from ._wire import (
    OUTPUT_NAME,
    ProviderError,
    ReplyBuilder,
    SseItem,
    UnframedLines,
    WireApi,
    check_native_output,
    decode_json,
    default_max_tokens,
    dumps,
    is_same_model,
    json_schema_format,
    resolve,
    safe_id,
    sanitize,
    short_hash,
    stream_http_reply,
    tool_choice,
    tool_result_text,
    transform_messages,
)

__all__ = ["build_body", "stream_openai_responses"]

_TIER_MULTIPLIER = {"flex": 0.5, "priority": 2.0}


def _normalize_id(model: Model) -> Any:
    def normalize(call_id: str, _: AssistantMessage) -> str:
        if (model.provider not in ("openai", "openai-codex", "opencode", AZURE_PROVIDER)
                or "|" not in call_id):
            return call_id
        call, item = call_id.split("|", 1)
        call = safe_id(call)[:64].rstrip("_")
        item = safe_id(item)
        if not item.startswith("fc"):
            item = f"fc_{item}"
        return f"{call}|{item[:64].rstrip('_')}"

    return normalize


def _image(block: ImageContent) -> dict[str, Any]:
    return {"type": "input_image", "detail": "auto",
            "image_url": f"data:{block.mime_type};base64,{block.data}"}


def _text_id(signature: str | None, fallback: str) -> tuple[str, str | None]:
    """The message item id (and phase) a text block was streamed in."""
    if not signature:
        return fallback, None
    try:
        parsed = json.loads(signature)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("id"), str):
        item_id, phase = parsed["id"], parsed.get("phase")
    else:
        item_id, phase = signature, None
    if len(item_id) > 64:
        item_id = f"msg_{short_hash(item_id)}"
    return item_id, phase


def _assistant(message: AssistantMessage, model: Model, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    same = is_same_model(message, model)
    foreign_same_api = (not same and message.provider == model.provider
                        and message.api == model.api)
    for block in message.content:
        if isinstance(block, ThinkingContent):
            # Here a thinking signature is the whole reasoning item as JSON (`_item_done`).
            if block.thinking_signature:
                with contextlib.suppress(ValueError):  # not ours: nothing to replay
                    items.append(json.loads(block.thinking_signature))
        elif isinstance(block, TextContent):
            # A text signature is `{"v":1,"id":...}` JSON naming its message item (`_item_done`).
            item_id, phase = _text_id(block.text_signature, f"msg_{n}")
            item: dict[str, Any] = {
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": sanitize(block.text),
                             "annotations": []}],
                "status": "completed", "id": item_id,
            }
            if phase:
                item["phase"] = phase
            items.append(item)
        elif isinstance(block, ToolCall):
            call_id, _, item_id = block.id.partition("|")
            call: dict[str, Any] = {"type": "function_call", "call_id": call_id,
                                    "name": block.name, "arguments": dumps(block.arguments)}
            if item_id and not (foreign_same_api and item_id.startswith("fc_")):
                call["id"] = item_id
            items.append(call)
    return items


def _tool_result(result: ToolResultMessage, model: Model) -> dict[str, Any]:
    images = [b for b in result.content if isinstance(b, ImageContent)]
    output: Any = tool_result_text(result)
    if images and "image" in model.input:
        text = tool_result_text(result, note_images=False)
        output = ([{"type": "input_text", "text": text}] if text else []) + [
            _image(b) for b in images]
    return {"type": "function_call_output", "call_id": result.tool_call_id.partition("|")[0],
            "output": output}


def _input(context: Context, model: Model) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if context.system_prompt:
        items.append({"role": "developer" if model.reasoning else "system",
                      "content": sanitize(context.system_prompt)})
    for n, message in enumerate(transform_messages(context.messages, model, _normalize_id(model))):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                parts: list[dict[str, Any]] = [{"type": "input_text",
                                                "text": sanitize(message.content)}]
            else:
                parts = [{"type": "input_text", "text": sanitize(b.text)}
                         if isinstance(b, TextContent) else _image(b)
                         for b in message.content
                         if isinstance(b, TextContent) or "image" in model.input]
            if parts:
                items.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant(message, model, n))
        else:
            items.append(_tool_result(message, model))
    return items


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The request body for `context`.

    `options.tool_choice` becomes `tool_choice` (`"auto"`, `"none"`, `"required"`, or
    `{"type": "function", "name": ...}`), sent only with tools; `options.output_schema` becomes
    the `json_schema` format of `text`. Raises `ValueError` for a `tool_choice` naming no tool,
    or an `output_schema` for a model without native output.
    """
    compat = resolve(model)
    body: dict[str, Any] = {"model": model.id, "input": _input(context, model), "stream": True,
                            "store": False,
                            "max_output_tokens": max(16, default_max_tokens(model, options))}
    if options.session_id and options.cache_retention != "none":
        body["prompt_cache_key"] = options.session_id
        if options.cache_retention == "long" and "api.openai.com" in model.base_url:
            body["prompt_cache_retention"] = "24h"
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                          "parameters": t.parameters, "strict": False} for t in context.tools]
    choice = tool_choice(options, context.tools)
    if choice is not None:
        body["tool_choice"] = (choice.mode if choice.name is None else
                               {"type": "function", "name": choice.name})
    if options.output_schema is not None:
        check_native_output(model, with_tools=bool(context.tools))
        schema, strict = json_schema_format(options.output_schema)
        body["text"] = {**body.get("text", {}), "format": {
            "type": "json_schema", "name": OUTPUT_NAME, "schema": schema, "strict": strict}}
    level = options.reasoning if options.reasoning is not ThinkingLevel.OFF else None
    if model.reasoning:
        if level is not None:
            effort = compat.xhigh_effort if level is ThinkingLevel.XHIGH else level.value
            body["reasoning"] = {"effort": effort, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        elif compat.lowest_effort:  # otherwise the model reasons by default
            body["reasoning"] = {"effort": compat.lowest_effort}
    return body


def _usage(raw: dict[str, Any]) -> Usage:
    cached = (raw.get("input_tokens_details") or {}).get("cached_tokens") or 0
    return Usage(input=max(0, (raw.get("input_tokens") or 0) - cached),
                 output=raw.get("output_tokens") or 0, cache_read=cached)


def _key(event: dict[str, Any]) -> Any:
    return ("item", event.get("output_index", 0))


def _handle(builder: ReplyBuilder, events: Iterator[SseItem]) -> Iterator[
        AssistantMessageEvent]:
    terminal = False
    for sse in events:
        if isinstance(sse, UnframedLines):  # a raw error body after the events, or noise
            with contextlib.suppress(ValueError):
                raw = json.loads(sse.text)
                if isinstance(raw, dict) and isinstance(raw.get("error"), dict):
                    raise ProviderError(error_text(raw["error"]))
            continue
        if not sse.data:
            continue
        event = decode_json(sse.data)
        if not isinstance(event, dict):
            continue
        kind = event.get("type") or sse.event
        if kind == "response.created":
            builder.response_id = (event.get("response") or {}).get("id")
        elif kind == "response.output_item.added":
            item = event.get("item") or {}
            key = _key(event)
            if item.get("type") == "reasoning":
                yield from builder.thinking(key, "")
            elif item.get("type") == "message":
                yield from builder.text(key, "")
            elif item.get("type") == "function_call":
                yield from builder.tool_call(
                    key, call_id=f"{item.get('call_id', '')}|{item.get('id', '')}",
                    name=item.get("name"), args_delta=item.get("arguments") or "")
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            yield from builder.thinking(_key(event), event.get("delta") or "")
        elif kind == "response.reasoning_summary_part.done":
            yield from builder.thinking(_key(event), "\n\n")
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            yield from builder.text(_key(event), event.get("delta") or "")
        elif kind == "response.function_call_arguments.delta":
            yield from builder.tool_call(_key(event), args_delta=event.get("delta") or "")
        elif kind == "response.function_call_arguments.done":
            builder.replace_args(_key(event), event.get("arguments") or "")
        elif kind == "response.output_item.done":
            yield from _item_done(builder, _key(event), event.get("item") or {})
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response") or {}
            _finish(builder, response)
            terminal = True
        elif kind == "response.failed":
            response = event.get("response") or {}
            error = response.get("error") or {}
            details = response.get("incomplete_details") or {}
            if error:
                raise ProviderError(f"{error.get('code') or 'unknown'}: "
                                    f"{error.get('message') or 'no message'}")
            if details.get("reason"):
                raise ProviderError(f"incomplete: {details['reason']}")
            raise ProviderError("Unknown error (no error details in response)")
        elif kind == "error":
            raise ProviderError(f"Error Code {event.get('code')}: {event.get('message')}")
    if not terminal:
        raise ProviderError("OpenAI Responses stream ended before a terminal response event")


def _item_done(builder: ReplyBuilder, key: Any, item: dict[str, Any]) -> Iterator[
        AssistantMessageEvent]:
    kind = item.get("type")
    if kind == "reasoning":
        summary = [s.get("text", "") for s in item.get("summary") or []]
        if not summary:
            summary = [c.get("text", "") for c in item.get("content") or []]
        if not builder.has(key):
            yield from builder.thinking(key, "")
        builder.replace_text(key, "\n\n".join(summary))
        builder.set_signature(key, dumps(item))  # the whole item, replayed verbatim
    elif kind == "message":
        text = "".join(c.get("text") or c.get("refusal") or "" for c in item.get("content") or [])
        signature: dict[str, Any] = {"v": 1, "id": item.get("id")}
        if item.get("phase"):
            signature["phase"] = item["phase"]
        if not builder.has(key):
            yield from builder.text(key, "")
        builder.replace_text(key, text)
        builder.set_signature(key, dumps(signature))  # which message item the text was
    elif kind == "function_call":
        if not builder.has(key):
            yield from builder.tool_call(key, call_id=f"{item.get('call_id')}|{item.get('id')}",
                                         name=item.get("name"))
        builder.replace_args(key, item.get("arguments") or "")
    yield from builder.end(key)


def _finish(builder: ReplyBuilder, response: dict[str, Any]) -> None:
    if response.get("id"):
        builder.response_id = response["id"]
    usage = response.get("usage")
    if usage:
        builder.set_usage(_usage(usage))
        tier = response.get("service_tier")
        factor = _TIER_MULTIPLIER.get(tier or "")
        if factor is not None:
            cost = builder.usage.cost
            parts = [cost.input * factor, cost.output * factor, cost.cache_read * factor,
                     cost.cache_write * factor]
            builder.usage = attrs.evolve(builder.usage, cost=attrs.evolve(
                cost, input=parts[0], output=parts[1], cache_read=parts[2],
                cache_write=parts[3], total=sum(parts)))
    status = response.get("status")
    if status == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        if reason == "max_output_tokens":
            builder.stop_reason = StopReason.LENGTH
        else:  # Azure names the categories of a `content_filter` in `content_filters`
            words = filter_text(response) if reason == "content_filter" else None
            raise ProviderError(words or f"Response incomplete: {reason}")
    elif status in ("failed", "cancelled"):
        error = response.get("error") or {}
        raise ProviderError(f"{error.get('code') or status}: {error.get('message') or status}")
    else:
        builder.stop_reason = StopReason.STOP


_WIRE = WireApi(
    url=lambda model: f"{model.base_url.rstrip('/')}/responses",
    headers=lambda model, key: {"Authorization": f"Bearer {key}"},
    body=build_body,
    handle=_handle,
    http_error_text=http_error_text,
    auto_close=False,  # items may interleave (by output_index): each closes at its .done
)
"""Responses as a `WireApi`."""
_AZURE_WIRE = azure_wire(_WIRE, "/responses")
"""Responses on Azure OpenAI: its v1 endpoint, its key or Entra token header."""


def stream_openai_responses(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream a reply from `{base_url}/responses` (Azure's v1 endpoint for Azure)."""
    return stream_http_reply(_AZURE_WIRE if is_azure(model) else _WIRE, model, context, options)
