"""What sessions cost: appending one message, and loading a 10,000-message transcript.

    python benchmarks/sessions.py            # a table
    python benchmarks/sessions.py --json     # one JSON object per measurement and line
    python benchmarks/sessions.py --check    # exit 1 when a target is missed

Append: `APPENDS` single-message `append` calls (a user message, an assistant reply with a
tool call and its tool result, in turn: 300 to 600 bytes of JSON each) into a session that
already holds `HELD` messages, each call timed alone; a run's figure is the median call (and,
for information, the 99th percentile of the calls).
Four stores: `SqliteSession` by default (WAL, `synchronous=NORMAL`: a commit per call) and
with `durable=True` (`synchronous=FULL`: an fsync per commit), `JsonlSession` by default
(a `write` per call) and with `durable=True` (a `write` and an fsync). Load: `load()` of a
10,000-message session (the same three kinds of message) by a store object made afresh, as a
new process would; also `Agent(session=...)` on it (the load, the check of every message, the
repair scan). Files live in a temporary directory beside this one (`--dir`), on the disk the
repository is on: fsync costs what it costs there (it would cost nothing on a tmpfs). Every
figure is the median of `RUNS` runs after a warm-up run. See README.md beside this file.

SQLite beside PostgreSQL (`--postgres`, needs the extra `postgres` and Debian's
`postgresql`): the script starts its own server (`tests/pg_server.py`: a cluster in a
temporary folder, on loopback, `fsync=off` as SQLite's default mode makes no fsync either)
and measures `PostgresSession`'s append like the others, then the throughput of
`THROUGHPUT_APPENDS` single-message appends by one thread into one session, and by four
threads into four sessions of one database, for `SqliteSession` and `PostgresSession`; and
what a run's lease costs (API §27): the median of `LEASES` `lease(0)` + `release()` pairs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import agentcore as ac
from agentcore.sessions import JsonlSession, SqliteSession

RUNS = 5
APPENDS = 200
HELD = 1_000
LOADED = 10_000
APPEND_TARGET_MS = 2.0
LOAD_TARGET_MS = 300.0

Store = SqliteSession | JsonlSession


def _messages(count: int) -> list[ac.AgentMessage]:
    """`count` messages: a question, a reply calling a tool, the tool's result, in turn."""
    out: list[ac.AgentMessage] = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            out.append(ac.UserMessage(f"Question {i}: what is the weather in Rome today? " * 3))
        elif kind == 1:
            out.append(ac.AssistantMessage(
                [ac.TextContent("Let me look that up for you. " * 3),
                 ac.ToolCall(f"call-{i}", "get_weather", {"city": "Rome", "day": i})],
                "openai-responses", "openai", "gpt-5", usage=ac.Usage(1200, 40, 0, 0, 1240),
                stop_reason="toolUse"))
        else:
            out.append(ac.ToolResultMessage(f"call-{i - 1}", "get_weather",
                                            [ac.TextContent("Sunny, 24 °C, light wind. " * 4)]))
    return out


STORES: dict[str, Callable[[Path], Store]] = {
    "SqliteSession": lambda d: SqliteSession(d / "s.db"),
    "SqliteSession(durable=True)": lambda d: SqliteSession(d / "s.db", durable=True),
    "JsonlSession": lambda d: JsonlSession(d / "s.jsonl"),
    "JsonlSession(durable=True)": lambda d: JsonlSession(d / "s.jsonl", durable=True),
}
TARGETED = "SqliteSession"


def time_appends(make: Callable[[Path], Store], base: Path, appends: int,
                 ) -> tuple[float, float]:
    """(median, 99th percentile) of single-message appends into a session holding `HELD`, ms."""
    directory = Path(tempfile.mkdtemp(dir=base))
    try:
        with make(directory) as session:
            session.append(_messages(HELD))
            messages = _messages(appends)
            times = []
            for message in messages:
                start = time.perf_counter()
                session.append([message])
                times.append(time.perf_counter() - start)
        p99 = statistics.quantiles(times, n=100)[98] if len(times) > 1 else times[0]
        return statistics.median(times) * 1e3, p99 * 1e3
    finally:
        shutil.rmtree(directory)


def time_loads(make: Callable[[Path], Store], directory: Path, count: int,
               ) -> tuple[float, float]:
    """(ms to load `count` messages with a fresh store, ms for `Agent(session=...)` on it)."""
    with make(directory) as session:
        start = time.perf_counter()
        loaded = session.load()
        load_ms = (time.perf_counter() - start) * 1e3
    assert len(loaded) == count
    with make(directory) as session:
        model = ac.Model("m", "m", "faux", "faux", "http://localhost:0")
        start = time.perf_counter()
        agent = ac.Agent(model, session=session)
        agent_ms = (time.perf_counter() - start) * 1e3
    assert len(agent.messages) == count
    return load_ms, agent_ms


