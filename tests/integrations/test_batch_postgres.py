"""`run_batch(store="postgresql://...")`: a batch's results in a real PostgreSQL server, from
threads here and from a Dask cluster of separate processes, one of them killed mid-batch.

The server is the session's (`postgres_server`, `tests/pg_server.py`), each test on a database
of its own (`postgres_dsn`). The chat server (`tests/chat_server.py`) answers `fail...` with a
400 and anything else with `"echo: <text>"`; the Dask test's server also holds every `hold...`
request at a gate until the test opens it. Model calls are counted at the server.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paths
import pytest
from batch_agents import make_agent, make_file_agent, make_pid_agent
from chat_server import ChatServer, _Handler

import agentcore as ac
from agentcore.batch import BatchResult, resume_batch, run_batch

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (extra postgres)")

pytestmark = pytest.mark.slow

WAIT_S = 60.0
"""Generous: the Dask test starts three processes on a loaded two-core machine (under three
such runs at once, starting them took 18 s)."""

STOP_S = 10.0
"""How long a Dask process may take to stop on SIGTERM before it is killed."""

TABLE = "agentcore_batch_results"


def agents(server: ChatServer) -> Callable[[], ac.Agent]:
    return functools.partial(make_agent, server.url)


def by_index(results: Any) -> dict[int, BatchResult]:
    """Results by input index, checking that each index came once."""
    listed = list(results)
    got = {r.index: r for r in listed}
    assert len(got) == len(listed)
    return got


def rows(dsn: str) -> list[tuple[int, str]]:
    """The (index, input JSON) of every stored result, read straight from the table."""
    with psycopg.connect(dsn) as db:
        return sorted(db.execute(f"SELECT idx, input FROM {TABLE}").fetchall())


def with_password(dsn: str, password: str = "secret") -> str:
    """`dsn` with a password (the test server trusts everyone: it is ignored)."""
    return dsn.replace("://postgres@", f"://postgres:{password}@")


def messages_of(exc: BaseException) -> list[str]:
    """The text of `exc` and of every exception chained to it."""
    texts = []
    seen: BaseException | None = exc
    while seen is not None:
        texts.append(f"{seen!s} {seen!r}")
        seen = seen.__cause__ or seen.__context__
    return texts


# --- the store ---------------------------------------------------------------------------------


def test_run_batch_postgres_store_keeps_each_success_once_and_runs_only_the_rest(
    server: ChatServer, postgres_dsn: str,
) -> None:
    inputs = ["hello", "fail one", "hello there", "fail two"]

    first = by_index(run_batch(agents(server), inputs, store=postgres_dsn))

    assert rows(postgres_dsn) == [(0, '"hello"'), (2, '"hello there"')]
    assert server.requests == 4
    assert [first[1].error, first[3].error] == ["400 bad prompt"] * 2
    del server.prompts[:]

    second = by_index(run_batch(agents(server), inputs, store=postgres_dsn))

    assert sorted(server.prompts) == ["fail one", "fail two"]  # only the failed ones ran
    assert server.requests == 4 + 2
    assert (second[0], second[2]) == (first[0], first[2])  # whole values, messages included
    assert rows(postgres_dsn) == [(0, '"hello"'), (2, '"hello there"')]  # no row twice
    del server.prompts[:]

    changed = ["hello again", *inputs[1:]]
    third = by_index(run_batch(agents(server), changed, store=postgres_dsn, output_type=None))

    assert sorted(server.prompts) == ["fail one", "fail two", "hello again"]
    assert third[0].text == "echo: hello again"
    assert rows(postgres_dsn) == [(0, '"hello again"'), (0, '"hello"'), (2, '"hello there"')]


def test_postgres_store_table_made_by_many_at_once(postgres_dsn: str) -> None:
    """`CREATE TABLE IF NOT EXISTS` from many connections at once: none fails."""
    from _internals import PostgresStore

    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            start.wait(WAIT_S)
            PostgresStore(postgres_dsn).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert errors == []
    assert rows(postgres_dsn) == []


def test_resume_batch_with_a_postgres_store_never_runs_a_call_twice(
        tmp_path: Path, postgres_dsn: str) -> None:
    store = postgres_dsn
    prompts = []
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("x")
        prompts.append(f"delete {tmp_path / name}")
    prompts.append("hello")
    list(run_batch(make_file_agent, prompts, store=store))

    made = []

    def make() -> ac.Agent:
        made.append(1)
        return make_file_agent()

    # later (a new process, say): the store gives the waiting results back without running
    again = by_index(run_batch(make, prompts, store=store))
    assert made == []
    assert [c.id for c in again[0].pending_approvals] == ["call_a.txt"]
    assert [c.id for c in again[1].pending_approvals] == ["call_b.txt"]
    assert again[2].text == "echo: hello"

    resumed = by_index(resume_batch(make, [(again[0], {"call_a.txt": True})], store=store))
    assert len(made) == 1
    assert resumed[0].text.startswith("done: deleted a.txt")
    assert os.listdir(tmp_path) == ["b.txt"]

    # resuming the same waiting result again: the store says it went on, nothing runs
    twice = by_index(resume_batch(make, [(again[0], {"call_a.txt": True})], store=store))
    assert len(made) == 1
    assert twice[0].text == resumed[0].text
    final = by_index(run_batch(make, prompts, store=store))
    assert len(made) == 1
    assert (final[0].text, final[0].pending_approvals) == (resumed[0].text, [])
    assert [c.id for c in final[1].pending_approvals] == ["call_b.txt"]  # still waiting
    assert rows(store) == [(0, json.dumps(prompts[0])), (1, json.dumps(prompts[1])),
                           (2, '"hello"')]


def _refused() -> str:
    import socket

    with socket.socket() as probe:  # a port nothing listens on: refused at once
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"postgresql://user:secret@127.0.0.1:{port}/db"


@pytest.mark.parametrize(("make_url", "where"), [
    pytest.param(lambda server: _refused(), r"127\.0\.0\.1:\d+/db", id="refused"),
    pytest.param(lambda server: with_password(server.dsn("missing")),
                 r"127\.0\.0\.1:\d+/missing.*does not exist", id="no-such-database"),
    pytest.param(lambda server: "postgres://user:secret@[::1/db", r"not a valid PostgreSQL URL",
                 id="malformed"),
])
def test_run_batch_unusable_postgres_store_raises_at_the_call_without_the_password(
    postgres_server: Any, make_url: Callable[[Any], str], where: str,
) -> None:
    url = make_url(postgres_server)

    with pytest.raises(ValueError, match=rf"^'store': .*{where}") as raised:
        run_batch(make_file_agent, ["hi"], store=url)
    with pytest.raises(ValueError, match=rf"^'store': .*{where}") as resumed:
        resume_batch(make_file_agent, [], store=url)

    for error in (raised.value, resumed.value):
        assert all("secret" not in text for text in messages_of(error)), error
        assert error.__context__ is None


def test_run_batch_postgres_store_without_psycopg_names_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` raises ImportError
    with pytest.raises(ImportError, match=r"needs the 'postgres' extra: "
                                          r"pip install 'agentcore\[postgres\]'"):
        run_batch(make_file_agent, ["hi"], store="postgresql://u@127.0.0.1/db")


def test_import_agentcore_batch_loads_no_psycopg() -> None:
    code = ("import sys, agentcore, agentcore.batch; "
            "assert 'psycopg' not in sys.modules, 'psycopg imported'")
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_run_batch_postgres_restarted_mid_batch_retries_the_write_once(
    server: ChatServer, postgres_server: Any, postgres_dsn: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    inputs = [f"hello {i}" for i in range(6)]
    results = run_batch(agents(server), inputs, store=postgres_dsn, max_concurrency=1)
    got = []
    with caplog.at_level(logging.WARNING, logger="agentcore.batch"):
        for result in results:
            got.append(result)
            if len(got) == 1:  # stored already: the store's connection dies with the server
                postgres_server.restart()

    assert sorted(r.index for r in got) == list(range(6))
    assert all(r.error is None for r in got)
    assert rows(postgres_dsn) == [(i, f'"hello {i}"') for i in range(6)]
    lost = [r.getMessage() for r in caplog.records if "reconnecting" in r.getMessage()]
    assert len(lost) == 1, lost  # one write retried, on a connection that then served all
    assert server.requests == 6


def test_run_batch_postgres_gone_for_good_raises_out_of_the_iteration(
    server: ChatServer, postgres_server: Any, postgres_dsn: str,
) -> None:
    url = with_password(postgres_dsn)
    database = postgres_dsn.rsplit("/", 1)[1]
    results = run_batch(agents(server), [f"hello {i}" for i in range(4)], store=url,
                        max_concurrency=1)
    first = next(results)
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as admin:
        # no new connection to the database, and the store's own one cut: the retry fails too
        admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = %s", (database,))
        try:
            with pytest.raises(ConnectionError, match=r"^'store': could not write to the "
                               r"batch store at 127\.0\.0\.1:\d+/") as raised:
                next(results)
        finally:
            admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')

    assert all("secret" not in text for text in messages_of(raised.value))
    assert list(results) == []  # the batch ended with the exception
    assert rows(postgres_dsn) == [(first.index, json.dumps(first.input))]


# --- a Dask cluster of separate processes, a worker killed mid-batch ---------------------------


class GatedServer(ChatServer):
    """A chat server that holds each `hold...` request until `gate` is set, and notes which
    process sent it (its system prompt, `pid <n>`: `make_pid_agent`) in `held`."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.held: list[tuple[str, int]] = []
        self.changed = threading.Condition(self.lock)
        self.RequestHandlerClass = _GatedHandler


