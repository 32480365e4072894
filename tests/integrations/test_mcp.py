"""agentcore.mcp against real MCP servers written with the SDK (`tests/mcp_server.py`).

Over stdio the server is a subprocess; over streamable HTTP it is the SDK's Starlette app
served by uvicorn on 127.0.0.1 from a thread of this process. Every test joins what it
starts (the conftest's thread check applies): a server object's thread ends on `close()`.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal as signals
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import paths
import pytest
import uvicorn
from uvicorn_thread import ThreadServer

import agentcore as ac
from agentcore.testing import scripted_model, tool_call

if TYPE_CHECKING:
    from agentcore.mcp import MCPServerError, MCPServerHTTP, MCPServerStdio, MCPToolError

SERVER = str(paths.TESTS / "mcp_server.py")
TIMEOUT = 20.0
"""Every wait's timeout. The `slow` tool sleeps 60 s: a call that ends within this was ended by
an abort, a dead server or a timeout (which one, its error says)."""

ADD_SCHEMA = {
    "type": "object", "title": "addArguments", "required": ["a", "b"],
    "properties": {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}},
}


@pytest.fixture(autouse=True, scope="module")
def _agentcore_mcp() -> None:
    """Import `agentcore.mcp` when this file's tests run, not when the suite is collected.

    It imports the mcp SDK, about 0.9 s of CPU, and every xdist worker collects every file.
    """
    global MCPServerError, MCPServerHTTP, MCPServerStdio, MCPToolError
    from agentcore.mcp import MCPServerError, MCPServerHTTP, MCPServerStdio, MCPToolError


def _stdio() -> MCPServerStdio:
    return MCPServerStdio(sys.executable, [SERVER])


@pytest.fixture(scope="module")
def stdio() -> Iterator[MCPServerStdio]:
    """One server process for the module's tests that leave it usable (starting one takes
    ~0.6 s); a test that kills or breaks its server takes `own_stdio`. Its thread is not
    among the `_mcp_threads()` that tests count."""
    with _stdio() as server:
        _shared.update(_mcp_threads())
        try:
            yield server
        finally:
            _shared.clear()


@pytest.fixture
def own_stdio() -> Iterator[MCPServerStdio]:
    """A server process for one test."""
    with _stdio() as server:
        yield server


@pytest.fixture
def http_url() -> Iterator[str]:
    """The URL of a fresh test server's streamable HTTP endpoint on 127.0.0.1."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    from mcp_server import build_server  # the MCP SDK: imported by the tests that use it

    config = uvicorn.Config(build_server().streamable_http_app(), log_level="error",
                            timeout_graceful_shutdown=2)
    server = ThreadServer(config)
    server.start([sock])
    try:
        assert server.ready.wait(TIMEOUT), "uvicorn did not start"
        assert server.started, "uvicorn failed to start"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        try:
            server.stop(TIMEOUT)
        finally:
            sock.close()


def _call(tool: ac.AgentTool, args: dict[str, Any],
          signal: ac.AbortSignal | None = None) -> ac.AgentToolResult:
    return tool.execute("call-1", args, signal or ac.AbortController().signal, lambda _: None)


def _by_name(tools: list[ac.AgentTool]) -> dict[str, ac.AgentTool]:
    return {t.name: t for t in tools}


_shared: set[threading.Thread] = set()  # the threads of the module's shared server


def _mcp_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t.name.startswith("agentcore-mcp") and t not in _shared]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- listing ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_mcp_tools_have_the_servers_names_schemas_and_descriptions(
        stdio: MCPServerStdio) -> None:
    tools = stdio.tools()
    assert [t.name for t in tools] == ["add", "fail", "slow", "crash", "pid", "picture"]
    add = tools[0]
    assert (add.description, add.parameters) == ("Add two integers.", ADD_SCHEMA)
    assert isinstance(add, ac.AgentTool)


