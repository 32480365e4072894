"""`MCPServerStdio` and `MCPServerHTTP`: an MCP server's tools as ordinary `AgentTool`s."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from types import TracebackType
from typing import Any, TextIO, final

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel

from .._core import AbortSignal, AgentTool, AgentToolResult, TextContent, cannot_take, type_error
from ._connection import Connection
from ._errors import MCPServerError
from ._results import input_schema, to_result

__all__ = ["DEFAULT_TIMEOUT", "MCPServerHTTP", "MCPServerStdio", "RequiresApproval"]

DEFAULT_TIMEOUT = 300.0
"""Seconds an MCP request (connecting, listing tools, one tool call) may take by default."""

ApprovalRule = bool | Callable[[Any], bool]
"""An `AgentTool.requires_approval`: every call, none, or a function of the call's arguments."""

RequiresApproval = ApprovalRule | Collection[str] | Mapping[str, ApprovalRule]
"""What `tools(requires_approval=...)` takes (see `_MCPServer.tools`)."""

_EXPECTED = ("a bool, a function of the call's arguments, a collection of tool names or a "
             "mapping of tool names to a bool or such a function")


def _approval_rules(value: object) -> tuple[Callable[[str], ApprovalRule], set[str]]:
    """Each tool's rule (by the server's name for it) and the names `value` gives; or TypeError.

    Checked before the server is asked anything: a mistake in what guards a dangerous tool
    should fail at once, never leave the tool unguarded.
    """
    if isinstance(value, bool):
        return (lambda name: value), set()
    if isinstance(value, Mapping):
        rules: dict[str, ApprovalRule] = {}
        for name, rule in value.items():
            if not isinstance(name, str):
                raise type_error("requires_approval", _EXPECTED, value,
                                 f"a mapping's keys must be tool names (str), got {name!r}")
            rules[name] = _checked_rule(rule, f"requires_approval[{name!r}]")
        return (lambda name: rules.get(name, False)), set(rules)
    if isinstance(value, (str, bytes)):
        raise type_error("requires_approval", _EXPECTED, value,
                         "to name one tool, give a set of one name: {'name'}")
    if callable(value):
        rule = _checked_rule(value, "requires_approval")
        return (lambda name: rule), set()
    if isinstance(value, Collection):
        names = set()
        for name in value:
            if not isinstance(name, str):
                raise type_error("requires_approval", _EXPECTED, value,
                                 f"a collection's items must be tool names (str), got {name!r}")
            names.add(name)
        return (lambda name: name in names), names
    raise type_error("requires_approval", _EXPECTED, value)


def _checked_rule(rule: object, what: str) -> ApprovalRule:
    """`rule` if it is an `AgentTool.requires_approval`, else a TypeError naming `what`."""
    if isinstance(rule, bool):
        return rule
    if not callable(rule):
        raise type_error(what, "a bool or a function of the call's arguments", rule)
    if cannot_take(rule, 1):
        raise TypeError(f"'{what}' must be a function of one argument, the call's arguments; "
                        f"got {rule!r}")
    return rule


