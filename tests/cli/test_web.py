"""`python -m agentcore web`: the chat page and AG-UI endpoint on uvicorn, run as a user runs it.

Each test starts the command in a real process on a free port (`--port 0`; the first line it
prints is the URL), talks to it over HTTP, then stops it with SIGINT as Ctrl-C would.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from _internals import cli

pytest.importorskip("uvicorn")
pytest.importorskip("ag_ui")

pytestmark = pytest.mark.slow  # each test starts a server process


class WebProcess:
    """A running `python -m agentcore web`, its URL, and a way to stop it."""

    def __init__(self, *args: str) -> None:
        env = {k: v for k, v in os.environ.items()
               if not k.lower().endswith("_proxy") and k != "OPENAI_API_KEY"}
        env["NO_PROXY"] = "127.0.0.1,localhost"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentcore", "web", "--port", "0", "--tokens-per-second",
             "100000", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env)
        assert self.process.stdout is not None
        self.banner = self.process.stdout.readline()
        assert self.banner.startswith("agentcore web: http://127.0.0.1:"), (
            self.banner + self.process.stderr.read() if self.process.stderr else "")
        self.url = self.banner.split()[2]

    def stop(self) -> tuple[int, str, str]:
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=20)
        return self.process.returncode, out, err


@pytest.fixture
def web() -> Iterator[Any]:
    started: list[WebProcess] = []

    def start(*args: str) -> WebProcess:
        started.append(WebProcess(*args))
        return started[-1]

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
            server.process.communicate()


def run(url: str, thread_id: str, text: str | None = None,
        resume: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"threadId": thread_id, "runId": f"run-{text}", "messages": []}
    if text is not None:
        body["messages"] = [{"id": "u", "role": "user", "content": text}]
    if resume is not None:
        body["resume"] = resume
    with requests.post(f"{url}ag-ui", json=body, stream=True, timeout=30) as reply:
        assert reply.status_code == 200, reply.text
        return [json.loads(line[6:]) for line in reply.iter_lines(decode_unicode=True)
                if line.startswith("data: ")]


def test_serves_the_page_and_runs_the_offline_agent_then_stops_on_sigint(web: Any) -> None:
    server = web()
    assert "offline" in server.banner
    page = requests.get(server.url, timeout=10)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    events = run(server.url, "t1", "what is 6*7?")
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_FINISHED"
    assert [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"] == ["42"]
    code, out, err = server.stop()
    assert code == 0, err
    assert out.strip().endswith("agentcore web: stopped")
    assert "Traceback" not in err


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_session_keeps_each_conversation_across_a_restart(web: Any, tmp_path: Path, kind: str,
                                                          request: pytest.FixtureRequest,
                                                          ) -> None:
    path = str(request.getfixturevalue("postgres_dsn") if kind == "postgres"
               else tmp_path / "web.db")
    first = web("--session", path)
    run(first.url, "alice", "what is 1+2?")
    run(first.url, "bob", "hello")
    assert first.stop()[0] == 0
    second = web("--session", path)
    alice = requests.get(f"{second.url}ag-ui/threads/alice", timeout=10).json()
    bob = requests.get(f"{second.url}ag-ui/threads/bob", timeout=10).json()
    assert alice["messages"][0] == {"id": "m0", "role": "user", "content": "what is 1+2?"}
    assert any(m["role"] == "tool" and m["content"] == "3" for m in alice["messages"])
    assert bob["messages"][0]["content"] == "hello"
    assert requests.get(f"{second.url}ag-ui/threads/carol", timeout=10).status_code == 404
    assert second.stop()[0] == 0


def test_confirm_tools_pauses_for_approval_and_resumes_on_allow(web: Any) -> None:
    server = web("--confirm-tools")
    paused = run(server.url, "t", "what is 2+3?")
    outcome = paused[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "tool_approval"
    assert [e["name"] for e in paused if e["type"] == "CUSTOM"] == [
        "agentcore.tool_approval_request"]
    resumed = run(server.url, "t", resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                            "payload": {"approved": True}}])
    assert [e["content"] for e in resumed if e["type"] == "TOOL_CALL_RESULT"] == ["5"]
    assert resumed[-1]["outcome"] == {"type": "success"}
    assert server.stop()[0] == 0


def test_a_model_without_its_api_key_serves_offline_and_says_why(web: Any) -> None:
    server = web("--model", "openai/gpt-4o-mini")
    assert "offline" in server.banner
    events = run(server.url, "t", "what is 2+2?")
    assert [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"] == ["4"]
    code, _, err = server.stop()
    assert code == 0
    assert ("agentcore web: no API key for provider 'openai' (set OPENAI_API_KEY); serving the "
            "offline faux model instead") in err


@pytest.mark.parametrize(("args", "message"), [
    (["--session", "chat.jsonl"], "one SQLite file"),
    (["--base-url", "http://127.0.0.1:9"], "--base-url and --api need --model"),
])
def test_bad_arguments_exit_2_with_a_message(args: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "agentcore", "web", "--port", "0", *args],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert message in done.stderr


def test_a_postgres_session_that_cannot_be_reached_exits_2_without_its_password() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = subprocess.run([sys.executable, "-m", "agentcore", "web", "--port", "0", "--session",
                           f"postgresql://alice:s3cret@127.0.0.1:{port}/chat"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert "python -m agentcore web: error: --session: " in done.stderr
    assert "s3cret" not in done.stderr + done.stdout


def test_a_port_in_use_exits_2_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "agentcore", "web", "--port", str(port)],
                              capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


def test_a_bad_port_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, "-m", "agentcore", "web", "--port", "70000"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert "a port is 0 to 65535" in done.stderr


def test_beyond_loopback_a_random_token_is_printed_and_asked_for(web: Any) -> None:
    server = web("--host", "0.0.0.0")
    assert "listening on every address: 0.0.0.0" in server.banner
    base, _, token = server.url.partition("?token=")
    assert len(token) >= 24
    body = {"threadId": "t", "runId": "r", "messages": [
        {"id": "u", "role": "user", "content": "what is 6*7?"}]}
    refused = requests.post(f"{base}ag-ui", json=body, timeout=30)
    assert refused.status_code == 401
    assert refused.json() == {"error": "this server needs its token"}
    opened = requests.get(server.url, headers={"Accept": "text/html"}, allow_redirects=False,
                          timeout=30)
    assert opened.status_code == 303
    assert f"={token}; HttpOnly" in opened.headers["set-cookie"]
    with requests.post(f"{base}ag-ui", json=body, headers={"Authorization": f"Bearer {token}"},
                       timeout=30) as reply:
        assert reply.status_code == 200
        assert '"RUN_FINISHED"' in reply.text
    code, _, _ = server.stop()
    assert code == 0


def test_a_token_given_on_loopback_is_asked_for_and_allow_origin_admits_a_front_end(
        web: Any) -> None:
    server = web("--token", "let-me-in", "--allow-origin", "http://localhost:3000")
    assert server.url.endswith("/?token=let-me-in")
    base = server.url.partition("?")[0]
    bearer = {"Authorization": "Bearer let-me-in"}
    assert requests.get(f"{base}ag-ui/threads/t", timeout=30).status_code == 401
    assert requests.get(f"{base}ag-ui/threads/t", headers=bearer, timeout=30).status_code == 404
    body = {"threadId": "t", "runId": "r", "messages": [
        {"id": "u", "role": "user", "content": "hi"}]}
    allowed = requests.post(f"{base}ag-ui", json=body, timeout=30,
                            headers={"Origin": "http://localhost:3000", **bearer})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://localhost:3000"
    other = requests.post(f"{base}ag-ui", json=body, timeout=30,
                          headers={"Origin": "http://localhost:4000", **bearer})
    assert other.status_code == 403
    server.stop()


@pytest.mark.parametrize(("args", "message"), [
    (["--no-auth", "--token", "x"], "--no-auth and --token contradict each other"),
    (["--token", " "], "--token: give a non-empty printable token"),
    (["--allow-origin", "localhost:3000"],
     "--allow-origin: 'allowed_origins': 'localhost:3000' is not an origin"),
])
def test_contradicting_or_bad_auth_options_exit_2_before_serving(
        args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["web", "--port", "0", *args]) == 2  # in this process: nothing serves
    out, err = capsys.readouterr()
    assert message in err
    assert "agentcore web: http" not in out
