"""MCP tools: a Model Context Protocol server's tools, given to an agent like any other tool.

The example starts a small MCP server of its own: a notebook written with the official SDK's
`MCPServer`, run as a subprocess that speaks MCP over stdio. `server.tools(prefix="notes")`
lists its tools as ordinary `AgentTool`s (names prefixed, the server's JSON Schemas and
descriptions kept), and a (scripted) model calls them: two notes saved in parallel, then the
list read back. Leaving the `with` block ends the server's process and joins the private
thread that drives the SDK.

Needs the mcp extra: `pip install 'agentcore[mcp]'`. `MCPServerHTTP(url)` works the same way
for a server on streamable HTTP.
"""

import sys

import agentcore as ac
from agentcore.mcp import MCPServerStdio
from agentcore.testing import scripted_model, tool_call

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("notebook")
notes = []


@server.tool()
def add_note(text: str) -> str:
    """Save a note in the notebook."""
    notes.append(text)
    return f"saved note #{len(notes)}"


@server.tool()
def list_notes() -> str:
    """Every note in the notebook, one a line."""
    return "\\n".join(sorted(notes)) or "(no notes)"


server.run()
'''
"""The server's whole source, run with `python -c`."""


def show(event, signal):
    if isinstance(event, ac.ToolExecutionEndEvent):
        print(f"  {event.tool_name} -> {event.result.content[0].text!r}")


def main() -> str:
    with MCPServerStdio(sys.executable, ["-c", SERVER]) as server:
        tools = server.tools(prefix="notes")
        for mcp_tool in tools:
            arguments = ", ".join(mcp_tool.parameters["properties"])
            print(f"{mcp_tool.name}({arguments}): {mcp_tool.description}")
        replies = [
            [tool_call("notes_add_note", {"text": "buy milk"}),
             tool_call("notes_add_note", {"text": "call Ana"})],
            [tool_call("notes_list_notes")],
            "Your notebook has two notes: buy milk, call Ana.",
        ]
        with scripted_model(replies) as fake:
            agent = ac.Agent(fake.model, tools=tools)
            agent.subscribe(show)
            answer = agent.prompt("Note 'buy milk' and 'call Ana', then read me my notes.").text
    print(f"assistant: {answer}")
    return answer


if __name__ == "__main__":
    main()
