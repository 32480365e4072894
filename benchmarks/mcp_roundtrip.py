"""An MCP tool call's round trip over stdio: `agentcore.mcp` next to the SDK's own client.

    python benchmarks/mcp_roundtrip.py            # a table
    python benchmarks/mcp_roundtrip.py --json     # one JSON object per measurement and line

One server process per client, the same small server (the SDK's `MCPServer`, run with
`python -c`) with one tool, `add(a, b)`. Each client makes `CALLS` sequential calls to it after
`WARMUP` untimed ones, each call timed alone; the figures are the median and the 99th
percentile of the calls, in `ROUNDS` rounds that alternate the two clients (so that a slow
moment of the machine falls on both), pooled.

- *agentcore.mcp*: the `AgentTool` from `MCPServerStdio(...).tools()`, its `execute` called
  from this (synchronous) thread, as the loop's worker thread does: the request goes to the
  server object's private event loop thread (`run_coroutine_threadsafe`), the caller waits on a
  `concurrent.futures.Future`, and the result comes back converted into `TextContent`.
- *SDK client*: `ClientSession.call_tool` awaited inside `asyncio.run`, on the same thread
  as its event loop: no thread hop, no conversion; the floor for this server and transport.

Also timed: opening a server (spawn, `initialize`, one `tools/list`), median of `OPENS`.
See README.md beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

import agentcore as ac
from agentcore.mcp import MCPServerStdio

CALLS = 1_000
WARMUP = 100
ROUNDS = 3
OPENS = 5

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


server.run()
'''
ARGS = {"a": 20, "b": 22}


def _ours(calls: int) -> list[float]:
    with MCPServerStdio(sys.executable, ["-c", SERVER]) as server:
        [add] = server.tools()
        signal = ac.AbortController().signal

        def on_update(_: ac.AgentToolResult) -> None:
            pass

        for _ in range(WARMUP):
            add.execute("bench", ARGS, signal, on_update)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            result = add.execute("bench", ARGS, signal, on_update)
            times.append(time.perf_counter() - start)
        assert result.content == [ac.TextContent("42")]
    return times


async def _sdk_calls(calls: int) -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVER])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        for _ in range(WARMUP):
            await session.call_tool("add", ARGS)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            result = await session.call_tool("add", ARGS)
            times.append(time.perf_counter() - start)
        assert result.content[0].text == "42"  # type: ignore[union-attr]
    return times


def _sdk(calls: int) -> list[float]:
    return asyncio.run(_sdk_calls(calls))


def _open_ours() -> float:
    start = time.perf_counter()
    with MCPServerStdio(sys.executable, ["-c", SERVER]) as server:
        server.tools()
        return time.perf_counter() - start  # before the close


async def _open_sdk_once() -> float:
    start = time.perf_counter()
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVER])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        return time.perf_counter() - start  # before the close


def _open_sdk() -> float:
    return asyncio.run(_open_sdk_once())


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def measure(calls: int = CALLS, rounds: int = ROUNDS, opens: int = OPENS) -> list[dict[str, Any]]:
    """Every measurement, as dicts: client, what, median_us, p99_us (and n)."""
    pooled: dict[str, list[float]] = {"agentcore.mcp": [], "SDK client": []}
    for _ in range(rounds):
        pooled["agentcore.mcp"] += _ours(calls)
        pooled["SDK client"] += _sdk(calls)
    rows = [{"client": client, "what": "call", "n": len(times),
             "median_us": statistics.median(times) * 1e6,
             "p99_us": _percentile(times, 0.99) * 1e6} for client, times in pooled.items()]
    opened = {"agentcore.mcp": [_open_ours() for _ in range(opens)],
              "SDK client": [_open_sdk() for _ in range(opens)]}
    rows += [{"client": client, "what": "open", "n": len(times),
              "median_us": statistics.median(times) * 1e6,
              "p99_us": max(times) * 1e6} for client, times in opened.items()]
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table (or JSON lines)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--calls", type=int, default=CALLS, help="timed calls per round")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args(argv)
    rows = measure(args.calls, args.rounds)
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    floor = {row["what"]: row for row in rows if row["client"] == "SDK client"}
    print(f"{'':14} {'':5} {'median':>10} {'p99':>10}  {'median - SDK':>12}")
    for row in rows:
        extra = row["median_us"] - floor[row["what"]]["median_us"]
        print(f"{row['client']:14} {row['what']:5} {row['median_us']:8.0f} µs "
              f"{row['p99_us']:8.0f} µs  {extra:+9.0f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
