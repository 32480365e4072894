"""The chat's `--mcp COMMAND` (issue 16): an MCP server's tools beside the calculator and clock,
with the real test server of `tests/mcp_server.py`, through the program and in-process."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
import threading
from typing import Any

import paths
import pytest
from _internals import ChatOptions, run_chat

from agentcore.testing import scripted_model, tool_call

pytestmark = pytest.mark.slow  # every test starts the MCP server, or the chat, as a process

SERVER = shlex.join([sys.executable, str(paths.TESTS / "mcp_server.py")])
MCP_TOOLS = "add, fail, slow, crash, pid and picture"
TOOL_END = r"  <- {name}: (?P<text>.*)  \[(?P<status>ok|error), \d+\.\d ms\]"


def _chat(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    return subprocess.run([sys.executable, "-m", "agentcore", "chat", "--tokens-per-second",
                           "20000", *args], input=stdin, capture_output=True, text=True,
                          timeout=60, check=False, env=env)


def _lines(*lines: str) -> Any:
    pending = list(lines)

    def read_line(prompt: str) -> str:
        if not pending:
            raise EOFError
        return pending.pop(0)

    return read_line


def test_chat_mcp_adds_the_servers_tools_to_the_agent() -> None:
    done = _chat("hello\n", "--mcp", SERVER)
    assert done.returncode == 0, done.stderr
    banner = done.stdout.splitlines()[0]
    assert f"tools calculator, clock, {MCP_TOOLS}. /help lists" in banner


def test_chat_mcp_runs_a_servers_tool_for_the_model_and_closes_the_server() -> None:
    replies = [tool_call("add", {"a": 40, "b": 2}), tool_call("fail", {"message": "nope"}),
               "done"]
    out = io.StringIO()
    with scripted_model(replies) as fake:
        code = run_chat(ChatOptions(model=fake.model, mcp=(SERVER,)), out, _lines("add", "fail"))
        assert code == 0
        tools = fake.calls[0].tools
    text = out.getvalue()
    assert [t.name for t in tools] == ["calculator", "clock", "add", "fail", "slow", "crash",
                                       "pid", "picture"]
    added = re.search(TOOL_END.format(name="add"), text)
    assert added is not None
    assert (added["text"], added["status"]) == ("42", "ok")
    failed = re.search(TOOL_END.format(name="fail"), text)
    assert failed is not None
    assert failed["status"] == "error"
    assert "MCPToolError: Error executing tool fail: nope" in failed["text"]
    assert [t for t in threading.enumerate() if t.name.startswith("agentcore-mcp")] == []


def test_chat_mcp_is_repeatable_and_refuses_a_tool_name_twice() -> None:
    done = _chat("", "--mcp", SERVER, "--mcp", SERVER)
    assert done.returncode == 2
    assert done.stderr == (f"python -m agentcore chat: error: --mcp: the MCP server {SERVER!r} "
                           "has a tool named 'add', a name another tool already has\n")


@pytest.mark.parametrize(("command", "error"), [
    ("/no/such/server --flag", "could not connect to the MCP server '/no/such/server --flag': "
                               "FileNotFoundError"),
    ("  ", "an MCP server's command line is empty: '  '"),
])
def test_chat_mcp_names_a_server_that_does_not_start(command: str, error: str) -> None:
    done = _chat("hello\n", "--mcp", command)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"python -m agentcore chat: error: --mcp: {error}")


def test_chat_help_shows_the_mcp_option() -> None:
    done = subprocess.run([sys.executable, "-m", "agentcore", "chat", "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert "--mcp COMMAND" in done.stdout
