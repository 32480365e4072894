"""An `Agent`'s session (API §13): its transcript loaded and repaired, each message saved."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from .._core import AgentMessage, AgentTool, Session, answer_interrupted, find_pause

__all__ = ["SessionWriter", "load_transcript"]

_session_log = logging.getLogger("agentcore.sessions")


def load_transcript(session: Session, check: Callable[[list[AgentMessage]], None],
                    tools: Sequence[AgentTool]) -> list[AgentMessage]:
    """The session's transcript, checked by `check`, its interrupted tool calls answered.

    The answers (error results saying the process ended) are stored in the session too, so
    that the transcript it holds can be continued at once. Calls waiting for approval (by
    `tools`' rules; API §20) were never interrupted: none of their batch ran, and they stay
    pending.
    """
    loaded = session.load()
    check(loaded)
    if find_pause(loaded, tools) is not None:
        return loaded
    repaired = answer_interrupted(loaded)
    if len(repaired) != len(loaded):
        _session_log.warning("%r: %d tool call(s) of the last run never got a result; they get "
                             "an 'interrupted' error result (a denied one, its denial)", session,
                             len(repaired) - len(loaded))
        if repaired[:len(loaded)] == loaded:
            session.append(repaired[len(loaded):])
        else:
            session.replace(repaired)
    return repaired


class SessionWriter:
    """Appends each message of an agent's runs to its session; never raises.

    A failed append is logged at ERROR on `agentcore.sessions` and leaves the session behind
    the transcript: the next message then replaces the session's transcript with the whole of
    it instead (until that succeeds), so the session never keeps a gap. Used on the run's
    thread only, one run at a time.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self._behind = False

    def save(self, message: AgentMessage, transcript: Callable[[], list[AgentMessage]]) -> None:
        """Store `message`, the last of `transcript()` (called only to catch up after a failure)."""
        try:
            if self._behind:
                self.replace(transcript())
            else:
                self.session.append([message])
        except Exception:
            self._behind = True
            _session_log.exception("%r: could not save a %r message; it stays in the agent's "
                                   "messages, and the run goes on", self.session, message.role)

    def replace(self, messages: list[AgentMessage]) -> None:
        """Replace the session's transcript by `messages` (raises what the session raises)."""
        self.session.replace(messages)
        self._behind = False
