"""Streamed replies as each HTTP wire API's server sends them, for tests over the local server.

`completions_reply` (OpenAI Chat Completions and the servers speaking it: Mistral, Azure,
DeepSeek...), `anthropic_reply` (Anthropic Messages), `google_reply` (Gemini and Vertex) and
`responses_reply` (OpenAI Responses, Azure's too) build a whole body with the thinking, text
and tool calls asked for. Bedrock's event-stream replies are in `bedrock_replies`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["anthropic_reply", "completions_reply", "google_reply", "responses_reply"]

Call = tuple[str, str, dict[str, Any]]
"""A tool call: (id, tool name, arguments)."""


def _data(obj: Any, crlf: bool = False) -> bytes:
    end = "\r\n\r\n" if crlf else "\n\n"
    return f"data: {json.dumps(obj)}{end}".encode()


def _event(name: str, obj: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode()


def completions_reply(*, reasoning: str = "", text: str = "",
                      calls: Sequence[Call] = ()) -> bytes:
    """A Chat Completions stream: `reasoning_content`, text, then the calls, and usage."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = b""
    if reasoning:
        out += _data({**base, "choices": [{"index": 0, "delta": {"reasoning_content": reasoning}}]})
    if text:
        out += _data({**base, "choices": [{"index": 0, "delta": {"content": text}}]})
    for i, (call_id, name, args) in enumerate(calls):
        out += _data({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{
            "index": i, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}]}}]})
    finish = "tool_calls" if calls else "stop"
    out += _data({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    out += _data({**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    return out + b"data: [DONE]\n\n"


def anthropic_reply(*, thinking: tuple[str, str] | None = None, text: str = "",
                    calls: Sequence[Call] = ()) -> bytes:
    """A Messages stream: thinking with its signature (text, signature), text, tool uses."""
    out = _event("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "usage": {"input_tokens": 10, "output_tokens": 1}}})
    index = 0
    if thinking:
        out += _event("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "thinking",
                                                                "thinking": ""}})
        out += _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "thinking_delta",
                                                        "thinking": thinking[0]}})
        out += _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "signature_delta",
                                                        "signature": thinking[1]}})
        out += _event("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    if text:
        out += _event("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "text", "text": ""}})
        out += _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": text}})
        out += _event("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    for call_id, name, args in calls:
        out += _event("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "tool_use", "id": call_id,
                                                                "name": name, "input": {}}})
        out += _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": json.dumps(args)}})
        out += _event("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    out += _event("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "tool_use" if calls else "end_turn"}, "usage": {"output_tokens": 9}})
    return out + _event("message_stop", {"type": "message_stop"})


def google_reply(*, thought: str = "", text: str = "", signature: str | None = None,
                 calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> bytes:
    """One Gemini chunk (CRLF-framed): a thought, text, then calls (name, args) without ids,
    the first carrying `signature`."""
    parts: list[dict[str, Any]] = []
    if thought:
        parts.append({"text": thought, "thought": True})
    if text:
        parts.append({"text": text})
    for i, (name, args) in enumerate(calls):
        part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
        if i == 0 and signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return _data({"candidates": [{"content": {"parts": parts, "role": "model"},
                                  "finishReason": "STOP", "index": 0}],
                  "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                    "totalTokenCount": 15}}, crlf=True)


def responses_reply(text: str = "", *, calls: Sequence[Call] = ()) -> bytes:
    """A Responses stream: a message item with `text` (if any), then a function_call per call."""
    items: list[dict[str, Any]] = []
    if text:
        items.append({"id": "msg_r1", "type": "message", "status": "completed",
                      "role": "assistant",
                      "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for n, (call_id, name, args) in enumerate(calls):
        items.append({"id": f"fc_r{n + 1}", "type": "function_call", "status": "completed",
                      "call_id": call_id, "name": name, "arguments": json.dumps(args)})
    out = _event("response.created", {"type": "response.created",
                                      "response": {"id": "resp_1", "status": "in_progress"}})
    for index, item in enumerate(items):
        empty = {"content": []} if item["type"] == "message" else {"arguments": ""}
        out += _event("response.output_item.added", {
            "type": "response.output_item.added", "output_index": index,
            "item": {**item, **empty, "status": "in_progress"}})
        if item["type"] == "message":
            out += _event("response.output_text.delta", {"type": "response.output_text.delta",
                                                        "output_index": index, "delta": text})
        else:
            out += _event("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "output_index": index,
                "item_id": item["id"], "delta": item["arguments"]})
        out += _event("response.output_item.done", {"type": "response.output_item.done",
                                                     "output_index": index, "item": item})
    return out + _event("response.completed", {"type": "response.completed", "response": {
        "id": "resp_1", "status": "completed", "output": items,
        "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}}})