@pytest.mark.slow
def test_mcp_tools_prefix_renames_them_and_still_calls_the_servers_names(
        stdio: MCPServerStdio) -> None:
    tools = _by_name(stdio.tools(prefix="calc"))
    assert sorted(tools) == ["calc_add", "calc_crash", "calc_fail", "calc_picture", "calc_pid",
                             "calc_slow"]
    assert tools["calc_add"].parameters == ADD_SCHEMA
    assert _call(tools["calc_add"], {"a": 2, "b": 3}).content == [ac.TextContent("5")]


# --- results ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_mcp_text_and_image_results_become_content_blocks(stdio: MCPServerStdio) -> None:
    from mcp_server import PNG

    tools = _by_name(stdio.tools())
    result = _call(tools["add"], {"a": 1, "b": 2})
    assert (result.content, result.details) == ([ac.TextContent("3")], {"result": "3"})
    picture = _call(tools["picture"], {"caption": "one pixel"})
    assert picture.content == [ac.TextContent("one pixel"),
                               ac.ImageContent(base64.b64encode(PNG).decode(), "image/png")]


@pytest.mark.slow
def test_mcp_is_error_raises_the_tools_text(stdio: MCPServerStdio) -> None:
    fail = _by_name(stdio.tools())["fail"]
    with pytest.raises(MCPToolError, match=r"^Error executing tool fail: boom$"):
        _call(fail, {"message": "boom"})


@pytest.mark.slow
def test_mcp_tool_called_from_an_agent_run(stdio: MCPServerStdio) -> None:
    replies = [
        [tool_call("add", {"a": 20, "b": 22}, id="c1"), tool_call("picture", {}, id="c2"),
         tool_call("fail", {"message": "no"}, id="c3")],
        "done",
    ]
    with scripted_model(replies) as fake:
        agent = ac.Agent(fake.model, tools=stdio.tools())
        messages = agent.prompt("go").result(TIMEOUT)
        results = fake.sent_tool_results()
    assert messages[-1].text == "done"  # type: ignore[union-attr]
    assert [(r.tool_name, r.is_error) for r in results] == [
        ("add", False), ("picture", False), ("fail", True)]
    assert results[0].content == [ac.TextContent("42")]
    assert isinstance(results[1].content[1], ac.ImageContent)
    assert results[2].text == "MCPToolError: Error executing tool fail: no"
    assert fake.calls[0].tool_names == ["add", "fail", "slow", "crash", "pid", "picture"]


# --- requires_approval (API §20) ----------------------------------------------------------------


DENIED = "denied: the user did not allow this call"


@pytest.mark.slow
def test_mcp_tool_requiring_approval_pauses_the_run_and_resume_calls_the_server(
        stdio: MCPServerStdio) -> None:
    tools = stdio.tools(requires_approval={"add", "pid"})
    assert [t.requires_approval for t in tools] == [True, False, False, False, True, False]
    replies = [[tool_call("add", {"a": 20, "b": 22}, id="c1"), tool_call("pid", id="c2"),
                tool_call("picture", {"caption": "waited"}, id="c3")], "done"]
    with scripted_model(replies) as fake:
        agent = ac.Agent(fake.model, tools=tools)
        run = agent.prompt("go")
        assert [c.id for c in run.pending_approvals] == ["c1", "c2"]
        # nothing ran, not even the call needing no approval: it waits with its batch
        assert [m.role for m in run.result(TIMEOUT)] == ["user", "assistant"]
        fake.assert_called(1)
        messages = agent.continue_(approvals={"c1": True, "c2": "not now"}).result(TIMEOUT)
        results = fake.sent_tool_results()
    assert messages[-1].text == "done"  # type: ignore[union-attr]
    assert [(r.tool_call_id, r.text, r.is_error) for r in results] == [
        ("c1", "42", False), ("c2", "denied: not now", True), ("c3", "waited", False)]
    assert agent.state.pending_approvals == []


