"""`Budget` (API §24): one spending limit for many runs, charged per model call, over real HTTP.

Every reply of the local server (`sse_server`) reports 10 input and 5 output tokens (15 in
all), priced by the model at $1 and $2 per million: $0.00002 a reply.
"""

from __future__ import annotations

import pickle
import threading

import pytest
from replies import completions_reply
from sse_server import SSEServer

import agentcore as ac

REPLY_COST = (10 * 1.0 + 5 * 2.0) / 1e6


def model_at(sse_server: SSEServer, name: str = "m") -> ac.Model:
    return ac.Model(name, name, "openai-completions", "openai", f"{sse_server.url}/v1",
                    cost=ac.ModelCost(input=1.0, output=2.0))


def test_budget_is_shared_by_agents_and_stops_new_model_calls_once_spent(sse_server) -> None:
    budget = ac.Budget(max_total_tokens=40)  # room for three replies of 15 (the third overshoots)
    for _ in range(3):
        sse_server.sse(completions_reply(text="ok"))
    limits = ac.UsageLimits(budget=budget)
    runs = []
    for _ in range(4):
        with ac.Agent(model_at(sse_server), limits=limits) as agent:
            runs.append(agent.prompt("hi"))
            runs[-1].wait()
    assert [r.error for r in runs[:3]] == [None, None, None]
    assert runs[3].error == "usage limit reached: budget max_total_tokens=40"
    with pytest.raises(ac.UsageLimitExceeded):
        runs[3].raise_for_error()
    assert len(sse_server.requests) == 3  # the fourth run made no request
    assert budget.spent.total_tokens == 45
    assert budget.remaining_tokens == 0
    assert budget.remaining_cost is None
    assert budget.spent.cost.total == pytest.approx(3 * REPLY_COST)


def test_budget_by_cost_ends_a_run_between_its_turns(sse_server) -> None:
    @ac.tool
    def look() -> str:
        """Look around."""
        return "nothing"

    budget = ac.Budget(max_cost=1.5 * REPLY_COST)
    for _ in range(2):
        sse_server.sse(completions_reply(calls=[("c1", "look", {})]))
    events: list[ac.AgentEvent] = []
    messages = ac.run_agent_loop(
        [ac.UserMessage("go")], ac.AgentContext("", [], [look]),
        ac.AgentLoopConfig(model=model_at(sse_server), limits=ac.UsageLimits(budget=budget)),
        events.append)
    # call 1 ($1 reply) -> tool runs -> call 2 ($2 spent) -> tool runs -> no third call
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant",
                                          "toolResult", "assistant"]
    assert messages[-1].error_message == (  # type: ignore[union-attr]
        f"usage limit reached: budget max_cost={1.5 * REPLY_COST!r}")
    assert budget.remaining_cost == 0.0
    assert len(sse_server.requests) == 2


def test_budget_charges_failed_attempts_a_fallback_took_over(sse_server) -> None:
    backup = SSEServer()
    try:
        broken = (b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
                  b'"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\n'
                  b'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n')
        sse_server.sse(broken)
        backup.sse(completions_reply(text="ok"))
        budget = ac.Budget(max_total_tokens=1000)
        config = ac.AgentLoopConfig(model=model_at(sse_server, "a"), max_retries=0,
                                    fallback_models=[model_at(backup, "b")],
                                    limits=ac.UsageLimits(budget=budget, max_total_tokens=24))
        messages = ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext("", [], []),
                                     config, lambda e: None)
        assert messages[-1].text == "ok"  # type: ignore[union-attr]
        assert budget.spent.total_tokens == 25  # 10 of the failed attempt, 15 of the reply
    finally:
        backup.close()


def test_budget_limits_a_batch_of_concurrent_runs_to_one_call_each_past_it(sse_server) -> None:
    budget = ac.Budget(max_total_tokens=30)
    gate = threading.Barrier(4, timeout=30)

    def answer(handler: object) -> None:
        gate.wait()  # four calls in flight at once: each started before any was charged
        handler.start_stream(None)  # type: ignore[attr-defined]
        handler.send_chunk(completions_reply(text="ok"))  # type: ignore[attr-defined]
        handler.end_stream()  # type: ignore[attr-defined]

    for _ in range(4):
        sse_server.custom(answer)
    runs = []
    agents = [ac.Agent(model_at(sse_server), limits=ac.UsageLimits(budget=budget))
              for _ in range(4)]
    try:
        runs = [agent.prompt("hi") for agent in agents]
        assert all(run.error is None for run in runs)  # in flight: they finish and are charged
        assert budget.spent.total_tokens == 60  # overshoot: one call per running agent
        sse_server.sse(completions_reply(text="never asked"))
        assert agents[0].prompt("again").error == "usage limit reached: budget max_total_tokens=30"
    finally:
        for agent in agents:
            agent.close()


def test_budget_bad_input() -> None:
    with pytest.raises(ValueError, match="needs 'max_cost' or 'max_total_tokens'"):
        ac.Budget()
    with pytest.raises(ValueError, match="'max_cost' must be non-negative and finite"):
        ac.Budget(max_cost=-1)
    with pytest.raises(ValueError, match="'max_cost' must be non-negative and finite"):
        ac.Budget(max_cost=float("inf"))
    with pytest.raises(TypeError, match="'max_total_tokens' must be a non-negative int"):
        ac.Budget(max_total_tokens=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'max_cost' must be a number of dollars"):
        ac.Budget(max_cost="5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'budget' must be"):
        ac.UsageLimits(budget=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'usage' must be a Usage"):
        ac.Budget(max_cost=1).charge(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(ac.Budget(max_cost=1))


def test_budget_is_thread_safe_and_says_what_is_left() -> None:
    budget = ac.Budget(max_cost=1.0, max_total_tokens=10_000)
    usage = ac.Usage(1, 1, 0, 0, 2, ac.Cost(total=0.001))

    def spend() -> None:
        for _ in range(100):
            budget.charge(usage)

    threads = [threading.Thread(target=spend) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert budget.spent.total_tokens == 800
    assert budget.remaining_tokens == 9_200
    assert budget.remaining_cost == pytest.approx(0.6)
    assert budget.exhausted() is None
    assert repr(budget) == ("Budget(max_cost=1.0, max_total_tokens=10000; spent $0.4000, "
                            "800 tokens)")
    # limits are stored without the budget: it lives in this process's memory
    assert ac.to_dict(ac.UsageLimits(max_turns=2, budget=budget)) == {"maxTurns": 2}
