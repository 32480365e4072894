"""OpenAI Chat Completions (`openai-completions`): OpenAI and every compatible server.

The same code serves OpenAI, Azure OpenAI, Mistral, OpenRouter, Groq, xAI, DeepSeek, Ollama,
vLLM and llama.cpp's server; their differences are `Compat` flags detected from the server and
set by the model's `compat` (see `_openai` and `_compat`), and Azure's endpoint and credential
(`_azure`).
"""

from __future__ import annotations

import itertools
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
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ._clouds import AZURE_PROVIDER, filter_text, is_azure
from ._openai import (
    azure_wire,
    error_text,
    http_error_text,
    loads_or_none,
    mistral_ids,
    resolve_compat,
)
from ._wire import (
    OUTPUT_NAME,
    Compat,
    DeltaKind,
    Deltas,
    ProviderError,
    ReplyBuilder,
    UnframedLines,
    WireApi,
    check_native_output,
    default_max_tokens,
    dumps,
    json_schema_format,
    safe_id,
    sanitize,
    short_hash,
    stream_http_reply,
    tool_choice,
    tool_result_text,
    transform_messages,
)

__all__ = ["build_body", "stream_openai_completions"]

_FINISH = {
    "stop": StopReason.STOP, "end": StopReason.STOP, "length": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_USE, "function_call": StopReason.TOOL_USE,
    "model_length": StopReason.LENGTH,  # Mistral: the model's context is full
}
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_CONTENT = ("choices", 0, "delta", "content")
_ARGUMENTS = ("choices", 0, "delta", "tool_calls", 0, "function", "arguments")
_CHUNKS = "content"
"""The thinking signature of reasoning that came as `thinking` chunks of a `content` list
(Mistral's reasoning models): it is replayed as such chunks."""


def _normalize_id(model: Model) -> Any:
    def normalize(call_id: str, _: AssistantMessage) -> str:
        if "|" in call_id:
            call, item = call_id.split("|", 1)
            joined = safe_id(f"{call}_{item}")
            if len(joined) <= 40:
                return joined
            return f"{safe_id(call)[:31]}_{short_hash(call_id)[:8]}"
        return call_id[:40] if model.provider in ("openai", AZURE_PROVIDER) else call_id

    return normalize


def _image_url(block: ImageContent) -> dict[str, Any]:
    url = f"data:{block.mime_type};base64,{block.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _user(message: UserMessage, model: Model) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": sanitize(message.content)}
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": sanitize(block.text)})
        elif "image" in model.input:
            parts.append(_image_url(block))
    return {"role": "user", "content": parts} if parts else None


def _assistant(message: AssistantMessage, compat: Compat) -> dict[str, Any] | None:
    out: dict[str, Any] = {"role": "assistant",
                           "content": "" if compat.requires_assistant_after_tool_result else None}
    texts = [sanitize(b.text) for b in message.content
             if isinstance(b, TextContent) and b.text.strip()]
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and b.thinking.strip()]
    if texts:
        out["content"] = "".join(texts)
    if thinking:
        if compat.requires_thinking_as_text:
            joined = "\n\n".join(sanitize(b.thinking) for b in thinking)
            out["content"] = [{"type": "text", "text": joined},
                              *({"type": "text", "text": t} for t in texts)]
        else:
            # Here a thinking signature is the name of the wire field the reasoning came in
            # (written by `_handle`), so it goes back in the same field.
            field = thinking[0].thinking_signature
            if field in _REASONING_FIELDS:
                out[field] = "\n".join(sanitize(b.thinking) for b in thinking)
            elif field == _CHUNKS:
                joined = "\n".join(sanitize(b.thinking) for b in thinking)
                out["content"] = [{"type": "thinking",
                                   "thinking": [{"type": "text", "text": joined}]},
                                  *({"type": "text", "text": t} for t in texts)]
    calls = message.tool_calls
    if calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name,
                                           "arguments": dumps(c.arguments)}}
                             for c in calls]
    if compat.thinking_format == "deepseek" and "reasoning_content" not in out:
        out["reasoning_content"] = ""
    if out["content"] is None and not calls and len(out) == 2:
        return None
    if out["content"] is None and not compat.supports_null_content:
        out["content"] = ""  # only tool calls (or reasoning): some servers reject a null
    return out


