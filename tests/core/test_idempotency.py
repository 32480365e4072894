"""Idempotency keys and the crash repair that reads a session's journal (API §24).

The keys: `sha256(scope NUL call id)`, 32 hex digits, and the scope a session gives. The repair
(`answer_interrupted`) of a hand-made transcript and journal: a finished call keeps its real
result, a started one "may have taken effect" (with its key), one never started "did not
run", a denied one its denial; without a journal, the old text.
"""

from __future__ import annotations

import hashlib

import pytest
from _internals import (
    INTERRUPTED_NOT_STARTED_TEXT,
    INTERRUPTED_RUNNING_TEXT,
    INTERRUPTED_TEXT,
    answer_interrupted,
    idempotency_key,
    session_scope,
)

import agentcore as ac
from agentcore.sessions import JournalEntry

RUNNING = ("interrupted: the process ended while this tool call was running; it may have taken "
           "effect (idempotency key {key})")
NOT_STARTED = "interrupted: the process ended before this tool call started; it did not run"


def test_the_texts_are_the_contracts() -> None:
    assert INTERRUPTED_RUNNING_TEXT == RUNNING
    assert INTERRUPTED_NOT_STARTED_TEXT == NOT_STARTED
    assert INTERRUPTED_TEXT == "interrupted: the process ended before this tool call finished"


def test_a_key_is_the_sha256_of_scope_and_call_id() -> None:
    key = idempotency_key("sqlite:/data/chat.db#default", "call_1")
    digest = hashlib.sha256(b"sqlite:/data/chat.db#default\0call_1").hexdigest()
    assert key == digest[:32]
    assert idempotency_key("sqlite:/data/chat.db#default", "call_1") == key  # stable
    assert len({key, idempotency_key("sqlite:/data/chat.db#other", "call_1"),
                idempotency_key("sqlite:/data/chat.db#default", "call_2"),
                idempotency_key("a", "b\0c"), idempotency_key("a\0b", "c")}) == 4
    assert idempotency_key("a", "b\0c") == idempotency_key("a\0b", "c")  # NUL: not in paths


class Identified:
    identity = "my-store:42"
    session_id = "ignored"


class WithId:
    session_id = "alice"


class Bare:
    pass


@pytest.mark.parametrize(("session", "scope"), [
    (Identified(), "my-store:42"),
    (WithId(), f"{__name__}.WithId\0alice"),
    (Bare(), f"{__name__}.Bare"),
])
def test_a_session_scope_is_its_identity_else_its_type_and_id(session: object,
                                                              scope: str) -> None:
    assert session_scope(session) == scope


def _reply(*ids: str) -> ac.AssistantMessage:
    return ac.AssistantMessage([ac.ToolCall(i, "pay", {"n": i}) for i in ids], "faux", "faux",
                               "m", stop_reason="toolUse")


def _result(call_id: str, text: str, is_error: bool = False) -> ac.ToolResultMessage:
    return ac.ToolResultMessage(call_id, "pay", [ac.TextContent(text)], is_error=is_error,
                                timestamp=7)


def _answers(messages: list[ac.AgentMessage]) -> list[tuple[str, str, bool]]:
    return [(m.tool_call_id, m.text, m.is_error) for m in messages
            if isinstance(m, ac.ToolResultMessage)]


def test_repair_reads_the_journal_finished_running_never_started() -> None:
    transcript: list[ac.AgentMessage] = [ac.UserMessage("go"), _reply("c1", "c2", "c3", "c4"),
                                         _result("c1", "paid c1")]
    finished = _result("c2", "paid c2")
    journal = [JournalEntry("c1", "pay", "k1", _result("c1", "paid c1")),  # answered: ignored
               JournalEntry("c2", "pay", "k2"), JournalEntry("c3", "pay", "k3"),
               JournalEntry("c2", "pay", "k2", finished)]  # a later record wins
    repaired = answer_interrupted(transcript, journal)
    assert repaired[:3] == transcript
    assert repaired[3] is finished  # the real result, as the journal kept it
    assert _answers(repaired) == [
        ("c1", "paid c1", False), ("c2", "paid c2", False),
        ("c3", RUNNING.format(key="k3"), True), ("c4", NOT_STARTED, True)]
    # Without a journal (a store that keeps none): the one old text, whatever happened.
    assert _answers(answer_interrupted(transcript))[1:] == [
        (i, INTERRUPTED_TEXT, True) for i in ("c2", "c3", "c4")]
    # An empty journal: nothing started.
    assert _answers(answer_interrupted(transcript, []))[1:] == [
        (i, NOT_STARTED, True) for i in ("c2", "c3", "c4")]


def test_repair_keeps_a_denial_and_follows_the_batch_only() -> None:
    transcript: list[ac.AgentMessage] = [
        ac.UserMessage("go"), _reply("a1"), _result("a1", "paid a1"), ac.UserMessage("again"),
        _reply("b1", "b2"), ac.ToolApprovalMessage(["b1"], {"b2": "too much"})]
    journal = [JournalEntry("b2", "pay", "kb2", _result("b2", "denied: too much", True)),
               JournalEntry("b1", "pay", "kb1")]
    assert _answers(answer_interrupted(transcript, journal)) == [
        ("a1", "paid a1", False), ("b1", RUNNING.format(key="kb1"), True),
        ("b2", "denied: too much", True)]
    # A reply that ended in an error never ran its calls: nothing to answer.
    broken = ac.AssistantMessage([ac.ToolCall("e1", "pay", {})], "faux", "faux", "m",
                                 stop_reason="error")
    ended = [transcript[0], broken]
    assert answer_interrupted(ended, journal) == ended
