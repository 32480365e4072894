"""The app's conversations when a history look and a run ask for the same new thread at once.

The chat page asks for its thread's history as it loads (`GET /ag-ui/threads/{id}`:
`Threads.find`) and a client may post a prompt (`POST /ag-ui`: `Threads.get`) before that
answer is back. `find` closes a thread it made only to look at and found empty; a run waiting
for that same thread must then get a thread of its own (not a KeyError, nor the closed agent),
and a look waiting for the thread a run makes must leave it open.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator

import httpx
import pytest
from _internals import Thread, Threads

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, register_faux_provider
from agentcore.web import app


@pytest.fixture
def model() -> Iterator[FauxProvider]:
    provider = register_faux_provider()
    provider.set_responses([faux_assistant_message("hi")] * 4)
    yield provider
    provider.unregister()


class BlockedMaker:
    """A `make_agent` that says it was called (`entered`) and waits for `release`; `made` holds
    the agents it made per thread id."""

    def __init__(self, model: FauxProvider) -> None:
        self.model = model
        self.entered = threading.Event()
        self.release = threading.Event()
        self.made: dict[str, list[ac.Agent]] = {}

    def __call__(self, thread_id: str) -> ac.Agent:
        self.entered.set()
        assert self.release.wait(5)
        self.made.setdefault(thread_id, []).append(ac.Agent(self.model.get_model()))
        return self.made[thread_id][-1]


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the event loop never got there")


@pytest.mark.parametrize("max_threads", [10, 1])  # 1: making a thread also evicts another
@pytest.mark.parametrize("first", ["look", "run"])
def test_a_look_and_a_run_asking_for_a_new_thread_at_once(model, first, max_threads):
    make_agent = BlockedMaker(model)
    release, made = make_agent.release, make_agent.made

    async def scenario() -> None:
        threads = Threads(make_agent, max_threads)
        if max_threads == 1:
            release.set()
            await threads.get("other")  # the registry is full: the next thread evicts it
            release.clear()

        async def take() -> Thread:  # as `POST /ag-ui` does until its run is recorded
            thread = await threads.get("t")
            thread.starting += 1
            return thread

        ask = {"look": lambda: threads.find("t"), "run": take}
        second = "run" if first == "look" else "look"
        tasks = {first: asyncio.create_task(ask[first]())}
        await _until(lambda: "t" in threads._making)
        tasks[second] = asyncio.create_task(ask[second]())
        for _ in range(5):  # let it reach its wait for the thread being made
            await asyncio.sleep(0)
        release.set()
        assert await asyncio.wait_for(tasks["look"], 5) is None  # nothing in it yet
        thread = await asyncio.wait_for(tasks["run"], 5)
        thread.run = await asyncio.to_thread(thread.agent.prompt, "hello")  # its agent is open
        thread.starting -= 1
        await thread.run.wait_async()
        assert (await threads.find("t")) is thread
        assert thread.agent is made["t"][-1]
        await threads.close_all()

    asyncio.run(scenario())
    if first == "look":  # the look made an agent and closed it; the run made its own
        assert len(made["t"]) == 2
        with pytest.raises(ac.AgentClosedError):
            made["t"][0].prompt("hi")
    else:  # the run made it, the look saw it empty and left it open
        assert len(made["t"]) == 1


def test_a_prompt_posted_while_the_page_loads_its_history_runs(model):
    make_agent = BlockedMaker(model)
    body = {"threadId": "t", "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "hello"}]}

    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app(make_agent))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            look = asyncio.create_task(client.get("/ag-ui/threads/t"))
            assert await asyncio.to_thread(make_agent.entered.wait, 5)
            run = asyncio.create_task(client.post("/ag-ui", json=body))
            for _ in range(50):  # the run reaches its wait for the thread being made
                await asyncio.sleep(0)
            make_agent.release.set()
            return await asyncio.wait_for(look, 5), await asyncio.wait_for(run, 5)

    history, run = asyncio.run(scenario())
    assert history.status_code == 404
    assert run.status_code == 200, run.text
    events = [json.loads(line[6:]) for line in run.text.splitlines()
              if line.startswith("data: ")]
    assert [e["type"] for e in events][-1] == "RUN_FINISHED"
    assert any(e.get("delta") == "hi" for e in events)
    assert len(make_agent.made["t"]) == 2  # the look's, closed again, and the run's
