"""`agentcore.web.app` on a real uvicorn server on a thread, for the tests that start one per
app (the guard's, the conversations'): each with its own options, stopped at the test's end."""

from __future__ import annotations

from typing import Any

import requests
import uvicorn
from uvicorn_thread import ThreadServer

import agentcore as ac

__all__ = ["WAIT", "Maker", "Served", "error_of", "run_body"]

WAIT = 10.0


class Maker:
    """A `make_agent` that records the threads it was asked for: empty means nothing ran."""

    def __init__(self, model: ac.Model, session_path: Any = None) -> None:
        self.model = model
        self.session_path = session_path
        self.calls: list[str] = []

    def __call__(self, thread_id: str) -> ac.Agent:
        from agentcore.sessions import SqliteSession

        self.calls.append(thread_id)
        session = None if self.session_path is None else SqliteSession(
            self.session_path, session_id=thread_id)
        return ac.Agent(self.model, session=session)


class Served:
    """The app on a uvicorn thread server; `url` without a trailing slash."""

    def __init__(self, asgi: Any) -> None:
        config = uvicorn.Config(asgi, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="on")
        self.server = ThreadServer(config)
        self.server.start(name="test-uvicorn")
        assert self.server.ready.wait(WAIT), "uvicorn did not start in time"
        assert self.server.started, "uvicorn did not start"
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.http = requests.Session()
        self.http.trust_env = False

    def post(self, body: Any, **kwargs: Any) -> requests.Response:
        """POST a run: a dict as JSON, bytes or str as they are (headers as given)."""
        if isinstance(body, (bytes, str)):
            return self.http.post(f"{self.url}/ag-ui", data=body, timeout=WAIT, **kwargs)
        return self.http.post(f"{self.url}/ag-ui", json=body, timeout=WAIT, **kwargs)

    def stop(self) -> None:
        self.http.close()
        self.server.stop(WAIT)


def run_body(thread_id: str = "t", text: str = "hi") -> dict[str, Any]:
    """A `RunAgentInput` (camelCase) sending `text` on `thread_id`."""
    return {"threadId": thread_id, "runId": "r1", "state": None, "tools": [], "context": [],
            "forwardedProps": None, "messages": [{"id": "u1", "role": "user", "content": text}]}


def error_of(reply: requests.Response, status: int) -> str:
    """The message of a JSON error reply with `status`."""
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"] == "application/json"
    return str(reply.json()["error"])