@pytest.mark.slow
def test_mcp_requires_approval_by_arguments_by_name_or_for_all(stdio: MCPServerStdio) -> None:
    def big(args: Any) -> bool:
        return bool(args.get("a", 0) > 10)

    replies = [[tool_call("add", {"a": 20, "b": 1}, id="big"),
                tool_call("add", {"a": 1, "b": 2}, id="small")], "done"]
    with scripted_model(replies) as fake:
        agent = ac.Agent(fake.model, tools=stdio.tools(requires_approval=big))
        assert [c.id for c in agent.prompt("go").pending_approvals] == ["big"]
        agent.continue_(approvals={"big": False}).result(TIMEOUT)
        results = fake.sent_tool_results()
    assert [(r.tool_call_id, r.text) for r in results] == [("big", DENIED), ("small", "3")]
    mapped = _by_name(stdio.tools(prefix="calc", requires_approval={"add": big, "pid": True,
                                                                     "fail": False}))
    assert mapped["calc_add"].requires_approval is big  # names are the server's, not prefixed
    assert mapped["calc_pid"].requires_approval is True
    assert {mapped[n].requires_approval for n in ("calc_fail", "calc_slow")} == {False}
    assert {t.requires_approval for t in stdio.tools(requires_approval=True)} == {True}
    assert {t.requires_approval for t in stdio.tools(requires_approval=[])} == {False}


@pytest.mark.slow
@pytest.mark.parametrize("value", [{"ad"}, {"add": True, "sub": True}])
def test_mcp_requires_approval_naming_an_unknown_tool_raises(stdio: MCPServerStdio,
                                                             value: Any) -> None:
    with pytest.raises(ValueError, match=r"^'requires_approval' names tools the MCP server .* "
                                         r"does not list: '(ad|sub)'$"):
        stdio.tools(requires_approval=value)


@pytest.mark.parametrize(("value", "message"), [
    ("add", r"^'requires_approval' must be a bool, a function of the call's arguments, a "
            r"collection of tool names or a mapping .*; to name one tool, give a set"),
    (None, r"^'requires_approval' must be a bool, a function"),
    (1, r"^'requires_approval' must be a bool, a function"),
    ({1, 2}, r"a collection's items must be tool names \(str\), got 1"),
    ({1: True}, r"a mapping's keys must be tool names \(str\), got 1"),
    ({"add": "yes"}, r"^'requires_approval\['add'\]' must be a bool or a function"),
    ({"add": lambda: True}, r"^'requires_approval\['add'\]' must be a function of one argument"),
    (lambda args, extra: True, r"^'requires_approval' must be a function of one argument"),
])
def test_mcp_requires_approval_bad_values_raise_before_asking_the_server(
        value: Any, message: str) -> None:
    server = MCPServerStdio(sys.executable, [SERVER])  # never opened: checked before that
    with pytest.raises(TypeError, match=message):
        server.tools(requires_approval=value)


# --- aborts, crashes, hangs -----------------------------------------------------------------------


@pytest.mark.slow
def test_mcp_abort_mid_call_returns_promptly_and_the_server_stays_usable(
        stdio: MCPServerStdio) -> None:
    tools = _by_name(stdio.tools())
    controller, started = ac.AbortController(), threading.Event()
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            tools["slow"].execute("c1", {"seconds": 60}, controller.signal,
                                  lambda _: started.set())
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    assert started.wait(TIMEOUT), "the server never reported progress"
    controller.abort("user stop")
    worker.join(TIMEOUT)
    assert not worker.is_alive()
    [exc] = outcome
    assert isinstance(exc, ac.AbortError)
    assert "cancelled: 'user stop'" in str(exc)
    assert _call(tools["add"], {"a": 1, "b": 1}).content == [ac.TextContent("2")]


@pytest.mark.slow
def test_mcp_agent_abort_mid_call_gives_an_aborted_result(stdio: MCPServerStdio) -> None:
    started = threading.Event()
    with scripted_model([tool_call("slow", {"seconds": 60}), "unreached"]) as fake:
        agent = ac.Agent(fake.model, tools=stdio.tools())
        agent.subscribe(lambda event, *_: started.set()
                        if isinstance(event, ac.ToolExecutionUpdateEvent) else None)
        run = agent.prompt("go")
        assert started.wait(TIMEOUT)
        run.abort()
        messages = run.result(TIMEOUT)
    [result] = [m for m in messages if isinstance(m, ac.ToolResultMessage)]
    assert result.is_error
    assert result.text.startswith("AbortError: the call to the MCP server")


