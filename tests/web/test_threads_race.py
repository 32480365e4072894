"""The app's conversation registry when a history look and a run ask for a new thread at once.

The chat page asks for its thread's history as it loads (`Threads.find`) and may post a prompt
(`Threads.get`) before that answer is back. `find` closes a thread it made only to look at and
found empty; a `get` waiting for that same thread must then not get the closed agent (nor fail
with a KeyError), but a thread of its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

import agentcore as ac
from agentcore.providers.faux import FauxProvider, register_faux_provider
from agentcore.web._threads import Threads


@pytest.fixture
def model() -> Iterator[FauxProvider]:
    provider = register_faux_provider()
    yield provider
    provider.unregister()


async def _until(condition: object) -> None:
    for _ in range(1000):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the event loop never got there")


@pytest.mark.parametrize("max_threads", [10, 1])  # 1: making a thread also evicts another
@pytest.mark.parametrize("first", ["look", "run"])
def test_a_look_and_a_run_asking_for_a_new_thread_at_once(model, first, max_threads):
    release = threading.Event()
    made: dict[str, list[ac.Agent]] = {"t": [], "other": []}

    def make_agent(thread_id: str) -> ac.Agent:
        assert release.wait(5)
        made[thread_id].append(ac.Agent(model.get_model()))
        return made[thread_id][-1]

    async def scenario() -> None:
        threads = Threads(make_agent, max_threads)
        if max_threads == 1:
            release.set()
            await threads.get("other")  # the registry is full: the next thread evicts it
            release.clear()
        ask = {"look": lambda: threads.find("t"), "run": lambda: threads.get("t")}
        second = "run" if first == "look" else "look"
        tasks = {first: asyncio.create_task(ask[first]())}
        await _until(lambda: "t" in threads._making)
        tasks[second] = asyncio.create_task(ask[second]())
        for _ in range(5):  # let it reach its wait for the thread being made
            await asyncio.sleep(0)
        release.set()
        assert await asyncio.wait_for(tasks["look"], 5) is None  # nothing in it yet
        thread = await asyncio.wait_for(tasks["run"], 5)
        run = await asyncio.to_thread(thread.agent.prompt, "hello")  # its agent is open
        await run.wait_async()
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
