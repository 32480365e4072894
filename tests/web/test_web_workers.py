"""One conversation across two uvicorn workers (API §27): one driver at a time, no stale reply.

`uvicorn --workers 2` serves `tests/web_workers_app.py` (two processes, each with agents of
its own on one store: a SQLite file, or a PostgreSQL database). A first request runs on the
thread `t` and holds it (its tool waits for the test's gate file). Meanwhile, requests for
the same thread get 409 from whichever worker takes them: from the other worker too, where
only the session's lease knows the thread is busy. Once the run ends, prompts on the thread
are answered from the whole conversation by either worker (each reply says how many user
messages its model saw), the store holds every message once, in order, and either worker's
history of the thread (`GET /ag-ui/threads/t`) is all of it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paths
import pytest

import agentcore as ac

httpx = pytest.importorskip("httpx", reason="httpx is not installed (the test extra)")
pytest.importorskip("uvicorn", reason="uvicorn is not installed (web extra)")

pytestmark = pytest.mark.slow

FRESH = {"connection": "close"}
"""Every request on a connection of its own, which either worker may accept."""
MAX_TRIES = 60
"""Requests sent until one lands on the other worker (each lands on either, as the kernel
hands out connections; 60 all on one worker would be a 1 in 2^59 chance)."""


def body(text: str, run_id: str) -> dict[str, Any]:
    return {"threadId": "t", "runId": run_id, "tools": [], "context": [], "state": None,
            "forwardedProps": None, "messages": [{"id": run_id, "role": "user", "content": text}]}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "web.db")
    return str(request.getfixturevalue("postgres_dsn"))


@pytest.fixture
def served(store: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The two-worker server's URL, and its gate file (absent: `hold` waits)."""
    gate, port = tmp_path / "gate", free_port()
    env = {**os.environ, "AGENTCORE_TEST_STORE": store, "AGENTCORE_TEST_GATE": str(gate),
           "PYTHONPATH": os.pathsep.join([str(paths.TESTS), str(paths.ROOT)])}
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "--workers", "2",
                               "--host", "127.0.0.1", "--port", str(port), "--log-level",
                               "warning", "web_workers_app:make_app"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        pids: set[str] = set()
        with httpx.Client(timeout=30, headers=FRESH) as client:
            for _ in range(600):  # until both workers answer (each one's first answer: "up")
                if server.poll() is not None:
                    pytest.fail(f"uvicorn ended: {server.communicate()[0]}")
                try:
                    pids.add(client.get(f"{url}/").headers["x-worker-pid"])
                except httpx.TransportError:
                    threading.Event().wait(0.05)
                    continue
                if len(pids) == 2:
                    break
        assert len(pids) == 2, pids
        yield url, gate
    finally:
        gate.touch()  # a run still holding ends
        server.send_signal(signal.SIGINT)
        try:
            server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def post(client: Any, url: str, text: str, run_id: str) -> tuple[int, str, list[dict[str, Any]]]:
    """POST a run; its status, the worker's pid and (for a 200) its AG-UI events."""
    response = client.post(f"{url}/ag-ui", json=body(text, run_id),
                           headers={"accept": "text/event-stream"})
    events = [json.loads(line[5:]) for line in response.text.splitlines()
              if line.startswith("data:")] if response.status_code == 200 else []
    return response.status_code, response.headers["x-worker-pid"], events


def reply_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def load(store: str) -> list[ac.AgentMessage]:
    if store.startswith("postgresql://"):
        from agentcore.sessions import PostgresSession

        with PostgresSession(store, "t") as session:
            return session.load()
    with ac.SqliteSession(store, "t") as session:
        return session.load()


def test_two_workers_keep_one_driver_and_one_conversation(store: str,
                                                          served: tuple[str, Path]) -> None:
    url, gate = served
    first: list[tuple[int, str, list[dict[str, Any]]]] = []
    with httpx.Client(timeout=60, headers=FRESH) as client:
        holder = threading.Thread(target=lambda: first.append(post(client, url, "one", "r1")))
        holder.start()
        # the first run holds the thread once its call is stored (the tool waits for the gate)
        for _ in range(600):
            if [m.role for m in load(store)][:2] == ["user", "assistant"]:
                break
            threading.Event().wait(0.02)
        else:
            pytest.fail("the first run never reached its tool call")
        refusals: dict[str, int] = {}
        with httpx.Client(timeout=30, headers=FRESH) as other:
            for attempt in range(MAX_TRIES):
                status, pid, _ = post(other, url, "two", f"busy{attempt}")
                assert status == 409, (attempt, status)
                refusals[pid] = refusals.get(pid, 0) + 1
                if len(refusals) == 2:
                    break
        assert len(refusals) == 2, refusals  # both workers refused: the lease, not memory
        gate.touch()
        holder.join(60)
        assert not holder.is_alive()
    [(status, holder_pid, events)] = first
    assert status == 200
    assert reply_text(events) == "answered 1"
    # now the other worker answers a prompt: from the whole conversation, loaded at its lease
    answered: list[str] = []
    with httpx.Client(timeout=60, headers=FRESH) as client:
        for attempt in range(MAX_TRIES):
            status, pid, events = post(client, url, f"prompt {attempt}", f"next{attempt}")
            assert status == 200, status
            answered.append(reply_text(events))
            if pid != holder_pid:
                break
    assert pid != holder_pid
    assert answered == [f"answered {n}" for n in range(2, len(answered) + 2)]
    transcript = load(store)
    users = [m.text for m in transcript if isinstance(m, ac.UserMessage)]
    assert users == ["one", *(f"prompt {n}" for n in range(len(answered)))]
    assert [m.text for m in transcript if isinstance(m, ac.AssistantMessage) and
            not m.tool_calls] == [f"answered {n}" for n in range(1, len(users) + 1)]
    # each worker has served the thread: either one's history is the whole conversation
    histories: dict[str, list[str]] = {}
    with httpx.Client(timeout=60, headers=FRESH) as client:
        for _ in range(MAX_TRIES):
            response = client.get(f"{url}/ag-ui/threads/t")
            histories[response.headers["x-worker-pid"]] = [
                m["content"] for m in response.json()["messages"] if m["role"] == "user"]
            if len(histories) == 2:
                break
    assert histories == {holder_pid: users, pid: users}