def _tool_results(results: list[ToolResultMessage], model: Model, compat: Compat) -> list[
        dict[str, Any]]:
    out: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for result in results:
        entry: dict[str, Any] = {"role": "tool", "tool_call_id": result.tool_call_id,
                                 "content": tool_result_text(result)}
        if compat.requires_tool_result_name:
            entry["name"] = result.tool_name
        out.append(entry)
        if "image" in model.input:
            images.extend(_image_url(b) for b in result.content if isinstance(b, ImageContent))
    if images:
        if compat.requires_assistant_after_tool_result:
            out.append({"role": "assistant", "content": "I have processed the tool results."})
        out.append({"role": "user", "content": [
            {"type": "text", "text": "Attached image(s) from tool result:"}, *images]})
    return out


def _messages(context: Context, model: Model, compat: Compat) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        out.append({"role": role, "content": sanitize(context.system_prompt)})
    normalize = (mistral_ids(context.messages) if compat.tool_call_id_format == "mistral"
                 else _normalize_id(model))
    messages: list[Message] = transform_messages(context.messages, model, normalize)
    i = 0
    while i < len(messages):
        message = messages[i]
        if isinstance(message, ToolResultMessage):
            run_end = i
            while run_end < len(messages) and isinstance(messages[run_end], ToolResultMessage):
                run_end += 1
            out.extend(_tool_results(messages[i:run_end], model, compat))  # type: ignore[arg-type]
            if (compat.requires_assistant_after_tool_result and run_end < len(messages)
                    and isinstance(messages[run_end], UserMessage)):
                out.append({"role": "assistant", "content": "I have processed the tool results."})
            i = run_end
            continue
        converted = (_user(message, model) if isinstance(message, UserMessage)
                     else _assistant(message, compat))
        if converted is not None:
            out.append(converted)
        i += 1
    return out


def _reasoning(body: dict[str, Any], model: Model, compat: Compat,
               level: ThinkingLevel | None) -> None:
    if not model.reasoning:
        return
    fmt = compat.thinking_format
    if fmt in ("zai", "qwen"):
        body["enable_thinking"] = level is not None
    elif fmt == "qwen-chat-template":
        body["chat_template_kwargs"] = {"enable_thinking": level is not None}
    elif fmt == "deepseek":
        body["thinking"] = {"type": "enabled" if level is not None else "disabled"}
    elif level is not None and compat.supports_reasoning_effort:
        effort = compat.xhigh_effort if level is ThinkingLevel.XHIGH else level.value
        if compat.reasoning_effort_map:
            effort = compat.reasoning_effort_map.get(effort, effort)
        if fmt == "openrouter":
            body["reasoning"] = {"effort": effort}
        else:
            body["reasoning_effort"] = effort
    elif (level is None and compat.lowest_effort and compat.supports_reasoning_effort
          and fmt == "openai"):
        body["reasoning_effort"] = compat.lowest_effort  # a model that would reason anyway


