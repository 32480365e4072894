"""A small MCP server for the tests, written with the SDK's own server API (`MCPServer`).

Run as a script it serves over stdio; `tests/integrations/test_mcp.py` also serves
`build_server()` over streamable HTTP (a session manager runs once, hence a new server each
time). The tools cover what `agentcore.mcp` maps: text, images, `isError`, progress, a slow
call (for aborts and timeouts) and one that kills the process mid-call.
"""

from __future__ import annotations

import base64
import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG, the image the `picture` tool returns."""


def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def picture(caption: str = "a pixel") -> list[object]:
    """Return a caption and a one-pixel PNG."""
    return [caption, Image(data=PNG, format="png")]


def fail(message: str) -> str:
    """Always fail, with the given message."""
    raise ToolError(message)


async def slow(seconds: float, ctx: Context) -> str:
    """Report progress, then sleep for `seconds`."""
    await ctx.report_progress(0, 1, "started")
    await anyio.sleep(seconds)
    return f"slept {seconds:g} s"


async def crash(ctx: Context) -> str:
    """Report progress, then end the server's process without an answer."""
    await ctx.report_progress(0, 1, "crashing")
    await anyio.sleep(0.05)
    sys.stdout.flush()
    os._exit(3)


def pid() -> str:
    """The server process's id."""
    return str(os.getpid())


def build_server() -> MCPServer:
    """A new server with the tools below."""
    server = MCPServer("agentcore-tests")
    for fn in (add, fail, slow, crash, pid):
        server.tool()(fn)
    server.tool(structured_output=False)(picture)
    return server


if __name__ == "__main__":
    build_server().run()
