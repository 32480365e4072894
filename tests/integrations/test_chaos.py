"""Chaos (API §24): 500 runs against a primary model whose server fails a lot, with one fallback.

The primary's server (real HTTP on 127.0.0.1) answers 10 % of requests with a 5xx, cuts 5 % of
its streams after their first chunk, and sends bursts of 429s without `Retry-After`; the
fallback's server is healthy. Each run asks for one tool call and then answers, so a run has
two model calls, either of which may fail. Every run must end with the right transcript: its
own prompt, one call of the tool with its own argument, that call's result and the final
answer, with no failed or partial reply left in it, and the tool run exactly once.
"""

from __future__ import annotations

import collections
import json
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from replies import completions_reply
from sse_server import RecordedRequest, SSEServer

import agentcore as ac
from agentcore.batch import run_batch

RUNS = 500
BURST_EVERY, BURST_LENGTH = 97, 5  # a burst of 429s starts every 97th request


def answer_for(request: RecordedRequest) -> bytes:
    """The reply a well model gives: a call of `echo` to a task, the answer to its result."""
    last = request.json["messages"][-1]
    if last["role"] == "user":
        n = int(last["content"].split()[-1])
        return completions_reply(calls=[(f"call-{n}", "echo", {"n": n})])
    n = int(last["content"].split()[-1])
    return completions_reply(text=f"done {n}")


def healthy(request: RecordedRequest) -> Callable[[Any], None]:
    body = answer_for(request)

    def run(handler: Any) -> None:
        handler.start_stream(None)
        handler.send_chunk(body)
        handler.end_stream()

    return run


class Chaos:
    """The primary's answers: seeded failures, counted by kind."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.seen = 0
        self.counts: collections.Counter[str] = collections.Counter()

    def __call__(self, request: RecordedRequest) -> Callable[[Any], None]:
        with self.lock:
            self.seen += 1
            roll = self.random.random()
            if self.seen % BURST_EVERY < BURST_LENGTH:
                kind = "429"
            elif roll < 0.10:
                kind = "5xx"
            elif roll < 0.15:
                kind = "cut"
            else:
                kind = "ok"
            self.counts[kind] += 1
        if kind == "429":
            return lambda h: _status(h, 429, '{"error": {"message": "rate limited"}}')
        if kind == "5xx":
            return lambda h: _status(h, 503, '{"error": {"message": "overloaded"}}')
        if kind == "ok":
            return healthy(request)
        body = answer_for(request)

        def cut(handler: Any) -> None:  # the first chunk, then the connection drops
            handler.start_stream(None)
            handler.send_chunk(body[: body.index(b"\n\n") + 2])
            handler.wfile.flush()
            handler.close_connection = True

        return cut


def _status(handler: Any, code: int, text: str) -> None:
    data = text.encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture
def servers() -> Iterator[tuple[SSEServer, SSEServer]]:
    primary, backup = SSEServer(), SSEServer()
    try:
        yield primary, backup
    finally:
        primary.close()
        backup.close()
    assert not primary.errors
    assert not backup.errors


@pytest.mark.slow
def test_chaos_500_runs_with_one_fallback_all_complete_with_exact_transcripts(
        servers: tuple[SSEServer, SSEServer], backoffs: list[int]) -> None:
    primary_server, backup_server = servers
    chaos = Chaos(seed=35)
    primary_server.answer_all(chaos)
    backup_server.answer_all(healthy)
    primary = ac.Model("a", "a", "openai-completions", "openai", f"{primary_server.url}/v1")
    backup = ac.Model("b", "b", "openai-completions", "openai", f"{backup_server.url}/v1")
    ran: collections.Counter[int] = collections.Counter()
    ran_lock = threading.Lock()

    @ac.tool
    def echo(n: int) -> str:
        """Echo a number."""
        with ran_lock:
            ran[n] += 1
        return f"echoed {n}"

    # No circuit breaker (threshold 0): every call meets the chaos, none skips it
    def make_agent() -> ac.Agent:
        return ac.Agent(primary, tools=[echo], fallback_models=[backup],
                        circuit_breaker=ac.CircuitBreaker(failure_threshold=0))

    results = sorted(run_batch(make_agent, [f"task {n}" for n in range(RUNS)],
                               max_concurrency=16), key=lambda r: r.index)
    assert [r.error for r in results if r.error] == []
    for n, result in enumerate(results):
        messages = result.messages
        assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
        call, answer = messages[1], messages[3]
        assert isinstance(call, ac.AssistantMessage)
        assert isinstance(answer, ac.AssistantMessage)
        assert [(c.id, c.name, c.arguments) for c in call.tool_calls] == [
            (f"call-{n}", "echo", {"n": n})]
        assert messages[2].content == [ac.TextContent(f"echoed {n}")]  # type: ignore[union-attr]
        assert answer.text == f"done {n}"
        assert result.text == f"done {n}"
    assert ran == collections.Counter(range(RUNS))  # every tool call ran, and once
    # The chaos was real: each kind of failure happened, and the fallback served turns
    assert {kind for kind, count in chaos.counts.items() if count} == {"ok", "5xx", "cut", "429"}
    assert len(backup_server.requests) >= chaos.counts["cut"]  # a cut stream is never retried
    assert len(primary_server.requests) == sum(chaos.counts.values())
    served_by = collections.Counter(
        m.model for r in results for m in r.messages if isinstance(m, ac.AssistantMessage))
    assert served_by["a"] > 0
    assert served_by["b"] > 0
    assert json.dumps(sorted(served_by)) == '["a", "b"]'
