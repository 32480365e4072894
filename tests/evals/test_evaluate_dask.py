"""`evaluate` on a Dask cluster (`dask_client` and `quick_server`, tests/conftest.py).

Runs go to the worker processes through `run_batch`; scores are computed here (API §26).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from batch_agents import make_agent
from chat_server import ChatServer

from agentcore.evals import Case, Equals, MaxDuration, evaluate


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_evaluate_on_a_dask_cluster(dask_client: Any, quick_server: ChatServer) -> None:
    server = quick_server
    cases = [Case(f"hello {i}", f"echo: hello {i}") for i in range(6)]
    report = evaluate(functools.partial(make_agent, server.url, ()), cases,
                      [Equals(), MaxDuration(30)], repeat=2,
                      executor=dask_client.get_executor(), progress=False)
    assert len(report.rows) == 12
    assert [row.result.error for row in report.rows] == [None] * 12
    assert report.pass_rate("Equals") == 1.0
    assert report.spread("Equals") == 0.0
    assert all(row.result.duration >= 0 for row in report.rows)  # measured, on every worker
