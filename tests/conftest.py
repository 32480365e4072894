"""Shared fixtures: every test must leave no thread behind, and gets a fresh faux provider.

`sse_server` gives a test its own local HTTP server (see `tests/sse_server.py`), `mock_server`
the same scripting with no socket (`tests/mock_server.py`); `aws_env` an isolated AWS
environment with static test credentials (Bedrock's tests). `backoffs`, `hour_long_http_waits`
and `abort_grace` set the HTTP layer's and the loop's waits for one test, so that a test shows
what ends a wait rather than timing it. A test that starts a process must be marked `slow`
(the `slow_tier` plugin, `tests/slow_tier.py`, checks).
`mypy_report` (one mypy run), `dask_client` (one cluster per session) and `postgres_server`
(a real PostgreSQL server; `postgres_dsn` a new database on it) are shared, and made by the
first test that asks.
"""

from __future__ import annotations

import compileall
import importlib.util
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import paths
import pytest
from _internals import _api, clear_pauses, default_breaker
from mock_server import MockServer
from mypy_report import MypyReport, run_mypy_once
from sse_server import SSEServer

from agentcore.providers.faux import FauxProvider, register_faux_provider

pytest_plugins = ["slow_tier"]

THREAD_GRACE_S = 2.0
"""How long the thread check waits for threads that are ending (a passing test never waits
for one that has ended already: the check returns as soon as nothing is left)."""


def pytest_configure(config: pytest.Config) -> None:
    """Write agentcore's bytecode, once per run (in xdist's controller), even under
    PYTHONDONTWRITEBYTECODE.

    Several hundred of the processes the tests start import agentcore; without its bytecode
    each one compiles it anew, about 0.1 s of CPU apiece. (The modules this process imports
    before collection get none written otherwise: the conftest imports them.)
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        compileall.compile_dir(paths.PACKAGE_DIR, quiet=1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker per core, and one more.

    A good share of the suite waits rather than computes (on the processes it starts and
    kills, on sockets, on a browser): with one worker per core those waits leave a core idle.
    On the 2-core VM, 3 workers take the whole suite from 116 s to 100 s and the fast tier
    from 30 s to 28 s.
    """
    return (os.cpu_count() or 1) + 1


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, None, None]:
    """Cache the assertion-rewritten test modules, even under PYTHONDONTWRITEBYTECODE.

    pytest rewrites every test module's asserts on import and caches the result in
    `__pycache__` unless bytecode writing is off; with it off (this machine's environment
    sets PYTHONDONTWRITEBYTECODE=1), every run rewrites ~4,000 asserts again: about 5 s of
    each run's collection. Bytecode writing is on for the collection only.
    """
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = saved


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a test marked `slow` run first, each file's tests in their own order.

    Under xdist (`--dist loadfile`) a worker takes the next file when it is free: with the
    files that start processes and browsers first, the many short files come last and even out
    the workers' ends (else a long file, `tests/web/test_browser.py`, could start last).
    """
    heavy = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in heavy)


# --- every test ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_thread_outlives_the_test() -> Iterator[None]:
    """Fail a test that leaves a thread running (after a short grace for threads ending)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + THREAD_GRACE_S
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            break
        extra[0].join(0.05)
    assert not extra, f"threads outlived the test: {[t.name for t in extra]}"


@pytest.fixture(autouse=True)
def no_shared_http_state_outlives_the_test() -> Iterator[None]:
    """Forget the shared 429 pauses and open circuits a test left (a later test's server may
    reuse the port)."""
    yield
    clear_pauses()
    default_breaker().reset()


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    """A faux provider registered for one test, with one-token chunks for exact event counts."""
    provider = register_faux_provider(token_size=(1, 1))
    yield provider
    provider.unregister()


@pytest.fixture
def sse_server() -> Iterator[SSEServer]:
    """A scripted HTTP server on 127.0.0.1 for one test; closed and joined on teardown."""
    server = SSEServer()
    try:
        yield server
    finally:
        server.close()
    assert not server.errors, f"sse server failed: {server.errors!r}"


@pytest.fixture
def mock_server(monkeypatch: pytest.MonkeyPatch) -> MockServer:
    """`sse_server`'s scripting with no socket: every request the test sends through the
    process's shared client (no `http_client` or `http_session` of its own) is answered by it."""
    server = MockServer()
    monkeypatch.setattr(_api, "default_client", lambda: server.client)
    return server