def _response_format(model: Model, compat: Compat, schema: dict[str, Any],
                     with_tools: bool) -> dict[str, Any]:
    """`response_format` asking for JSON of `schema`: strict when the schema allows it.

    A server without strict mode (`supports_strict_mode` false) gets no `strict` at all.
    """
    check_native_output(model, with_tools=with_tools)
    sent, strict = json_schema_format(schema)
    spec: dict[str, Any] = {"name": OUTPUT_NAME, "schema": sent}
    if compat.supports_strict_mode:
        spec["strict"] = strict
    return {"type": "json_schema", "json_schema": spec}


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The request body for `context`, as the server expects it.

    `options.tool_choice` becomes `tool_choice` (`"auto"`, `"none"`, `"required"`, or
    `{"type": "function", "function": {"name": ...}}`), sent only with tools (`"required"`
    only where `compat` says the server takes it: see `_choice.tool_choice`);
    `options.output_schema` becomes a `json_schema` `response_format`. Raises `ValueError` for
    a `tool_choice` naming no tool, or an `output_schema` for a model without native output.
    """
    compat = resolve_compat(model)
    body: dict[str, Any] = {"model": model.id, "messages": _messages(context, model, compat),
                            "stream": True}
    if compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        body["store"] = False
    body[compat.max_tokens_field] = default_max_tokens(model, options)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [{"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.parameters,
            **({"strict": False} if compat.supports_strict_mode else {})}} for t in context.tools]
    elif any(isinstance(m, ToolResultMessage) or (isinstance(m, AssistantMessage) and m.tool_calls)
             for m in context.messages):
        body["tools"] = []
    choice = tool_choice(options, context.tools,
                         takes_required=compat.supports_required_tool_choice)
    if choice is not None:
        body["tool_choice"] = (choice.mode if choice.name is None else
                               {"type": "function", "function": {"name": choice.name}})
    if options.output_schema is not None:
        body["response_format"] = _response_format(model, compat, options.output_schema,
                                                   bool(context.tools))
    level = options.reasoning if options.reasoning is not ThinkingLevel.OFF else None
    _reasoning(body, model, compat, level)
    if "api.openai.com" in model.base_url and options.session_id and (
            options.cache_retention != "none"):
        body["prompt_cache_key"] = options.session_id
        if options.cache_retention == "long":
            body["prompt_cache_retention"] = "24h"
    return body


def _usage(raw: dict[str, Any]) -> Usage:
    prompt = raw.get("prompt_tokens") or 0
    details = raw.get("prompt_tokens_details") or {}
    cache_read = (details.get("cached_tokens") or raw.get("prompt_cache_hit_tokens")
                  or raw.get("cached_tokens") or 0)
    cache_write = details.get("cache_write_tokens") or 0
    return Usage(input=max(0, prompt - cache_read - cache_write),
                 output=raw.get("completion_tokens") or 0, cache_read=cache_read,
                 cache_write=cache_write)


def _block_key(builder: ReplyBuilder, key: tuple[str, int],
               last: tuple[str, int] | None) -> tuple[str, int]:
    """`key`, or the next one if another block was written since (which closed `key`'s block).

    Text or thinking that comes back after another block opens a new block: the old one's
    `*_end` was already sent.
    """
    return key if key == last or not builder.has(key) else (key[0], key[1] + 1)


def _lone_delta(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """The delta of a chunk of one choice whose delta has one member; None for any other.

    Nothing else that `_handle` reads is there (no error, no usage, no finish reason; the id,
    constant in a template, was read from the chunk it was learned from): such a chunk only
    adds text, or argument text to a call.
    """
    choices = chunk.get("choices")
    if (choices.__class__ is not list or len(choices) != 1 or chunk.get("error")
            or chunk.get("object") == "error" or chunk.get("usage")):
        return None
    choice = choices[0]
    if choice.__class__ is not dict or choice.get("finish_reason") or choice.get("usage"):
        return None
    delta = choice.get("delta")
    return delta if delta.__class__ is dict and len(delta) == 1 else None


def _plain_text(chunk: dict[str, Any]) -> bool:
    """A chunk that only adds its `content` string to the text (`DeltaKind.plain`)."""
    delta = _lone_delta(chunk)
    return delta is not None and delta.get("content").__class__ is str


def _plain_arguments(chunk: dict[str, Any]) -> bool:
    """A chunk that only adds argument text to one call it does not name (`DeltaKind.plain`).

    With an id it starts a call, without text it opens one: such forms do not come again.
    """
    entries = (_lone_delta(chunk) or {}).get("tool_calls")
    entry: Any = entries[0] if entries.__class__ is list and len(entries) == 1 else {}
    function = entry.get("function") if entry.__class__ is dict else None
    return (function.__class__ is dict and not entry.get("id")
            and function.get("arguments").__class__ is str and function["arguments"] != "")


_DELTAS = Deltas((DeltaKind("text", _CONTENT, _plain_text, ("obfuscation",)),
                  DeltaKind("arguments", _ARGUMENTS, _plain_arguments, ("obfuscation",))),
                 end="[DONE]")
"""Text and argument chunks differ only in their text (and OpenAI's `obfuscation` padding)."""


def _call_key(entry: dict[str, Any], open_calls: dict[Any, tuple[int, str]],
              keys: Iterator[int]) -> tuple[str, int]:
    """An entry's call's key: the call at its wire index, or a new one (none yet, other id)."""
    index, call_id = entry.get("index", 0), entry.get("id")
    known = open_calls.get(index)
    if known is None or (call_id and call_id != known[1]):
        known = open_calls[index] = (next(keys), call_id or "")
    return ("call", known[0])


def _handle(builder: ReplyBuilder, items: Iterator[Any]) -> Iterator[AssistantMessageEvent]:
    open_calls: dict[Any, tuple[int, str]] = {}  # wire index -> (our key, call id)
    keys = itertools.count(1)
    text_key, thinking_key = ("text", 0), ("thinking", 0)
    last: tuple[str, int] | None = None  # the block written last
    for item in items:
        if item.__class__ is tuple:  # a `Delta`: handled as its chunk would be, with this text
            kind, text, chunk = item
            if kind == "text":
                if text:
                    if last != text_key:
                        text_key = last = _block_key(builder, text_key, last)
                    yield from builder.text(text_key, text)
                continue
            entry = chunk["choices"][0]["delta"]["tool_calls"][0]
            last = _call_key(entry, open_calls, keys)
            yield from builder.tool_call(last, call_id=entry.get("id"),
                                         name=entry["function"].get("name"),
                                         args_delta=text, always_emit=True)
            continue
        if isinstance(item, UnframedLines):  # a raw error body after the events, or noise
            chunk = loads_or_none(item.text)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise ProviderError(error_text(chunk["error"]))
            continue
        chunk = item.data
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):
            raise ProviderError(error_text(chunk["error"]))
        if chunk.get("object") == "error":
            raise ProviderError(error_text(chunk))
        if chunk.get("id") and builder.response_id is None:
            builder.response_id = chunk["id"]
        choices = chunk.get("choices") or []
        usage = chunk.get("usage") or (choices[0].get("usage") if choices else None)
        if usage:
            builder.set_usage(_usage(usage))
        if not choices:
            continue
        choice = choices[0]
        finish = choice.get("finish_reason")
        if finish:
            reason = _FINISH.get(finish)
            if reason is None:
                # Azure names the categories of a `content_filter` on the choice
                words = filter_text(choice) if finish == "content_filter" else None
                raise ProviderError(words or f"Provider finish_reason: {finish}")
            builder.stop_reason = reason
        delta = choice.get("delta") or {}
        content = delta.get("content")
        for field in _REASONING_FIELDS:
            value = delta.get(field)
            if isinstance(value, str) and value:
                thinking_key = last = _block_key(builder, thinking_key, last)
                # The signature records the wire field the reasoning came in, to replay it there.
                yield from builder.thinking(thinking_key, value, signature=field)
                break
        if isinstance(content, str) and content:
            text_key = last = _block_key(builder, text_key, last)
            yield from builder.text(text_key, content)
        elif isinstance(content, list):  # Mistral's reasoning: thinking and text chunks
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "thinking":
                    value = "".join(p.get("text") or "" for p in part.get("thinking") or ()
                                    if isinstance(p, dict))
                    thinking_key = last = _block_key(builder, thinking_key, last)
                    yield from builder.thinking(thinking_key, value, signature=_CHUNKS)
                elif kind == "text" and part.get("text"):
                    text_key = last = _block_key(builder, text_key, last)
                    yield from builder.text(text_key, part["text"])
        for entry in delta.get("tool_calls") or ():
            last = _call_key(entry, open_calls, keys)
            function = entry.get("function") or {}
            yield from builder.tool_call(last, call_id=entry.get("id"), name=function.get("name"),
                                         args_delta=function.get("arguments") or "",
                                         always_emit=True)


_WIRE = WireApi(
    url=lambda model: f"{model.base_url.rstrip('/')}/chat/completions",
    headers=lambda model, key: {"Authorization": f"Bearer {key}"},
    body=build_body,
    handle=_handle,
    http_error_text=http_error_text,
    deltas=_DELTAS,
)
"""Chat Completions as a `WireApi`."""
_AZURE_WIRE = azure_wire(_WIRE, "/chat/completions")
"""Chat Completions on Azure OpenAI: its v1 endpoint, its key or Entra token header."""


def stream_openai_completions(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream a reply from `{base_url}/chat/completions` (Azure's v1 endpoint for Azure)."""
    return stream_http_reply(_AZURE_WIRE if is_azure(model) else _WIRE, model, context, options)
