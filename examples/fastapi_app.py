"""Agents in a FastAPI application: agentcore's AG-UI app and chat page, mounted at /agent.

`agentcore.web.app(make_agent)` is an ASGI app: `POST /ag-ui` runs an agent and streams its
AG-UI events (Server-Sent Events), `GET /` is the chat page. `make_agent(thread_id)` gives each
conversation its own `Agent` (add `session=SqliteSession(path, session_id=thread_id)` to keep
them across restarts). Mounted under a prefix, everything moves with it: the page is at
/agent/ and talks to /agent/ag-ui.

    pip install 'agentcore[web]' fastapi
    python examples/fastapi_app.py          # offline: asks itself one question over HTTP, exits
    python examples/fastapi_app.py --serve  # then open http://127.0.0.1:8000/agent/

The model is scripted (offline): it adds with the `add` tool when asked to, else echoes.
"""

import json
import re
import sys
import threading

import requests
import uvicorn
from fastapi import FastAPI

import agentcore as ac
from agentcore.providers.faux import (
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.web import app as agui_app


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def scripted_reply(context, options, model):
    """The offline model: ask `add` for "a + b" in the prompt, report its result, else echo."""
    last = context.messages[-1]
    if isinstance(last, ac.ToolResultMessage):
        return faux_assistant_message([faux_text(f"The sum is {last.text}.")])
    numbers = re.findall(r"-?\d+", last.text if isinstance(last, ac.UserMessage) else "")
    if len(numbers) >= 2:
        return faux_assistant_message([faux_tool_call(
            "add", {"a": int(numbers[0]), "b": int(numbers[1])})])
    return faux_assistant_message([faux_text(f"You said: {last.text}")])


def build_api(model: ac.Model) -> FastAPI:
    """The application: a route of its own, and the agents mounted at /agent."""
    api = FastAPI(title="agents")

    @api.get("/health")
    def health() -> dict:
        return {"ok": True}

    def make_agent(thread_id: str) -> ac.Agent:
        return ac.Agent(model=model, system_prompt="Be brief.", tools=[add])

    api.mount("/agent", agui_app(make_agent))
    return api


def ask(base_url: str, text: str) -> None:
    """One AG-UI run, as a front end sends it; print what streams back."""
    body = {"threadId": "demo", "runId": "run-1",
            "messages": [{"id": "u1", "role": "user", "content": text}]}
    with requests.post(f"{base_url}/agent/ag-ui", json=body, stream=True, timeout=30) as reply:
        reply.raise_for_status()
        answer = []
        for line in reply.iter_lines(decode_unicode=True):
            if not line.startswith("data: "):
                continue
            event = json.loads(line[len("data: "):])
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                answer.append(event["delta"])
            elif event["type"] == "TOOL_CALL_START":
                print(f"tool call: {event['toolCallName']}")
            elif event["type"] == "TOOL_CALL_RESULT":
                print(f"tool result: {event['content']}")
            elif event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                print(f"{''.join(answer)}\n{event['type']}")


def main() -> None:
    faux = register_faux_provider(tokens_per_second=None)
    faux.set_responses([scripted_reply] * 100)  # offline: enough answers for a short session
    try:
        api = build_api(faux.get_model())
        if "--serve" in sys.argv[1:]:
            print("the chat page: http://127.0.0.1:8000/agent/ (Ctrl-C stops)")
            uvicorn.run(api, host="127.0.0.1", port=8000, log_level="warning")
            return
        server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=0,
                                               log_level="warning"))
        thread = threading.Thread(target=server.run, name="fastapi-example")
        thread.start()
        try:
            while not server.started and thread.is_alive():
                threading.Event().wait(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            base_url = f"http://127.0.0.1:{port}"
            page = requests.get(f"{base_url}/agent/", timeout=10)
            print(f"page: {page.status_code} {page.headers['content-type']}")
            ask(base_url, "What is 2 + 40?")
        finally:
            server.should_exit = True
            thread.join()
    finally:
        faux.unregister()


if __name__ == "__main__":
    main()
