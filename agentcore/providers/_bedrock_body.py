"""The ConverseStream request body (`bedrock-converse-stream`): messages, system, tools, thinking.

- Messages alternate user and assistant as Converse requires: consecutive messages of one role
  (tool results, then a user's text) are joined into one. Blank text is left out (Bedrock
  rejects it); images go as bytes (base64 in JSON) in png, jpeg, gif or webp.
- Thinking is replayed as `reasoningContent` only when it carries this model's signature
  (`reasoningText`) or is redacted (`redactedContent`); unsigned thinking (DeepSeek-R1's,
  gpt-oss's, or a block cut off) is not sent back.
- Another provider's tool-call id that `toolUseId` would reject (too long, or holding `|`,
  `.`, ...) becomes a valid prefix and a hash of it (`fitted_id`), for the call and its result
  alike: distinct ids stay distinct, so each result still answers its own call.
- Tools go in `toolConfig` with `toolChoice` from `options.tool_choice` (`auto`, `any` for
  `"required"`, `tool`). Bedrock has no "none": the tools are left out of that request. Bedrock
  rejects a conversation holding `toolUse`/`toolResult` blocks without a `toolConfig`, so a
  request without tools carries earlier calls and results as text.
- Thinking goes in `additionalModelRequestFields`, as the model's `compat` `thinking_fields`
  says: `"anthropic"` (Claude: a token budget, as anthropic-messages sets it, with the
  interleaved-thinking beta; left off when a tool call is forced, which Claude rejects with
  it), `"reasoning_effort"` (gpt-oss).
- With `compat` `cache_points` and a `cache_retention` other than `"none"`, a cache point
  follows the system prompt and ends the last user message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .._core import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from ._wire import (
    OUTPUT_NAME,
    Choice,
    Compat,
    check_native_output,
    default_max_tokens,
    dumps,
    fitted_id,
    resolve,
    sanitize,
    tool_choice,
    tool_result_text,
    transform_messages,
)
from .anthropic import thinking_budget

__all__ = ["build_body"]

_log = logging.getLogger(__name__)

_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif",
            "image/webp": "webp"}
_EFFORTS = {"minimal": "low", "xhigh": "high"}
_INTERLEAVED = "interleaved-thinking-2025-05-14"
_CACHE_POINT = {"cachePoint": {"type": "default"}}
NO_OUTPUT = "(no output)"
"""The text of a tool result with nothing in it: Bedrock takes no empty result."""

Block = dict[str, Any]
Turn = dict[str, Any]


def _tool_id(call_id: str, _: AssistantMessage) -> str:
    """Another provider's tool-call id as a `toolUseId`: at most 64 of `[a-zA-Z0-9_-]`.

    (AWS's newer pages allow `.` and `:` too; ids without them are valid under either rule.)
    """
    return fitted_id(call_id, 64)


def _image(block: ImageContent) -> Block:
    image_format = _FORMATS.get(block.mime_type.lower())
    if image_format is None:
        raise ValueError(f"Bedrock takes images as png, jpeg, gif or webp, not "
                         f"{block.mime_type!r}")
    return {"image": {"format": image_format, "source": {"bytes": block.data}}}


def _content(blocks: str | Sequence[TextContent | ImageContent]) -> list[Block]:
    if isinstance(blocks, str):
        blocks = [TextContent(blocks)]
    out: list[Block] = []
    for block in blocks:
        if isinstance(block, TextContent):
            if block.text.strip():
                out.append({"text": sanitize(block.text)})
        else:
            out.append(_image(block))
    return out


def _assistant(message: AssistantMessage, tools_as_text: bool) -> list[Block]:
    out: list[Block] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                out.append({"text": sanitize(block.text)})
        elif isinstance(block, ThinkingContent):
            if block.redacted and block.thinking_signature:
                out.append({"reasoningContent": {"redactedContent": block.thinking_signature}})
            elif block.thinking.strip() and block.thinking_signature:
                out.append({"reasoningContent": {"reasoningText": {
                    "text": sanitize(block.thinking), "signature": block.thinking_signature}}})
        elif tools_as_text:
            out.append({"text": f"[called tool {block.name} with {dumps(block.arguments)}]"})
        else:
            out.append({"toolUse": {"toolUseId": block.id, "name": block.name,
                                    "input": block.arguments}})
    return out


def _tool_result(result: ToolResultMessage, tools_as_text: bool) -> list[Block]:
    text = tool_result_text(result) or NO_OUTPUT
    images = [_image(b) for b in result.content if isinstance(b, ImageContent)]
    if tools_as_text:
        status = "error" if result.is_error else "result"
        return [{"text": f"[{status} of tool {result.tool_name}: {text}]"}, *images]
    block: Block = {"toolUseId": result.tool_call_id, "content": [{"text": text}, *images]}
    if result.is_error:
        block["status"] = "error"
    return [{"toolResult": block}]


def messages_of(messages: Sequence[Message], model: Model, tools_as_text: bool) -> list[Turn]:
    """Converse `messages` for a transcript: roles alternating, nothing blank."""
    out: list[Turn] = []
    for message in transform_messages(messages, model, _tool_id):
        if isinstance(message, UserMessage):
            role, blocks = "user", _content(message.content)
        elif isinstance(message, ToolResultMessage):
            role, blocks = "user", _tool_result(message, tools_as_text)
        else:
            role, blocks = "assistant", _assistant(message, tools_as_text)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _tool_config(tools: Sequence[Tool], choice: Choice | None) -> dict[str, Any]:
    specs = []
    for tool in tools:
        schema = {"type": "object", "properties": tool.parameters.get("properties", {}),
                  "required": tool.parameters.get("required", [])}
        spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": schema}}
        if tool.description.strip():
            spec["description"] = tool.description
        specs.append({"toolSpec": spec})
    config: dict[str, Any] = {"tools": specs}
    if choice is not None:
        config["toolChoice"] = ({"tool": {"name": choice.name}} if choice.mode == "tool"
                                else {"any": {}} if choice.mode == "required" else {"auto": {}})
    return config


def _thinking(fields: dict[str, Any], inference: dict[str, Any], model: Model, compat: Compat,
              options: StreamOptions, forced: bool) -> bool:
    """Ask for thinking in `fields` as the model's `thinking_fields` say; True when it is on."""
    level = options.reasoning
    if not model.reasoning or level is None or level is ThinkingLevel.OFF:
        return False
    if compat.thinking_fields == "reasoning_effort":
        fields["reasoning_effort"] = _EFFORTS.get(level.value, level.value)
        return False  # not Claude's thinking: temperature stays allowed
    if compat.thinking_fields != "anthropic":
        return False
    if forced:
        _log.debug("%s: thinking left off for this request: its tool_choice forces a tool "
                   "call, which Claude rejects with thinking", model.id)
        return False
    budget, inference["maxTokens"] = thinking_budget(model, options, level, inference["maxTokens"])
    fields["thinking"] = {"type": "enabled", "budget_tokens": budget}
    fields["anthropic_beta"] = [_INTERLEAVED]
    return True


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The ConverseStream request body for `context` (see the module docstring).

    Raises `ValueError` for a `tool_choice` naming no tool, an image of another format, or an
    `output_schema` for a model without native output (`compat` `supports_native_output`).
    """
    compat = resolve(model)
    tools = list(context.tools or [])
    choice = tool_choice(options, tools)
    send_tools = bool(tools) and (choice is None or choice.mode != "none")
    body: dict[str, Any] = {"messages": messages_of(context.messages, model, not send_tools)}
    cache = compat.cache_points and (options.cache_retention or "short") != "none"
    if context.system_prompt and context.system_prompt.strip():
        body["system"] = [{"text": sanitize(context.system_prompt)}]
        if cache:
            body["system"].append(dict(_CACHE_POINT))
    if cache and body["messages"] and body["messages"][-1]["role"] == "user":
        body["messages"][-1]["content"].append(dict(_CACHE_POINT))
    inference: dict[str, Any] = {"maxTokens": default_max_tokens(model, options)}
    fields: dict[str, Any] = {}
    forced = send_tools and choice is not None and choice.mode in ("required", "tool")
    thinking = _thinking(fields, inference, model, compat, options, forced)
    if options.temperature is not None and not thinking:
        inference["temperature"] = options.temperature
    body["inferenceConfig"] = inference
    if send_tools:
        body["toolConfig"] = _tool_config(tools, choice)
    if fields:
        body["additionalModelRequestFields"] = fields
    if options.output_schema is not None:
        check_native_output(model, with_tools=send_tools)
        body["outputConfig"] = {"textFormat": {"type": "json_schema", "structure": {
            "jsonSchema": {"schema": dumps(options.output_schema), "name": OUTPUT_NAME}}}}
    return body