def _row(name: str, values: list[float], unit: str, target: float | None = None,
         ) -> dict[str, Any]:
    median = statistics.median(values)
    return {"name": name, "median": round(median, 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "unit": unit, "runs": len(values),
            "target": None if target is None else f"<= {target:g}",
            "ok": None if target is None else median <= target}


def measure(runs: int, appends: int, loaded: int, base: Path) -> list[dict[str, Any]]:
    """Every variant, one after another in each round (one warm-up round first)."""
    append_ms: dict[str, list[float]] = {name: [] for name in STORES}
    append_p99: dict[str, list[float]] = {name: [] for name in STORES}
    load_ms: dict[str, list[float]] = {}
    agent_ms: dict[str, list[float]] = {}
    big = _messages(loaded)
    full: dict[str, Path] = {}
    for name in ("SqliteSession", "JsonlSession"):
        full[name] = Path(tempfile.mkdtemp(dir=base))
        with STORES[name](full[name]) as session:
            session.append(big)
        load_ms[name], agent_ms[name] = [], []
    try:
        for round_ in range(runs + 1):
            for name, make in STORES.items():
                median, p99 = time_appends(make, base, appends)
                if round_:
                    append_ms[name].append(median)
                    append_p99[name].append(p99)
            for name, directory in full.items():
                load, agent = time_loads(STORES[name], directory, loaded)
                if round_:
                    load_ms[name].append(load)
                    agent_ms[name].append(agent)
    finally:
        for directory in full.values():
            shutil.rmtree(directory)
    rows = [_row(f"append 1 message, {name}", append_ms[name], "ms",
                 APPEND_TARGET_MS if name == TARGETED else None) for name in STORES]
    rows += [_row(f"append 1 message, {name}: 99th percentile of the calls", append_p99[name],
                  "ms") for name in STORES]
    rows += [_row(f"load {loaded:,} messages, {name}", load_ms[name], "ms", LOAD_TARGET_MS)
             for name in full]
    rows += [_row(f"Agent(session=...) on {loaded:,} messages, {name}", agent_ms[name], "ms")
             for name in full]
    return rows


THROUGHPUT_APPENDS = 500


def _throughput(make: Callable[[str], Any], writers: int, appends: int) -> float:
    """Messages per second: `writers` threads, each appending `appends` messages one at a
    time to a session of its own made by `make(session_id)`."""
    import threading

    sessions = [make(f"w{i}") for i in range(writers)]
    messages = _messages(appends)
    barrier = threading.Barrier(writers + 1)

    def write(session: Any) -> None:
        barrier.wait()
        for message in messages:
            session.append([message])

    threads = [threading.Thread(target=write, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - start
    for session in sessions:
        session.close()
    return writers * appends / took


LEASES = 200


def time_leases(session: Any, count: int) -> float:
    """The median of `count` `lease(0)` + `release()` pairs, in ms: what a run adds (API §27)."""
    took = []
    for _ in range(count):
        start = time.perf_counter()
        session.lease(0).release()
        took.append((time.perf_counter() - start) * 1000)
    session.close()
    return statistics.median(took)


def measure_postgres(runs: int, appends: int, base: Path) -> list[dict[str, Any]]:
    """`PostgresSession`'s append, and both stores' throughput (see the module)."""
    import itertools

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from pg_server import PostgresServer

    from agentcore.sessions import PostgresSession

    server = PostgresServer.start(base / "postgres")
    try:
        names = itertools.count()

        def fresh_dsn() -> str:
            return server.new_database()

        def postgres(directory: Path) -> Any:
            return PostgresSession(fresh_dsn(), f"s{next(names)}")

        append_ms: list[float] = []
        throughput: dict[str, list[float]] = {}
        lease_ms: dict[str, list[float]] = {}
        for round_ in range(runs + 1):
            median, _ = time_appends(postgres, base, appends)
            for name, leased in (
                    ("SqliteSession", SqliteSession(Path(tempfile.mkdtemp(dir=base)) / "l.db")),
                    ("PostgresSession", PostgresSession(fresh_dsn(), "leased"))):
                taken = time_leases(leased, LEASES)
                if round_:
                    lease_ms.setdefault(name, []).append(taken)
            for writers in (1, 4):
                directory = Path(tempfile.mkdtemp(dir=base))
                target = fresh_dsn()
                for name, make in (
                        ("SqliteSession", lambda sid, d=directory: SqliteSession(d / "t.db", sid)),
                        ("PostgresSession", lambda sid, t=target: PostgresSession(t, sid))):
                    rate = _throughput(make, writers, THROUGHPUT_APPENDS)
                    if round_:
                        throughput.setdefault(f"{name}, {writers} appender(s)", []).append(rate)
            if round_:
                append_ms.append(median)
    finally:
        server.stop()
    rows = [_row("append 1 message, PostgresSession", append_ms, "ms")]
    rows += [_row(f"throughput, {name}", values, "msg/s")
             for name, values in throughput.items()]
    rows += [_row(f"lease taken and released, {name}", values, "ms")
             for name, values in lease_ms.items()]
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'median':>8}  {'min':>8}  {'max':>8}  unit  target"]
    for r in rows:
        target = "" if r["target"] is None else f"{r['target']} ({'ok' if r['ok'] else 'MISSED'})"
        lines.append(f"{r['name']:<{width}}  {r['median']:>8.3f}  {r['min']:>8.3f}  "
                     f"{r['max']:>8.3f}  {r['unit']:<4}  {target}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per variant")
    parser.add_argument("--appends", type=int, default=APPENDS, help="timed appends per run")
    parser.add_argument("--messages", type=int, default=LOADED, help="messages loaded")
    parser.add_argument("--postgres", action="store_true",
                        help="also PostgresSession, on a server of its own (see the module)")
    parser.add_argument("--dir", type=Path, default=Path(__file__).resolve().parent,
                        help="where the temporary files go (a directory on the disk to test)")
    args = parser.parse_args(argv)
    if min(args.runs, args.appends, args.messages) < 1:
        parser.error("--runs, --appends and --messages must be positive")
    started = time.perf_counter()
    base = Path(tempfile.mkdtemp(prefix=".sessions-bench-", dir=args.dir))
    try:
        rows = measure(args.runs, args.appends, args.messages, base)
        if args.postgres:
            rows += measure_postgres(args.runs, args.appends, base)
    finally:
        shutil.rmtree(base)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, median of "
              f"{args.runs} runs after a warm-up; took {time.perf_counter() - started:.1f} s")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
