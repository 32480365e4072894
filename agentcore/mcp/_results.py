"""From MCP's wire shapes to agentcore's: a listed tool's schema, a call's result.

Both arrive as the SDK's pydantic models and are read here through their JSON form
(`model_dump(mode="json", by_alias=True)`), which is the protocol's own and does not change
with the SDK's Python attribute names.
"""

from __future__ import annotations

import json
from typing import Any

from .._core import AgentToolResult, ImageContent, TextContent
from ._errors import MCPToolError

__all__ = ["input_schema", "to_result"]

_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def input_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a listed tool's arguments (an empty object schema when it has none)."""
    schema = tool.get("inputSchema")
    return dict(schema) if isinstance(schema, dict) and schema else dict(_EMPTY_OBJECT)


def to_result(result: dict[str, Any]) -> AgentToolResult:
    """A `tools/call` result as an `AgentToolResult`; raise `MCPToolError` when `isError`.

    Text and images become `TextContent` and `ImageContent`. Anything else (audio, resource
    links, embedded resources) becomes text: a text resource's own text, otherwise the block
    as JSON, so that the model still sees what the server sent. `structuredContent` goes to
    `details`, and into the content as JSON when the server sent no content blocks.
    """
    blocks: list[TextContent | ImageContent] = []
    for block in result.get("content") or []:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            blocks.append(TextContent(block["text"]))
        elif kind == "image" and isinstance(block.get("data"), str):
            blocks.append(ImageContent(block["data"], str(block.get("mimeType") or "image/png")))
        elif kind == "resource" and isinstance((block.get("resource") or {}).get("text"), str):
            blocks.append(TextContent(block["resource"]["text"]))
        else:
            blocks.append(TextContent(json.dumps(block, ensure_ascii=False)))
    structured = result.get("structuredContent")
    if not blocks and structured is not None:
        blocks.append(TextContent(json.dumps(structured, ensure_ascii=False)))
    if result.get("isError"):
        text = "\n".join(b.text for b in blocks if isinstance(b, TextContent))
        raise MCPToolError(text or "the MCP tool reported an error without a message")
    return AgentToolResult(content=blocks, details=structured)