class _GatedHandler(_Handler):
    server: GatedServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = json.loads(body)
        prompt = request["messages"][-1]["content"]
        if isinstance(prompt, str) and prompt.startswith("hold"):
            system = request["messages"][0]["content"]
            with self.server.changed:
                self.server.held.append((prompt, int(system.removeprefix("pid "))))
                self.server.changed.notify_all()
            self.server.gate.wait(WAIT_S)
        connection, self.rfile = self.rfile, io.BytesIO(body)  # the body read again
        try:
            super().do_POST()
        finally:
            self.rfile = connection


def _wait_for_file(path: Path, processes: list[subprocess.Popen[bytes]]) -> None:
    """Wait for the file a Dask process writes; fail if one exits first (the test's timeout
    ends a hang)."""
    tick = threading.Event()
    while not path.exists() or not path.read_text().strip():
        assert all(p.poll() is None for p in processes), "a Dask process exited"
        tick.wait(0.05)


@pytest.fixture
def dask_processes(tmp_path: Path) -> Iterator[tuple[Any, dict[int, subprocess.Popen[bytes]]]]:
    """A Dask scheduler and two workers (2 threads each, no nanny), each its own process, and
    a `Client` of them: `(client, {pid: worker process})`. All stopped at teardown."""
    distributed = pytest.importorskip("distributed", reason="dask is not installed (extra)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(paths.ROOT), str(paths.TESTS)])}
    scheduler_file = tmp_path / "scheduler.json"
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str, log: str) -> subprocess.Popen[bytes]:
        with open(tmp_path / log, "wb") as out:
            process = subprocess.Popen([sys.executable, "-m", *args], env=env, cwd=tmp_path,
                                       stdout=out, stderr=subprocess.STDOUT)
        started.append(process)
        return process

    client = None
    try:
        start("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
              "--no-dashboard", "--scheduler-file", str(scheduler_file), log="scheduler.log")
        # the workers start meanwhile, and find the scheduler through its file
        workers = [start("distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file),
                         "--nthreads", "2", "--nworkers", "1", "--no-nanny", "--no-dashboard",
                         "--host", "127.0.0.1", "--local-directory", str(tmp_path / f"w{i}"),
                         log=f"worker{i}.log") for i in range(2)]
        _wait_for_file(scheduler_file, started)
        address = json.loads(scheduler_file.read_text())["address"]
        client = distributed.Client(address, timeout=WAIT_S)
        client.wait_for_workers(2, timeout=WAIT_S)
        yield client, {w.pid: w for w in workers}
    finally:
        if client is not None:
            client.close(timeout=WAIT_S)
        # the workers before the scheduler: a worker told to stop while its scheduler closes
        # can hang in its shutdown (seen about once in five runs)
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(STOP_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(WAIT_S)


@pytest.mark.timeout(240)
def test_run_batch_on_dask_processes_a_killed_worker_loses_no_result(
    dask_processes: tuple[Any, dict[int, subprocess.Popen[bytes]]], postgres_dsn: str,
) -> None:
    client, workers = dask_processes
    server = GatedServer()
    inputs = ["hello 0", "hello 1", *[f"hold {i}" for i in range(2, 10)]]
    got: list[BatchResult] = []
    try:
        # 4 runs in flight (one per worker thread), each its own task: two answered at once,
        # then only runs held at the gate until one of the workers running them is killed
        results = run_batch(functools.partial(make_pid_agent, server.url), inputs,
                            executor=client.get_executor(), max_concurrency=4,
                            store=postgres_dsn)
        for result in results:
            got.append(result)
            if len(got) == 2:
                with server.changed:
                    assert server.changed.wait_for(lambda: server.held, WAIT_S)
                    victim = server.held[0][1]  # a worker now inside a held run
                workers[victim].send_signal(signal.SIGKILL)
                workers[victim].wait(WAIT_S)
                server.gate.set()
    finally:
        server.gate.set()
        server.close()

    assert sorted(r.index for r in got) == list(range(10))  # the batch finished
    assert [r.text for r in sorted(got, key=lambda r: r.index)] == [f"echo: {i}" for i in inputs]
    assert all(r.error is None for r in got)
    assert rows(postgres_dsn) == [(i, json.dumps(text)) for i, text in enumerate(inputs)]
    [survivor] = set(workers) - {victim}
    lost = {prompt for prompt, pid in server.held if pid == victim}
    assert lost  # the killed worker was running these...
    assert lost <= {prompt for prompt, pid in server.held if pid == survivor}  # ...rerun here
    assert workers[victim].returncode == -signal.SIGKILL