@pytest.fixture
def jupyter_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Keep Jupyter inside tmp_path, with a `python3` kernel spec for this interpreter.

    JUPYTER_PATH comes first in the kernel-spec search, so a user's own `python3` spec for
    another interpreter cannot shadow it. JUPYTER_PLATFORM_DIRS opts in to the platformdirs
    paths, which silences the DeprecationWarning some jupyter_core 5.x releases emit.
    """
    spec_dir = tmp_path / "jupyter" / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (agentcore tests)", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    return "python3"


@pytest.fixture
def backoffs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Backoff sleeps become instant; the list records the attempt number of each."""
    from _internals import _client

    calls: list[int] = []

    def instant(attempt: int) -> float:
        calls.append(attempt)
        return 0.0

    monkeypatch.setattr(_client, "_backoff", instant)
    return calls


@pytest.fixture
def hour_long_http_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connecting may take an hour, and every backoff before a retry lasts one: a request that
    ends sooner in those phases was ended by something else (an abort), not by a timeout."""
    from _internals import _client

    monkeypatch.setattr(_client, "CONNECT_TIMEOUT_S", 3600.0)
    monkeypatch.setattr(_client, "_backoff", lambda attempt: 3600.0)


@pytest.fixture
def abort_grace(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """`abort_grace(seconds)`: the grace the loop gives a call or stream that ignores an abort
    (`ABORT_GRACE_S`, 1 s), for this test; shorter for tests that wait it out, longer for
    tests that show it is not waited for."""

    def set_grace(seconds: float) -> None:
        for name, module in list(sys.modules.items()):
            if name.startswith("agentcore.") and hasattr(module, "ABORT_GRACE_S"):
                monkeypatch.setattr(module, "ABORT_GRACE_S", seconds)

    return set_grace


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    """Static AWS test credentials (`bedrock_replies`) and region us-east-1, isolated.

    Every `AWS_*` variable of the machine is unset and the config files are empty temporary
    files, so neither the machine's profiles nor instance metadata are ever consulted.
    """
    from _internals import _aws
    from bedrock_replies import ACCESS_KEY, SECRET_KEY, SESSION_TOKEN

    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name in ("config", "credentials"):
        (tmp_path / f"aws-{name}").write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    yield monkeypatch
    _aws.forget_credentials()  # no botocore session of this test's environment stays behind


@pytest.fixture
def run_in_thread() -> Iterator[Callable[[Callable[[], None]], None]]:
    """Start helper threads; every one is joined (with a timeout) at teardown."""
    threads: list[threading.Thread] = []

    def start(fn: Callable[[], None]) -> None:
        thread = threading.Thread(target=fn, name="test-helper")
        threads.append(thread)
        thread.start()

    yield start
    for thread in threads:
        thread.join(5.0)
        assert not thread.is_alive()


# --- shared by the modules that ask ----------------------------------------------------------


@pytest.fixture(scope="session")
def mypy_report(tmp_path_factory: pytest.TempPathFactory) -> MypyReport:
    """mypy --strict over `agentcore` and `tests/typing/`, run once per pytest run, xdist's
    workers included (see `tests/mypy_report.py`); skipped without mypy."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed")
    # xdist's workers have base temporary directories side by side, in one made for this run
    in_xdist = os.environ.get("PYTEST_XDIST_WORKER") is not None
    return run_mypy_once(tmp_path_factory.getbasetemp().parent if in_xdist else None)


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    """A Dask `Client` over a `LocalCluster` of two single-threaded worker processes.

    One per session (per xdist worker; starting one takes 1-2 s), made when first asked, warmed
    up with a task so that distributed's long-lived threads (`Dask-Offload`, the client's event
    loop) exist before a test's thread check starts. The workers are shared: a test must
    leave them idle (a tool it holds on a worker released by its end).
    """
    distributed = pytest.importorskip("distributed", reason="dask is not installed (extra)")
    # ":0": the scheduler's HTTP server on a free port (None still takes 8787, and a cluster
    # already there makes the warning that it moved an error here)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        assert client.submit(abs, -1).result(30) == 1
        yield client


@pytest.fixture
def quick_server() -> Iterator[Any]:
    """A chat server (`tests/chat_server.py`) that drops a connection idle for 1 s (`quick`).

    For runs on Dask workers, which keep their connections: the server's threads end at
    teardown without waiting for the workers to let go.
    """
    from chat_server import ChatServer, quick

    server = quick(ChatServer())
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real PostgreSQL server (`tests/pg_server.py`), one per session (per xdist worker).

    Made when first asked (initdb and start take about a second), stopped at the end. Its
    tests start processes: mark them `slow`.
    """
    pytest.importorskip("psycopg", reason="psycopg is not installed (extra postgres)")
    from pg_server import PostgresServer

    server = PostgresServer.start(tmp_path_factory.mktemp("postgres"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_dsn(postgres_server: Any) -> str:
    """The DSN of a new, empty database of the test's own on `postgres_server`."""
    dsn: str = postgres_server.new_database()
    return dsn