class _MCPServer:
    """What both transports share: the connection's life, listing tools, calling one.

    Thread-safe: once open, `tools()` and the tools' calls may run on any threads at once
    (they are requests on one session); `close()` may come from any thread. Not reusable:
    a closed server stays closed.
    """

    def __init__(self, name: str, timeout: float | None) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError(f"'timeout' must be a positive number of seconds or None, "
                             f"got {timeout!r}")
        self._name = name
        self._timeout = timeout
        self._connection: Connection | None = None
        self._session: ClientSession | None = None
        self._closed = False
        self._lock = threading.Lock()  # open() and close() may come from two threads

    @property
    def name(self) -> str:
        """How messages name this server: its command line, or its URL."""
        return self._name

    def __enter__(self) -> _MCPServer:
        self.open()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> None:
        """Connect and initialize the session (what `with` does); raise `MCPServerError`."""
        with self._lock:
            if self._closed:
                raise MCPServerError(f"the MCP server {self._name!r} is closed; make a new one")
            if self._connection is not None:
                return
            connection = Connection(self._connect, name=self._name, timeout=self._timeout)
            self._connection = connection  # so that a close() meanwhile stops the connecting
        try:
            session = connection.open()
        except BaseException:
            with self._lock:
                self._connection = None
            raise
        with self._lock:
            self._session = session

    def close(self) -> None:
        """End the session and its thread (a stdio server's process ends too). Idempotent."""
        with self._lock:
            self._closed = True
            connection = self._connection
        if connection is not None:
            connection.close()

    def tools(self, prefix: str | None = None, *,
              requires_approval: RequiresApproval = False) -> list[AgentTool]:
        """The server's tools, each an `AgentTool` that calls it.

        Args:
            prefix: When given, each tool is named `f"{prefix}_{name}"` (to keep two servers'
                tools apart); the server is still called with its own name.
            requires_approval: Which calls wait for a person's decision before they run
                (API §20; `AgentTool.requires_approval`): `True` for every call of every
                tool, `False` (the default) for none, or a function of a call's arguments
                (applied to every tool); or, for some tools only, a collection of tool names
                (`{"delete_file", "write_file"}`: every call of those) or a mapping from tool
                names to `True`/`False`/such a function (`{"write_file": lambda args:
                args["path"].startswith("/etc")}`; tools it does not name need none). Names
                are the server's own, without `prefix`.

        Returns:
            One tool per listed MCP tool, with the server's description and JSON Schema. A call
            honours its `signal` (an abort cancels the MCP request), streams the server's
            progress notifications as `on_update` partial results, and raises `MCPToolError`
            for an `isError` result or `MCPServerError` when the server fails or goes away,
            which the loop turns into an error result for the model.

        Raises:
            TypeError: `requires_approval` is none of the above, or names a tool by something
                other than a `str` (one name alone must still be in a set: `{"name"}`).
            ValueError: `requires_approval` names a tool the server does not list (a typo
                would otherwise leave the tool it meant unguarded).
            MCPServerError: The server is not open, fails, or lists a tool agentcore cannot
                use.
        """
        rule_of, named = _approval_rules(requires_approval)
        connection, session = self._open()
        listed: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = connection.request(functools.partial(_list_tools, session, cursor))
            listed.extend(page.get("tools") or [])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        unknown = named - {str(spec["name"]) for spec in listed}
        if unknown:
            raise ValueError(f"'requires_approval' names tools the MCP server {self._name!r} "
                             f"does not list: {', '.join(sorted(map(repr, unknown)))}")
        return [self._tool(spec, prefix, rule_of(str(spec["name"]))) for spec in listed]

    def _open(self) -> tuple[Connection, ClientSession]:
        if self._connection is None or self._session is None or self._closed:
            state = "closed" if self._closed else "not open"
            raise MCPServerError(f"the MCP server {self._name!r} is {state}; use it inside "
                                 f"`with {type(self).__name__}(...) as server:`")
        return self._connection, self._session

    def _tool(self, spec: dict[str, Any], prefix: str | None,
              requires_approval: ApprovalRule) -> AgentTool:
        remote = str(spec["name"])

        def execute(tool_call_id: str, args: Any, signal: AbortSignal,
                    on_update: Any) -> AgentToolResult:
            return self._call(remote, args, signal, on_update)

        name = f"{prefix}_{remote}" if prefix else remote
        try:
            return AgentTool(name=name, description=str(spec.get("description") or ""),
                             parameters=input_schema(spec), execute=execute,
                             label=spec.get("title") or None,
                             requires_approval=requires_approval)
        except (TypeError, ValueError) as exc:
            raise MCPServerError(f"the MCP server {self._name!r} lists a tool agentcore cannot "
                                 f"use, {remote!r}: {exc}") from exc

    def _call(self, remote: str, args: Any, signal: AbortSignal,
              on_update: Any) -> AgentToolResult:
        connection, session = self._open()

        async def on_progress(progress: float, total: float | None, message: str | None
                              ) -> None:
            text = message or (f"{progress:g}/{total:g}" if total else f"{progress:g}")
            on_update(AgentToolResult(content=[TextContent(text)],
                                      details={"progress": progress, "total": total}))

        async def call() -> dict[str, Any]:
            result = await session.call_tool(remote, dict(args or {}),
                                             read_timeout_seconds=self._timeout,
                                             progress_callback=on_progress)
            return _wire(result)

        return to_result(connection.request(call, signal))

    async def _connect(self, stack: contextlib.AsyncExitStack) -> ClientSession:
        raise NotImplementedError


