"""Google Gemini (`google-generative-ai`): `{base_url}/models/{id}:streamGenerateContent?alt=sse`.

Gemini does not stream tool arguments and sends no call ids (we make unique ones); thought
signatures are replayed to the same model only; a raw JSON error body may follow the events.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator
from typing import Any

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
from .._http import HttpError
from ._wire import (
    Compat,
    ProviderError,
    ReplyBuilder,
    SseItem,
    UnframedLines,
    WireApi,
    check_native_output,
    decode_json,
    default_max_tokens,
    dumps,
    resolve,
    safe_id,
    sanitize,
    stream_http_reply,
    tool_choice,
    tool_result_text,
    transform_messages,
)

__all__ = ["build_body", "handle", "stream_google"]

_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_SKIP_SIGNATURE = "skip_thought_signature_validator"
_counter = itertools.count(1)
_BUDGETS = {  # Gemini 2.5: `thinkingBudget` per level, by `thinking_budgets_family`
    "pro": {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
    "flash": {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
}
_LEVELS = {  # Gemini 3: `thinkingLevel` per level, by `thinking_levels_family`
    "pro": {"minimal": "LOW", "low": "LOW", "medium": "HIGH", "high": "HIGH"},
    "flash": {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"},
}
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY", "tool": "ANY"}
"""`functionCallingConfig.mode` per tool choice (a tool's name adds `allowedFunctionNames`)."""


def _normalize_id(compat: Compat) -> Any:
    def normalize(call_id: str, _: AssistantMessage) -> str:
        return safe_id(call_id)[:64] if compat.function_call_ids else call_id

    return normalize


def _signature(value: str | None, same: bool) -> str | None:
    if not same or not value or len(value) % 4 or not _BASE64.fullmatch(value):
        return None
    return value


def _inline(block: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}


def _model_turn(message: AssistantMessage, model: Model, compat: Compat) -> dict[str, Any] | None:
    same = message.provider == model.provider and message.model == model.id
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                part: dict[str, Any] = {"text": sanitize(block.text)}
                if sig := _signature(block.text_signature, same):
                    part["thoughtSignature"] = sig
                parts.append(part)
        elif isinstance(block, ThinkingContent):
            if not block.thinking.strip():
                continue
            if same:
                part = {"thought": True, "text": sanitize(block.thinking)}
                if sig := _signature(block.thinking_signature, same):
                    part["thoughtSignature"] = sig
            else:
                part = {"text": sanitize(block.thinking)}
            parts.append(part)
        elif isinstance(block, ToolCall):
            call: dict[str, Any] = {"name": block.name, "args": block.arguments}
            if compat.function_call_ids:
                call["id"] = block.id
            part = {"functionCall": call}
            sig = _signature(block.thought_signature, same)
            if sig is None and compat.requires_thought_signatures:
                sig = _SKIP_SIGNATURE
            if sig:
                part["thoughtSignature"] = sig
            parts.append(part)
    return {"role": "model", "parts": parts} if parts else None


def _function_response(result: ToolResultMessage, model: Model,
                       compat: Compat) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    text = tool_result_text(result)
    images = [_inline(b) for b in result.content
              if isinstance(b, ImageContent) and "image" in model.input]
    response: dict[str, Any] = {"name": result.tool_name,
                                "response": {"error" if result.is_error else "output": text}}
    if compat.function_call_ids:
        response["id"] = result.tool_call_id
    extra: list[dict[str, Any]] = []
    if images:
        if compat.images_in_function_responses:
            response["parts"] = images
        else:
            extra = images
    return {"functionResponse": response}, extra


def _contents(context: Context, model: Model, compat: Compat) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    # Older models see result images in a user turn of their own, sent after the whole run of
    # results: Gemini wants every response to one call turn in a single user turn.
    image_turns: list[dict[str, Any]] = []
    for message in transform_messages(context.messages, model, _normalize_id(compat)):
        if image_turns and not isinstance(message, ToolResultMessage):
            out.extend(image_turns)
            image_turns.clear()
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                parts: list[dict[str, Any]] = [{"text": sanitize(message.content)}]
            else:
                parts = [{"text": sanitize(b.text)} if isinstance(b, TextContent) else _inline(b)
                         for b in message.content
                         if isinstance(b, TextContent) or "image" in model.input]
            if parts:
                out.append({"role": "user", "parts": parts})
        elif isinstance(message, AssistantMessage):
            turn = _model_turn(message, model, compat)
            if turn is not None:
                out.append(turn)
        else:
            part, images = _function_response(message, model, compat)
            last = out[-1] if out else None
            if (last is not None and last["role"] == "user"
                    and all("functionResponse" in p for p in last["parts"])):
                last["parts"].append(part)  # consecutive results share one user turn
            else:
                out.append({"role": "user", "parts": [part]})
            if images:
                image_turns.append({"role": "user",
                                    "parts": [{"text": "Tool result image:"}, *images]})
    out.extend(image_turns)
    return out


def _thinking_config(model: Model, compat: Compat,
                     options: StreamOptions) -> dict[str, Any] | None:
    level = options.reasoning
    if not model.reasoning or level is None or level is ThinkingLevel.OFF:
        return None
    name = "high" if level is ThinkingLevel.XHIGH else level.value
    if compat.thinking_levels_family is not None:
        return {"includeThoughts": True,
                "thinkingLevel": _LEVELS[compat.thinking_levels_family][name]}
    family = compat.thinking_budgets_family
    budget = -1 if family is None else _BUDGETS[family][name]  # -1: the model decides
    if options.thinking_budgets and name in options.thinking_budgets:
        budget = options.thinking_budgets[name]
    return {"includeThoughts": True, "thinkingBudget": budget}


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The request body for `context`.

    `options.tool_choice` becomes `toolConfig.functionCallingConfig`: mode `AUTO`, `NONE` or
    `ANY` (`"required"`), and for a tool's name `ANY` with `allowedFunctionNames` (sent only
    with tools); `options.output_schema` becomes `responseJsonSchema` with `responseMimeType`
    `application/json`. Raises `ValueError` for a `tool_choice` naming no tool, or an
    `output_schema` for a model without native output (or without it next to tools: Gemini
    before 3, `compat` `native_output_with_tools`).
    """
    compat = resolve(model)
    body: dict[str, Any] = {"contents": _contents(context, model, compat)}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": sanitize(context.system_prompt)}]}
    config: dict[str, Any] = {"maxOutputTokens": default_max_tokens(model, options)}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    thinking = _thinking_config(model, compat, options)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    if options.output_schema is not None:
        check_native_output(model, with_tools=bool(context.tools))
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = options.output_schema
    body["generationConfig"] = config
    if context.tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
            for t in context.tools]}]
    choice = tool_choice(options, context.tools)
    if choice is not None:
        calling: dict[str, Any] = {"mode": _MODES[choice.mode]}
        if choice.name is not None:
            calling["allowedFunctionNames"] = [choice.name]
        body["toolConfig"] = {"functionCallingConfig": calling}
    return body


_FINISH = {"STOP": StopReason.STOP, "MAX_TOKENS": StopReason.LENGTH}


def _error_message(raw: dict[str, Any]) -> str:
    error = raw.get("error") or {}
    return f"got status: {error.get('status')}. {dumps(raw)}"


def handle(builder: ReplyBuilder, events: Iterator[SseItem]) -> Iterator[
        AssistantMessageEvent]:
    """Read Gemini's events into the builder (`WireApi.handle`; Vertex AI's too)."""
    used_ids: set[str] = set()
    key = 0  # a new block key every time the kind of part changes
    kind: str | None = None
    for sse in events:
        if isinstance(sse, UnframedLines):  # maybe Gemini's raw JSON error body, read as a chunk
            try:
                chunk = json.loads(sse.text)
            except ValueError:
                continue  # noise
        elif not sse.data:
            continue
        else:
            chunk = decode_json(sse.data)
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("error"), dict):
            raise ProviderError(_error_message(chunk))
        if chunk.get("responseId"):
            builder.response_id = chunk["responseId"]
        candidates = chunk.get("candidates") or []
        candidate = candidates[0] if candidates else {}
        for part in (candidate.get("content") or {}).get("parts") or []:
            # Gemini's opaque base64 signature, kept on text, thinking and calls alike.
            signature = part.get("thoughtSignature") or None
            if "text" in part:
                part_kind = "thinking" if part.get("thought") is True else "text"
                if part_kind != kind:
                    key, kind = key + 1, part_kind
                if part_kind == "thinking":
                    yield from builder.thinking(key, part.get("text") or "", signature=signature)
                else:
                    yield from builder.text(key, part.get("text") or "", signature=signature)
                    if not part.get("text"):
                        yield from builder.text_delta_event(key)
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                name = call.get("name") or ""
                call_id = call.get("id")
                if not call_id or call_id in used_ids:
                    call_id = f"{name}_{int(time.time() * 1000)}_{next(_counter)}"
                used_ids.add(call_id)
                key, kind = key + 1, "toolCall"
                yield from builder.tool_call(key, call_id=call_id, name=name,
                                             args_delta=dumps(call.get("args") or {}),
                                             thought_signature=signature)
                yield from builder.end(key)
                kind = None
        usage = chunk.get("usageMetadata")
        if usage:
            cached = usage.get("cachedContentTokenCount") or 0
            builder.set_usage(Usage(
                input=max(0, (usage.get("promptTokenCount") or 0) - cached),
                output=(usage.get("candidatesTokenCount") or 0)
                + (usage.get("thoughtsTokenCount") or 0),
                cache_read=cached))
        finish = candidate.get("finishReason")
        if finish:
            reason = _FINISH.get(finish)
            if reason is None:
                raise ProviderError(f"Provider stopped with: {finish}")
            builder.stop_reason = reason
    if builder.stop_reason is None:
        raise ProviderError("Google stream ended without a finish reason")


def _http_error_text(error: HttpError) -> str:
    """The JSON error body, compacted (a body that is no JSON is wrapped as Gemini would)."""
    try:
        payload = json.loads(error.body)
    except ValueError:
        payload = {"error": {"message": error.body, "code": error.status, "status": "error"}}
    return dumps(payload)


def _url(model: Model) -> str:
    return f"{model.base_url.rstrip('/')}/models/{model.id}:streamGenerateContent?alt=sse"


_WIRE = WireApi(
    url=_url,
    headers=lambda model, key: {"x-goog-api-key": key},
    body=build_body,
    handle=handle,
    http_error_text=_http_error_text,
)
"""Gemini as a `WireApi`."""


def stream_google(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream a reply from Gemini's `streamGenerateContent` endpoint."""
    return stream_http_reply(_WIRE, model, context, options)
