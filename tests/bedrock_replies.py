"""ConverseStream replies as Bedrock sends them (AWS event-stream frames), and a Bedrock model.

`reply(...)` builds a whole body from its blocks (`text_block`, `tool_block`, `reasoning_block`,
`redacted_block`); `serve(server, body)` queues it on the scripted server with Bedrock's content
type. The credentials here are those conftest's `aws_env` sets.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from eventstream_frames import event, exception
from mock_server import ScriptedServer
from sse_server import Chunking

import agentcore as ac

__all__ = [
    "ACCESS_KEY",
    "API",
    "CONTENT_TYPE",
    "MODEL_ID",
    "REDACTED",
    "SECRET_KEY",
    "SESSION_TOKEN",
    "bedrock_model",
    "reasoning_block",
    "redacted_block",
    "reply",
    "serve",
    "text_block",
    "text_deltas",
    "throttled",
    "tool_block",
]

API = "bedrock-converse-stream"
MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
CONTENT_TYPE = "application/vnd.amazon.eventstream"
ACCESS_KEY = "AKIATESTACCESSKEY0001"
SECRET_KEY = "tEsTsEcReT/K7MDENG+bPxRfiCYsecretKEY0001"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEtestSESSIONtoken0001/abc+def=="
REDACTED = base64.b64encode(b"\x01encrypted reasoning\x02").decode("ascii")


def bedrock_model(base_url: str, model_id: str = MODEL_ID, **changes: Any) -> ac.Model:
    """A Claude on Bedrock at `base_url` ($3 / $15 / $0.30 / $3.75 per million tokens)."""
    values: dict[str, Any] = {
        "reasoning": True, "input": ["text", "image"], "cost": ac.ModelCost(3, 15, 0.3, 3.75),
        "context_window": 200000, "max_tokens": 64000,
        "compat": {"cache_points": True, "thinking_fields": "anthropic"},
    }
    values.update(changes)
    return ac.Model(model_id, "Claude Sonnet 4.5", API, "amazon-bedrock", base_url, **values)


def text_deltas(index: int, pieces: Sequence[str]) -> bytes:
    return b"".join(event("contentBlockDelta", {"contentBlockIndex": index,
                                                "delta": {"text": piece}})
                    for piece in pieces)


def reply(*blocks: bytes, stop: str = "end_turn", usage: dict[str, int] | None = None,
          start: bool = True) -> bytes:
    """A whole ConverseStream body: messageStart, `blocks`, messageStop and metadata."""
    usage = usage if usage is not None else {"inputTokens": 12, "outputTokens": 7}
    head = event("messageStart", {"role": "assistant"}) if start else b""
    stop_frame = event("messageStop", {"stopReason": stop})
    metadata = event("metadata", {"usage": {**usage, "totalTokens": sum(usage.values())},
                                  "metrics": {"latencyMs": 321}})
    return head + b"".join(blocks) + stop_frame + metadata


def text_block(index: int, *pieces: str) -> bytes:
    return text_deltas(index, pieces) + event("contentBlockStop", {"contentBlockIndex": index})


def tool_block(index: int, call_id: str, name: str, *json_pieces: str) -> bytes:
    start = event("contentBlockStart", {"contentBlockIndex": index, "start": {
        "toolUse": {"toolUseId": call_id, "name": name}}})
    deltas = b"".join(event("contentBlockDelta", {"contentBlockIndex": index,
                                                  "delta": {"toolUse": {"input": piece}}})
                      for piece in json_pieces)
    return start + deltas + event("contentBlockStop", {"contentBlockIndex": index})


def reasoning_block(index: int, signature: str, *pieces: str) -> bytes:
    deltas = b"".join(event("contentBlockDelta", {"contentBlockIndex": index, "delta": {
        "reasoningContent": {"text": piece}}}) for piece in pieces)
    signed = event("contentBlockDelta", {"contentBlockIndex": index, "delta": {
        "reasoningContent": {"signature": signature}}})
    return deltas + signed + event("contentBlockStop", {"contentBlockIndex": index})


def redacted_block(index: int, data: str = REDACTED) -> bytes:
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {
        "reasoningContent": {"redactedContent": data}}}) + event(
        "contentBlockStop", {"contentBlockIndex": index})


def serve(server: ScriptedServer, body: bytes, chunking: Chunking = "whole", seed: int = 0) -> None:
    """Queue `body` as a 200 event stream with Bedrock's content type."""
    server.sse(body, chunking, seed, headers={"Content-Type": CONTENT_TYPE})


def throttled(message: str = "Too many tokens, please wait before trying again.") -> bytes:
    return exception("throttlingException", message)
