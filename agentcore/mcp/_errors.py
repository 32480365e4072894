"""The errors `agentcore.mcp` raises; both descend from `AgentcoreError`."""

from __future__ import annotations

from .._core import AgentcoreError

__all__ = ["MCPServerError", "MCPToolError"]


class MCPServerError(AgentcoreError):
    """An MCP server could not be reached, failed a request, or went away during a call.

    A tool call that raises it becomes an error result for the model (the loop's usual
    `"<Type>: <message>"`), so a server that dies mid-call ends that call, not the run.
    """


class MCPToolError(AgentcoreError):
    """An MCP tool answered with `isError: true`; the message is the text it returned."""