async def _list_tools(session: ClientSession, cursor: str | None) -> dict[str, Any]:
    from mcp.types import PaginatedRequestParams

    params = PaginatedRequestParams(cursor=cursor) if cursor else None
    return _wire(await session.list_tools(params=params))


def _wire(model: BaseModel) -> dict[str, Any]:
    """A result as the protocol's JSON (camelCase), whatever the SDK's attribute names."""
    wire: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return wire


async def _session(stack: contextlib.AsyncExitStack, read: Any, write: Any,
                   timeout: float | None) -> ClientSession:
    """A session over the transport's streams, entered on `stack` (`Connection` initializes it)."""
    return await stack.enter_async_context(
        ClientSession(read, write, read_timeout_seconds=timeout))


@final
class MCPServerStdio(_MCPServer):
    """An MCP server run as a subprocess, spoken to over its stdin and stdout.

    ::

        with MCPServerStdio("uvx", ["mcp-server-time"]) as server:
            agent = Agent(model, tools=server.tools())
            answer = agent.prompt("What time is it in Lisbon?").text

    The process starts on `with` (or `open()`) and ends on leaving it (or `close()`): its stdin
    is closed, then it is terminated, then killed, within a few seconds. The SDK's MCP session
    runs on one private daemon thread per server object, with its own asyncio event loop, so
    this works the same in scripts, in Jupyter and inside `asyncio.run`.

    Args:
        command: The program to run.
        args: Its arguments.
        env: Environment variables for it, added to the SDK's safe default set (`PATH`,
            `HOME`, ...): the process does not inherit the whole environment.
        cwd: Its working directory.
        timeout: Seconds a request (starting up, listing tools, one tool call) may take before
            it fails; None for no limit. A run's `tool_timeout` (or a tool's `timeout`),
            when shorter, ends a call first.
    """

    def __init__(self, command: str, args: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
                 *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        if isinstance(args, str):
            raise TypeError(f"'args' must be a sequence of strings, not one string: {args!r}")
        self._params = StdioServerParameters(command=command, args=list(args),
                                             env=dict(env) if env is not None else None,
                                             cwd=os.fspath(cwd) if cwd is not None else None)
        super().__init__(" ".join([command, *args]), timeout)

    def __enter__(self) -> MCPServerStdio:
        self.open()
        return self

    async def _connect(self, stack: contextlib.AsyncExitStack) -> ClientSession:
        read, write = await stack.enter_async_context(stdio_client(self._params, _errlog()))
        return await _session(stack, read, write, self._timeout)


@final
class MCPServerHTTP(_MCPServer):
    """An MCP server spoken to over streamable HTTP.

    ::

        with MCPServerHTTP("http://127.0.0.1:8000/mcp") as server:
            agent = Agent(model, tools=server.tools(prefix="docs"))

    The session starts on `with` (or `open()`) and ends on leaving it (or `close()`), which
    also asks the server to end it (an HTTP `DELETE`). Like `MCPServerStdio`, it runs on one
    private thread per server object.

    Args:
        url: The server's MCP endpoint.
        headers: Headers sent with every request (say, `Authorization`).
        timeout: Seconds a request may take before it fails; None for no limit.
    """

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, *,
                 timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self._url = url
        self._headers = dict(headers or {})
        super().__init__(url, timeout)

    def __enter__(self) -> MCPServerHTTP:
        self.open()
        return self

    async def _connect(self, stack: contextlib.AsyncExitStack) -> ClientSession:
        read_timeout = self._timeout if self._timeout is not None else None
        client = await stack.enter_async_context(httpx2.AsyncClient(
            headers=self._headers, timeout=httpx2.Timeout(30.0, read=read_timeout)))
        read, write = await stack.enter_async_context(
            streamable_http_client(self._url, http_client=client))
        return await _session(stack, read, write, self._timeout)


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: ours, when it is a real file (not in Jupyter)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # stays open: the process may write to it for its whole life
