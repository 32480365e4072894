"""`python -m agentcore web`: the chat page and AG-UI endpoint of `agentcore.web` on uvicorn.

Each browser conversation (AG-UI `threadId`) gets its own agent with the chat's tools, on the
offline model unless `--model` names a real one; `--session PATH` keeps every conversation in
one SQLite file (one session id per thread), so a reload, or a restart, shows the history;
`--session postgresql://...` keeps them in a PostgreSQL database, shared by every process
serving the page (API §27).
The socket is bound before uvicorn starts, so the URL printed is the real one even for
`--port 0`. Served beyond this machine (`--host 0.0.0.0`), the page asks for a token as
Jupyter does: a random one unless `--token` gives it, printed in the URL (`--no-auth` serves
without one, and says what that means); `--token` on loopback asks for it there too.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import socket
import sys
from collections.abc import Callable
from typing import TextIO

import attrs

from .._agent import Agent
from .._core import AgentcoreError, AgentTool, Model, ThinkingLevel
from ._chat import describe, open_mcp_servers
from ._demo_tools import SYSTEM_PROMPT, calculator_tool, clock_tool
from ._offline import DEFAULT_TOKENS_PER_SECOND, register_offline
from ._store import is_postgres_url, open_session

__all__ = ["WebOptions", "run_web"]

GRACEFUL_SHUTDOWN_SECONDS = 5
"""How long Ctrl-C lets streams in flight finish before the server closes them."""


@attrs.frozen(kw_only=True)
class WebOptions:
    """What `python -m agentcore web` was started with (`model` None means offline)."""

    model: Model | None = None
    system_prompt: str = SYSTEM_PROMPT
    thinking_level: ThinkingLevel = ThinkingLevel.OFF
    tokens_per_second: float | None = DEFAULT_TOKENS_PER_SECOND
    session: str | None = None
    mcp: tuple[str, ...] = ()
    confirm_tools: bool = False
    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    no_auth: bool = False
    allowed_origins: tuple[str, ...] = ()


def run_web(options: WebOptions, out: TextIO | None = None) -> int:
    """Serve the page until interrupted; the exit code (2 when it cannot start)."""
    stream = sys.stdout if out is None else out
    try:
        import uvicorn

        from ..web import SqliteCatalog, app
    except ImportError as exc:
        return _fail(f"the web command needs the 'web' extra: pip install 'agentcore[web]' "
                     f"({exc})")
    if options.session is not None and options.session.endswith(".jsonl"):
        return _fail("--session: the web keeps every conversation in one SQLite file; give a "
                     "path that does not end in .jsonl")
    if options.session is not None:  # a database that is down or a bad URL fails here
        try:
            open_session(options.session, "agentcore-web-check").close()
        except (ImportError, OSError, ValueError, AgentcoreError) as exc:
            return _fail(f"--session: {exc}")
    if options.no_auth and options.token is not None:
        return _fail("--no-auth and --token contradict each other: give one")
    if options.token is not None and (not options.token.strip()
                                      or not options.token.isprintable()):
        return _fail("--token: give a non-empty printable token")
    try:
        sock = socket.create_server((options.host, options.port))
    except OSError as exc:
        return _fail(f"cannot listen on {options.host}:{options.port}: {exc}")
    token = options.token
    if token is None and not options.no_auth and not _loopback(options.host):
        token = secrets.token_urlsafe(24)  # anyone on the network could run the tools
    offline = register_offline(options.tokens_per_second)
    with contextlib.ExitStack() as stack:
        stack.callback(offline.unregister)
        stack.callback(sock.close)
        try:
            mcp_tools = open_mcp_servers(options.mcp, stack, taken={"calculator", "clock"})
        except (ImportError, ValueError, AgentcoreError) as exc:
            return _fail(f"--mcp: {exc}")
        model = options.model or offline.get_model()
        make_agent = _agent_maker(options, model, mcp_tools)
        catalog = None  # the sidebar's list: in the sessions' SQLite file, to outlive restarts
        if options.session is not None and not is_postgres_url(options.session):
            catalog = SqliteCatalog(options.session)
        try:
            asgi = app(make_agent, token=token, catalog=catalog,
                       allowed_origins=options.allowed_origins)
        except ValueError as exc:
            if catalog is not None:
                catalog.close()
            return _fail(f"--allow-origin: {exc}")
        host, port = sock.getsockname()[:2]
        wildcard = host in ("0.0.0.0", "::")
        shown = "127.0.0.1" if wildcard else f"[{host}]" if ":" in host else host
        query = "" if token is None else f"?token={token}"
        where = f" (listening on every address: {host})" if wildcard else ""
        print(f"agentcore web: http://{shown}:{port}/{query} ({describe(model)}){where}; "
              "Ctrl-C stops", file=stream, flush=True)
        if options.no_auth and not _loopback(options.host):
            print("agentcore web: --no-auth: anyone who can reach this address can run the "
                  "agent's tools", file=sys.stderr, flush=True)
        config = uvicorn.Config(asgi, log_level="warning",
                                lifespan="on",
                                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how the server stops
            uvicorn.Server(config).run(sockets=[sock])
    print("agentcore web: stopped", file=stream, flush=True)
    return 0


def _agent_maker(options: WebOptions, model: Model, mcp_tools: list[AgentTool]
                 ) -> Callable[[str], Agent]:
    """`make_agent` for the app: the chat's tools, and the thread's session in `--session`."""
    tools = [calculator_tool(), clock_tool(), *mcp_tools]
    if options.confirm_tools:
        tools = [attrs.evolve(tool, requires_approval=True) for tool in tools]

    def make_agent(thread_id: str) -> Agent:
        session = None if options.session is None else open_session(options.session, thread_id)
        return Agent(model=model, system_prompt=options.system_prompt, tools=list(tools),
                     thinking_level=options.thinking_level, session=session)

    return make_agent


def _loopback(host: str) -> bool:
    """Whether `--host` keeps the server to this machine (a loopback address or name)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


def _fail(message: str) -> int:
    print(f"python -m agentcore web: error: {message}", file=sys.stderr)
    return 2
