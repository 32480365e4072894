"""The app's conversations: one `Agent` per AG-UI `threadId`, made on first use, kept LRU.

`make_agent(thread_id)` runs on a worker thread (it may open a session file or start an MCP
server). Past `max_threads` conversations the least recently used idle ones are closed (the
agent, then its session if the session has a `close`); with a session, the next request for
that thread makes its agent again and the conversation goes on where it stopped. All methods
run on the app's event loop: the registry itself needs no lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable

import attrs

from .._agent import Agent, AgentRun
from .._core import AbortSignal, AgentEvent, AgentStartEvent

__all__ = ["MakeAgent", "Thread", "Threads"]

_log = logging.getLogger(__name__)

MakeAgent = Callable[[str], Agent]


@attrs.define(eq=False)
class Thread:
    """One conversation: its agent, the run streaming now (or last), when it was last used."""

    thread_id: str
    agent: Agent
    run: AgentRun | None = None
    used: float = attrs.field(factory=time.monotonic)
    starting: int = 0  # requests between being handed this thread and recording their run
    # Each run's first transcript position (by its signal), noted as it starts: its messages'
    # ids are their positions, as in the history (`first_position`)
    _firsts: dict[AbortSignal, int] = attrs.field(init=False, factory=dict)
    # How long each tool call of its streams took (call id -> ms), for the history to show
    durations: dict[str, float] = attrs.field(init=False, factory=dict)

    def note(self, event: AgentEvent, signal: AbortSignal) -> None:
        """The agent's listener (on the run's thread): where each run's messages begin.

        At `agent_start` no message of the run is in the transcript yet.
        """
        if isinstance(event, AgentStartEvent):
            if len(self._firsts) > 16:  # runs nobody streamed (the app streams all of its own)
                self._firsts.clear()
            self._firsts[signal] = len(self.agent.messages)

    def first_position(self, run: AgentRun) -> int | None:
        """Where `run`'s first message sits in the transcript (None if it did not start)."""
        return self._firsts.pop(run.signal, None)

    def busy(self) -> bool:
        """Whether a run is going, or about to start (eviction passes a busy thread by)."""
        return self.starting > 0 or (self.run is not None and not self.run.done())


class Threads:
    """The registry of conversations (see the module docstring)."""

    def __init__(self, make_agent: MakeAgent, max_threads: int) -> None:
        self._make_agent = make_agent
        self._max_threads = max_threads
        self._threads: OrderedDict[str, Thread] = OrderedDict()
        self._making: dict[str, asyncio.Future[Thread]] = {}

    def __len__(self) -> int:
        return len(self._threads)

    async def get(self, thread_id: str, *, evict: bool = True) -> Thread:
        """The conversation `thread_id`, made now if the app has none by that id.

        A new conversation makes room for itself (`evict`) by closing the least recently
        used idle ones beyond `max_threads`.
        """
        while (thread := self._threads.get(thread_id)) is None:
            making = self._making.get(thread_id)
            if making is None:
                thread = await self._make(thread_id, evict)
                break
            # another request is making it: wait, then look again (a `find` that made it
            # may have closed it at once, finding it empty)
            await asyncio.shield(making)
        self._threads.move_to_end(thread_id)
        thread.used = time.monotonic()
        return thread

    async def find(self, thread_id: str) -> Thread | None:
        """The conversation `thread_id` if it has any message (a session may hold it), else None.

        A thread made here only to look, and found empty, is closed again at once.
        """
        known = thread_id in self._threads
        thread = await self.get(thread_id, evict=False)  # looking evicts nobody ...
        if known or thread.agent.messages:
            if not known:  # ... until the thread turns out to be worth keeping
                await self._evict(keep=thread_id)
            return thread
        if not thread.busy():
            self._threads.pop(thread_id, None)
            await _close(thread)
        return None

    def running(self, thread_id: str) -> bool:
        """Whether the open conversation `thread_id` has a run going (False if not open)."""
        thread = self._threads.get(thread_id)
        return thread is not None and thread.busy()

    async def drop(self, thread: Thread) -> None:
        """Close `thread` and take it out of the registry (a deleted conversation)."""
        if self._threads.get(thread.thread_id) is thread:
            del self._threads[thread.thread_id]
        await _close(thread)

    async def close_all(self) -> None:
        """Close every conversation (at shutdown): running ones are aborted first."""
        threads = list(self._threads.values())
        self._threads.clear()
        await asyncio.gather(*(_close(thread) for thread in threads))

    async def _make(self, thread_id: str, evict: bool) -> Thread:
        future: asyncio.Future[Thread] = asyncio.get_running_loop().create_future()
        self._making[thread_id] = future
        try:
            agent = await asyncio.to_thread(self._make_agent, thread_id)
            if not isinstance(agent, Agent):
                raise TypeError(f"make_agent({thread_id!r}) returned {agent!r}, not an Agent")
            thread = Thread(thread_id, agent)
            agent.subscribe(thread.note)
            self._threads[thread_id] = thread
            if evict:  # before the waiting requests resume: the maker gets the thread first
                await self._evict(keep=thread_id)
            future.set_result(thread)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here: nobody else may be waiting for it
            raise
        finally:
            del self._making[thread_id]
        return thread

    async def _evict(self, keep: str) -> None:
        """Close the least recently used idle conversations beyond `max_threads` (not `keep`)."""
        excess = len(self._threads) - self._max_threads
        if excess <= 0:
            return
        idle = [t for t in self._threads.values()
                if not t.busy() and t.thread_id != keep][:excess]
        for thread in idle:
            del self._threads[thread.thread_id]
        await asyncio.gather(*(_close(thread) for thread in idle))


async def _close(thread: Thread) -> None:
    def close() -> None:
        thread.agent.close()
        close_session = getattr(thread.agent.session, "close", None)
        if close_session is not None:
            with contextlib.suppress(Exception):
                close_session()

    try:
        await asyncio.to_thread(close)
    except Exception:
        _log.exception("closing the agent of thread %r failed", thread.thread_id)
