"""An `Agent`'s session (API §13): its transcript loaded and repaired, each message saved.

With a session that keeps a journal (`SessionJournal`; API §24) the start of each tool call
is stored before the call runs and its result as soon as it ends, from the tool events the
agent handles on the run's thread; the repair after a crash reads it back.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

from .._core import (
    AgentEvent,
    AgentMessage,
    AgentTool,
    ChildPauses,
    JournalEntry,
    Lease,
    Session,
    SessionBusyError,
    SessionJournal,
    SessionLease,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    answer_interrupted,
    find_pause,
    idempotency_key,
    session_scope,
    tool_result_message,
)
from ._subagent import load_paused_children

__all__ = ["SessionWriter", "load_transcript", "open_transcript"]

_session_log = logging.getLogger("agentcore.sessions")


def load_transcript(session: Session, check: Callable[[list[AgentMessage]], None],
                    tools: Sequence[AgentTool], children: ChildPauses | None = None,
                    name: str = "agent") -> list[AgentMessage]:
    """The session's transcript, checked by `check`, its interrupted tool calls answered.

    The answers are stored in the session too, so that the transcript it holds can be
    continued at once: from the session's journal when it keeps one (a finished call's real
    result, else an error saying whether the call was running or never started), else the
    error `INTERRUPTED_TEXT` (see `answer_interrupted`). Calls waiting for approval (by
    `tools`' rules; API §20) were never interrupted: none of their batch ran, and they stay
    pending; so do the calls whose child agents wait for approval in their own sessions
    (recorded in `children`; API §25), for the agent named `name`.
    """
    loaded = session.load()
    check(loaded)
    if find_pause(loaded, tools) is not None:
        return loaded
    waiting = set() if children is None else load_paused_children(children, loaded, tools,
                                                                   name)
    repaired = answer_interrupted(loaded, None, waiting)
    if len(repaired) != len(loaded):
        journal = _journal_of(session)
        if journal is not None:
            repaired = answer_interrupted(loaded, journal, waiting)
        _session_log.warning("%r: %d tool call(s) of the last run never got a result in the "
                             "transcript; they get %s", session, len(repaired) - len(loaded),
                             "an 'interrupted' error result (a denied one, its denial)"
                             if journal is None else "their journaled result, or an "
                             "'interrupted' error result saying whether they ran")
        if repaired[:len(loaded)] == loaded:
            session.append(repaired[len(loaded):])
        else:
            session.replace(repaired)
    return repaired


def open_transcript(session: Session, check: Callable[[list[AgentMessage]], None],
                    tools: Sequence[AgentTool], children: ChildPauses,
                    name: str) -> list[AgentMessage]:
    """The transcript an `Agent` opens with: `load_transcript`'s, unless another agent drives it.

    With a session that has a lease (API §27), the repair needs it: calls left without a
    result may be running in the holder's process right now, and answering them
    "interrupted" would be false. While another holder keeps the lease, the transcript is
    loaded as it is (the run that takes the lease later loads it again, and repairs it).
    """
    if not isinstance(session, SessionLease):
        return load_transcript(session, check, tools, children, name)
    try:
        lease = session.lease(0.0)
    except SessionBusyError:
        loaded = session.load()
        check(loaded)
        return loaded
    try:
        return load_transcript(session, check, tools, children, name)
    finally:
        lease.release()


def _journal_of(session: Session) -> Sequence[JournalEntry] | None:
    """The session's journal; None without one, or when it cannot be read (logged)."""
    if not isinstance(session, SessionJournal):
        return None
    try:
        return session.load_journal()
    except Exception:
        _session_log.exception("%r: could not read the journal of tool calls; the interrupted "
                               "calls get the text of a session without one", session)
        return None


class SessionWriter:
    """Appends each message of an agent's runs to its session, and journals its tool calls.

    Never raises. A failed append is logged at ERROR on `agentcore.sessions` and leaves the
    session behind the transcript: the next message then replaces the session's transcript
    with the whole of it instead (until that succeeds), so the session never keeps a gap. A
    failed journal write is logged the same way; the run goes on. Used on the run's thread
    only, one run at a time. `scope` is the idempotency scope of the session's tool calls.

    With a session that has a lease (API §27), `claim` takes it before a run and `release`
    gives it up after. An append refused because the lease was lost (`SessionBusyError`:
    another holder may drive the session now) is raised, once, into the run, which then ends
    in error; nothing more of that run is stored.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.scope = session_scope(session)
        self._journal = session if isinstance(session, SessionJournal) else None
        self._leases = session if isinstance(session, SessionLease) else None
        self._lease: Lease | None = None
        self._lost = False
        self._behind = False

    def claim(self, timeout: float) -> bool:
        """Take the session's lease, if it has one; whether to load the transcript again.

        Raises `SessionBusyError` when another holder keeps it past `timeout` seconds. The
        transcript is loaded again when another writer changed it since this agent's last
        write, unless this agent could not store its own messages (then its own transcript
        replaces the session's at its next message, as after any failed append).
        """
        if self._leases is None:
            return False
        self._lease = self._leases.lease(timeout)
        self._lost = False
        return self._lease.changed and not self._behind

    @contextlib.contextmanager
    def claimed(self, timeout: float, reload: Callable[[], None]) -> Iterator[None]:
        """The lease, taken for a run (`claim`): `reload()` first when others changed it.

        The lease stays held when the block starts a run (the run's end releases it), and is
        released when the block raises.
        """
        try:
            if self.claim(timeout):
                reload()
            yield
        except BaseException:
            self.release()
            raise

    @contextlib.contextmanager
    def held(self, timeout: float) -> Iterator[None]:
        """The lease, held for a write outside runs (`reset`, assigning `messages`)."""
        self.claim(timeout)
        try:
            yield
        finally:
            self.release()

    @property
    def behind(self) -> bool:
        """Whether the session lacks messages the agent has (a failed append; see the class)."""
        return self._behind

    def release(self) -> None:
        """Give up the lease `claim` took, if any (never raises)."""
        lease, self._lease = self._lease, None
        if lease is not None:
            try:
                lease.release()
            except Exception:
                _session_log.exception("%r: could not release the lease", self.session)

    def handle(self, event: AgentEvent, ended: AgentMessage | None,
               transcript: Callable[[], list[AgentMessage]]) -> None:
        """Store what `event` makes durable: its ended message, or its tool call's journal."""
        if ended is not None:
            self.save(ended, transcript)
        elif self._journal is not None and not self._lost and isinstance(
                event, (ToolExecutionStartEvent, ToolExecutionEndEvent)):
            self._note(self._journal, event)

    def save(self, message: AgentMessage, transcript: Callable[[], list[AgentMessage]]) -> None:
        """Store `message`, the last of `transcript()` (called only to catch up after a failure)."""
        if self._lost:
            return
        try:
            if self._behind:
                self.replace(transcript())
            else:
                self.session.append([message])
        except SessionBusyError:
            self._lost = True
            _session_log.error("%r: the lease was lost; the run ends, and stores nothing more",
                               self.session)
            raise
        except Exception:
            self._behind = True
            _session_log.exception("%r: could not save a %r message; it stays in the agent's "
                                   "messages, and the run goes on", self.session, message.role)

    def replace(self, messages: list[AgentMessage]) -> None:
        """Replace the session's transcript by `messages` (raises what the session raises)."""
        self.session.replace(messages)
        self._behind = False

    def _note(self, journal: SessionJournal,
              event: ToolExecutionStartEvent | ToolExecutionEndEvent) -> None:
        """Journal a call's start (before it runs) or its end (its result message)."""
        try:
            if isinstance(event, ToolExecutionStartEvent):
                journal.journal_start(event.tool_call_id, event.tool_name,
                                      idempotency_key(self.scope, event.tool_call_id))
            else:
                journal.journal_end(tool_result_message(event.tool_call_id, event.tool_name,
                                                        event.result, event.is_error))
        except Exception:
            _session_log.exception("%r: could not journal the %s of tool call %r; the run goes "
                                   "on (a crash now would leave the call 'interrupted')",
                                   self.session, "start" if isinstance(
                                       event, ToolExecutionStartEvent) else "end",
                                   event.tool_call_id)
