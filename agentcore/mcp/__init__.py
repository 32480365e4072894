"""Tools from Model Context Protocol servers, as ordinary `AgentTool`s.

::

    from agentcore import Agent
    from agentcore.mcp import MCPServerStdio

    with MCPServerStdio("python", ["my_server.py"]) as server:
        agent = Agent(model, tools=server.tools())
        answer = agent.prompt("...").text

`MCPServerStdio(command, args=(), env=None, cwd=None)` runs a server as a subprocess;
`MCPServerHTTP(url, headers=None)` speaks streamable HTTP. Both are context managers, and
`.tools(prefix=None, requires_approval=False)` lists the server's tools with their JSON
Schemas; `requires_approval` (`True`, a function of a call's arguments, a set of tool names,
or a mapping of names to either) makes their calls wait for a person's decision (API §20).
A call is synchronous for the loop, like any tool's: an abort cancels the MCP request (the
server object stays usable), text and images come back as `TextContent` and `ImageContent`,
an `isError` result raises `MCPToolError` and a server that dies or stops answering raises
`MCPServerError`; the loop gives the model either one as an error result. A hang is bounded
by the server's `timeout` (300 s by default) and, when shorter, by the run's `tool_timeout`.

The official `mcp` SDK is asyncio-based; each server object drives it from one private daemon
thread with its own event loop, which `close()` joins, so nothing async reaches the caller.

Layer 4, beside `testing`: builds on `_core` only. Needs the `mcp` extra
(`pip install 'agentcore[mcp]'`); `import agentcore` never imports it, only this module does.
"""

from __future__ import annotations

try:
    import mcp as _mcp
except ImportError as exc:
    raise ImportError(
        "agentcore.mcp needs the 'mcp' extra: pip install 'agentcore[mcp]'") from exc

from ._errors import MCPServerError, MCPToolError
from ._servers import DEFAULT_TIMEOUT, MCPServerHTTP, MCPServerStdio

del _mcp

__all__ = ["DEFAULT_TIMEOUT", "MCPServerError", "MCPServerHTTP", "MCPServerStdio", "MCPToolError"]