@pytest.mark.slow
def test_mcp_server_killed_mid_call_gives_an_error_result_not_a_hang(
        own_stdio: MCPServerStdio) -> None:
    tools = _by_name(own_stdio.tools())
    pid = int(_call(tools["pid"], {}).content[0].text)  # type: ignore[union-attr]
    started = threading.Event()
    with scripted_model([tool_call("slow", {"seconds": 60}), "the server died"]) as fake:
        agent = ac.Agent(fake.model, tools=list(tools.values()))
        agent.subscribe(lambda event, *_: started.set()
                        if isinstance(event, ac.ToolExecutionUpdateEvent) else None)
        run = agent.prompt("go")
        assert started.wait(TIMEOUT)
        os.kill(pid, signals.SIGKILL)
        messages = run.result(TIMEOUT)
        [result] = fake.sent_tool_results()
    assert messages[-1].text == "the server died"  # type: ignore[union-attr]
    assert result.is_error
    assert result.text.startswith("MCPServerError: the MCP server ")
    assert result.text.endswith("failed the request: MCPError: Connection closed")
    with pytest.raises(MCPServerError, match="Connection closed"):
        _call(tools["add"], {"a": 1, "b": 1})


@pytest.mark.slow
def test_mcp_server_exiting_mid_call_gives_an_error_result(own_stdio: MCPServerStdio) -> None:
    crash = _by_name(own_stdio.tools())["crash"]
    with pytest.raises(MCPServerError, match="Connection closed"):
        _call(crash, {})


@pytest.mark.slow
def test_mcp_hung_call_is_bounded_by_the_tool_timeout(stdio: MCPServerStdio) -> None:
    tools = stdio.tools()
    with scripted_model([tool_call("slow", {"seconds": 60}), "gave up"]) as fake:
        agent = ac.Agent(fake.model, tools=tools, tool_timeout=0.5)
        agent.prompt("go").result(TIMEOUT)
        [result] = fake.sent_tool_results()
    assert (result.is_error, result.text) == (True, "tool 'slow' timed out after 0.5 s")
    assert _call(_by_name(tools)["add"], {"a": 1, "b": 1}).content == [ac.TextContent("2")]


@pytest.mark.slow
def test_mcp_request_timeout_of_the_server_object_ends_a_call() -> None:
    with MCPServerStdio(sys.executable, [SERVER], timeout=3) as server:
        slow = _by_name(server.tools())["slow"]
        with pytest.raises(MCPServerError, match=r"failed the request: MCPError: .*"):
            _call(slow, {"seconds": 60})  # ended by the 3 s timeout: the tool sleeps 60 s
        assert _call(_by_name(server.tools())["add"], {"a": 1, "b": 1}).content == [
            ac.TextContent("2")]


# --- lifecycle ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_mcp_close_ends_the_process_and_the_thread() -> None:
    server = _stdio()
    with server:
        pid = int(_call(_by_name(server.tools())["pid"], {}).content[0].text)  # type: ignore[union-attr]
        assert _alive(pid)
        assert len(_mcp_threads()) == 1
    assert not _alive(pid)
    assert _mcp_threads() == []
    server.close()  # idempotent
    with pytest.raises(MCPServerError, match="is closed"):
        server.tools()
    with pytest.raises(MCPServerError, match="is closed; make a new one"):
        server.open()


def test_mcp_tools_before_opening_says_to_use_with() -> None:
    server = _stdio()
    with pytest.raises(MCPServerError, match=r"is not open; use it inside `with MCPServerStdio"):
        server.tools()
    server.close()


