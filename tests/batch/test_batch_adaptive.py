"""`run_batch`'s adaptive concurrency over real HTTP (API §24).

The server (`tests/capped_server.py`) streams `echo: <prompt>` to at most 5 requests at once
and answers any other with a 429 that names no delay. Backoffs are instant (`backoffs`), so the
figures are counts of requests, never times: the same batch of 150 runs with 50 at once, with
and without `adaptive`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest
import requests
from _internals import RunSettings, run_group
from batch_agents import make_agent
from capped_server import CappedServer

import agentcore as ac
from agentcore.batch import BatchResult, run_batch

CAPACITY = 5
RUNS = 150
AT_ONCE = 50


@pytest.fixture
def server() -> Iterator[CappedServer]:
    """A server of 5 streams at once, each of 7 writes 1 ms apart; closed at teardown."""
    server = CappedServer(CAPACITY, delay_s=0.001)
    try:
        yield server
    finally:
        server.close()


def prompts(count: int) -> list[str]:
    return [f"p{i}" for i in range(count)]


def agents(server: CappedServer) -> functools.partial[ac.Agent]:
    """Agents on `server` without tools: each run is one request."""
    return functools.partial(make_agent, server.url, ())


def check_all_answered(results: list[BatchResult], count: int) -> None:
    assert sorted(r.index for r in results) == list(range(count))
    assert [r.error for r in results if r.error is not None] == []
    assert all(r.text == f"echo: p{r.index}" for r in results)


def test_an_adaptive_batch_completes_every_run_with_few_429s(
        server: CappedServer, backoffs: list[int]) -> None:
    results = list(run_batch(agents(server), prompts(RUNS), max_concurrency=AT_ONCE))
    check_all_answered(results, RUNS)
    assert server.refused < 0.1 * server.requests
    # every 429 was retried (a slot taken anew), and nothing else was sent
    assert server.requests == RUNS + server.refused
    assert len(backoffs) == server.refused
    assert server.max_streaming == CAPACITY


def test_without_adaptive_the_same_batch_collects_many_more_429s(
        server: CappedServer, backoffs: list[int]) -> None:
    results = list(run_batch(agents(server), prompts(RUNS), max_concurrency=AT_ONCE,
                             adaptive=False))
    assert len(results) == RUNS
    assert server.refused > 0.3 * server.requests  # adaptive: under 0.1
    failed = [r for r in results if r.error is not None]
    assert failed  # three 429s in a row: the run's retries ran out
    assert all(r.error is not None and r.error.startswith("429") for r in failed)


def test_a_batch_adapts_over_the_agents_own_session(
        server: CappedServer, backoffs: list[int]) -> None:
    answers: list[int] = []
    with requests.Session() as session:
        session.hooks["response"].append(lambda response, **_: answers.append(
            response.status_code))

        def make() -> ac.Agent:
            model = ac.Model("m-1", "M", "openai-completions", "openai", server.url)
            return ac.Agent(model, api_key="k", http_session=session)

        results = list(run_batch(make, prompts(40), max_concurrency=40))
    check_all_answered(results, 40)
    assert len(answers) == server.requests  # every request went through the session
    assert answers.count(429) == server.refused < 0.25 * server.requests


def test_a_remote_group_adapts_with_limits_of_its_own(
        server: CappedServer, backoffs: list[int]) -> None:
    # what a worker process runs, here on this process's threads
    items = [(i, prompt, None) for i, prompt in enumerate(prompts(30))]
    wires = run_group(agents(server), items, None, "tool", RunSettings())
    assert sorted(int(w["index"]) for w in wires) == list(range(30))
    assert [w["error"] for w in wires if w["error"] is not None] == []
    assert server.requests == 30 + server.refused
    assert server.refused < 0.25 * server.requests