@pytest.mark.slow
def test_mcp_a_server_that_cannot_start_raises_and_leaves_no_thread(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-server")
    with pytest.raises(MCPServerError, match=r"could not connect to the MCP server .*"
                                             r"FileNotFoundError"):
        MCPServerStdio(missing).open()
    with pytest.raises(MCPServerError, match="could not connect"):
        MCPServerStdio(sys.executable, ["-c", "raise SystemExit(2)"]).open()
    assert _mcp_threads() == []


@pytest.mark.slow
def test_mcp_a_server_that_never_answers_times_out_while_connecting() -> None:
    server = MCPServerStdio(sys.executable, ["-c", "import time; time.sleep(60)"], timeout=0.5)
    with pytest.raises(MCPServerError, match=r"did not finish connecting within 0\.5 s"):
        server.open()
    assert _mcp_threads() == []


@pytest.mark.slow
def test_mcp_close_from_another_thread_stops_the_connecting() -> None:
    server = MCPServerStdio(sys.executable, ["-c", "import time; time.sleep(60)"], timeout=60)
    outcome: list[BaseException] = []

    def connect() -> None:
        try:
            server.open()
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=connect)
    worker.start()
    while not _mcp_threads() and worker.is_alive():  # the connection's thread has started
        worker.join(0.01)
    server.close()
    worker.join(TIMEOUT)
    assert not worker.is_alive()
    [exc] = outcome
    assert isinstance(exc, MCPServerError)
    assert str(exc).endswith("was closed while connecting")
    assert _mcp_threads() == []


@pytest.mark.slow
def test_mcp_works_inside_a_running_event_loop() -> None:
    async def inside() -> str:
        with _stdio() as server:
            return _call(_by_name(server.tools())["add"], {"a": 4, "b": 4}).content[0].text  # type: ignore[union-attr]

    assert asyncio.run(inside()) == "8"


def test_mcp_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="not one string"):
        MCPServerStdio("python", "server.py")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'timeout' must be a positive number"):
        MCPServerHTTP("http://127.0.0.1:1/mcp", timeout=0)


# --- streamable HTTP ------------------------------------------------------------------------------


def test_mcp_http_lists_and_calls_tools(http_url: str) -> None:
    from mcp_server import PNG

    with MCPServerHTTP(http_url, headers={"X-Test": "1"}) as server:
        tools = _by_name(server.tools(prefix="web"))
        assert tools["web_add"].parameters == ADD_SCHEMA
        assert _call(tools["web_add"], {"a": 1, "b": 2}).content == [ac.TextContent("3")]
        assert _call(tools["web_picture"], {}).content[1] == ac.ImageContent(
            base64.b64encode(PNG).decode(), "image/png")
        with pytest.raises(MCPToolError, match="boom"):
            _call(tools["web_fail"], {"message": "boom"})
    assert _mcp_threads() == []


def test_mcp_http_abort_mid_call_and_the_session_stays_usable(http_url: str) -> None:
    with MCPServerHTTP(http_url) as server:
        tools = _by_name(server.tools())
        with scripted_model([tool_call("slow", {"seconds": 60}), "stopped"]) as fake:
            started = threading.Event()
            agent = ac.Agent(fake.model, tools=list(tools.values()))
            agent.subscribe(lambda event, *_: started.set()
                            if isinstance(event, ac.ToolExecutionUpdateEvent) else None)
            run = agent.prompt("go")
            assert started.wait(TIMEOUT)
            run.abort()
            messages = run.result(TIMEOUT)
        [result] = [m for m in messages if isinstance(m, ac.ToolResultMessage)]
        assert result.is_error
        assert result.text.startswith("AbortError: the call to the MCP server")
        assert _call(tools["add"], {"a": 2, "b": 2}).content == [ac.TextContent("4")]


def test_mcp_http_unreachable_server_raises() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(MCPServerError, match="could not connect"):
        MCPServerHTTP(f"http://127.0.0.1:{port}/mcp", timeout=5).open()


# --- the extra ------------------------------------------------------------------------------------


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.slow
def test_mcp_without_the_sdk_says_which_extra_to_install() -> None:
    done = _python("""\
        import sys
        sys.modules["mcp"] = None
        try:
            import agentcore.mcp
        except ImportError as exc:
            print(exc)
        """)
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "agentcore.mcp needs the 'mcp' extra: pip install 'agentcore[mcp]'\n", "")


@pytest.mark.slow
def test_mcp_import_agentcore_does_not_import_the_sdk() -> None:
    done = _python("""\
        import sys
        import agentcore
        print(sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "anyio"))))
        """)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")
