"""`run_batch`'s and `resume_batch`'s settings for every run (API §24): checked at the call,
refused where they cannot go, and applied to each run's config.

What a fallback, a circuit breaker or a budget then does inside a run is the loop's (its own
tests); here, that each run's config holds them, and which HTTP transport its requests take.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import attrs
import pytest
import requests
from _internals import (
    AdaptiveLimits,
    AdaptiveTransport,
    HttpClient,
    MockTransport,
    RequestsTransport,
    RunSettings,
    default_client,
)
from batch_agents import make_file_agent

import agentcore as ac
from agentcore.batch import BatchResult, resume_batch, run_batch

URL = "http://127.0.0.1:9/v1"
MODEL = ac.Model("m-1", "M", "openai-completions", "openai", URL)
OTHER = ac.Model("m-2", "M2", "openai-completions", "openai", URL)


def make_agent() -> ac.Agent:
    return ac.Agent(MODEL, api_key="k")


def config(**changes: Any) -> ac.AgentLoopConfig:
    return ac.AgentLoopConfig(model=MODEL, api_key="k", **changes)


class Elsewhere(Executor):
    """An executor that is no thread pool: the batch treats it as running work elsewhere.

    Nothing is ever submitted to it: every test here fails at the call.
    """


@functools.cache
def waiting_result() -> BatchResult:
    """A result waiting for approval of one `delete_file` call, for `resume_batch`."""
    [result] = run_batch(make_file_agent, ["delete /nonexistent/a.txt"])
    assert result.pending_approvals
    return result


def run(**settings: Any) -> Iterator[BatchResult]:
    return run_batch(make_agent, ["hi"], **settings)


def resume(**settings: Any) -> Iterator[BatchResult]:
    result = waiting_result()
    return resume_batch(make_file_agent, [(result, {result.pending_approvals[0].id: True})],
                        **settings)


CALLS = [pytest.param(run, id="run_batch"), pytest.param(resume, id="resume_batch")]


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize(("settings", "error", "message"), [
    ({"fallback_models": MODEL}, TypeError,
     "'fallback_models' must be a list of Model, got .*; wrap the model in a list"),
    ({"fallback_models": "openai/gpt-4o"}, TypeError, "'fallback_models' must be a list of Model"),
    ({"fallback_models": [OTHER, "openai/gpt-4o"]}, TypeError,
     r"'fallback_models\[1\]' must be a Model, got 'openai/gpt-4o' \(str\); use "
     r"agentcore.get_model\('openai', 'gpt-4o'\)"),
    ({"fallback_on": "errors"}, TypeError,
     r"'fallback_on' must be callable as fallback_on\(message\)"),
    ({"fallback_on": lambda: True}, TypeError, "'fallback_on' must accept 1 argument"),
    ({"circuit_breaker": {"failure_threshold": 3}}, TypeError,
     "'circuit_breaker' must be a CircuitBreaker or None"),
    ({"budget": 1.0}, TypeError, "'budget' must be a Budget or None"),
    ({"budget": ac.UsageLimits(max_cost=1.0)}, TypeError, "'budget' must be a Budget or None"),
    ({"adaptive": 1}, TypeError, "'adaptive' must be a bool"),
    ({"adaptive": None}, TypeError, "'adaptive' must be a bool"),
])
def test_a_bad_setting_raises_at_the_call_naming_it(
        call: Callable[..., Any], settings: dict[str, Any], error: type[Exception],
        message: str) -> None:
    with pytest.raises(error, match=message):
        call(**settings)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("name", ["budget", "circuit_breaker"])
def test_a_shared_object_cannot_go_to_other_processes(call: Callable[..., Any],
                                                      name: str) -> None:
    value = ac.Budget(max_cost=1.0) if name == "budget" else ac.CircuitBreaker()
    with pytest.raises(ValueError, match=re.escape(
            f"'{name}' is shared by the runs of this process and cannot reach Elsewhere's "
            "worker processes: run the batch on threads")):
        call(executor=Elsewhere(), **{name: value})


@pytest.mark.parametrize("call", CALLS)
def test_shared_objects_are_fine_on_threads(call: Callable[..., Any]) -> None:
    with ThreadPoolExecutor(1) as pool:
        results = call(executor=pool, budget=ac.Budget(max_cost=1.0),
                       circuit_breaker=ac.CircuitBreaker(), fallback_on=lambda message: True)
        results.close()  # nothing ran: runs start with the iteration


@pytest.mark.parametrize("call", CALLS)
def test_a_fallback_on_that_cannot_be_pickled_is_refused_for_other_processes(
        call: Callable[..., Any]) -> None:
    with pytest.raises(TypeError, match="'fallback_on' cannot be pickled"):
        call(executor=Elsewhere(), fallback_on=lambda message: True)


def test_picklable_settings_may_go_to_other_processes() -> None:
    import pickle

    settings = RunSettings([OTHER], bool, None, None, False)
    assert pickle.loads(pickle.dumps(settings)) == settings


def test_an_empty_fallback_list_is_a_setting_too() -> None:
    settings = RunSettings(fallback_models=())  # type: ignore[arg-type]
    assert settings.fallback_models == []
    adjust = settings.adjuster(None)
    assert adjust is not None
    assert adjust(config(fallback_models=[OTHER])).fallback_models == []


# --- applied to each run's config --------------------------------------------------------------


def test_settings_given_replace_the_agents_own_and_none_keeps_them() -> None:
    def only_5xx(message: ac.AssistantMessage) -> bool:
        return True

    breaker = ac.CircuitBreaker(failure_threshold=1)
    budget = ac.Budget(max_total_tokens=1000)
    own = config(fallback_models=[MODEL], fallback_on=bool, circuit_breaker=ac.CircuitBreaker(),
                 limits=ac.UsageLimits(max_model_calls=3))
    adjust = RunSettings([OTHER], only_5xx, breaker, budget, False).adjuster(None)
    assert adjust is not None
    changed = adjust(own)
    assert changed.fallback_models == [OTHER]
    assert changed.fallback_on is only_5xx
    assert changed.circuit_breaker is breaker
    assert changed.limits == ac.UsageLimits(max_model_calls=3, budget=budget)
    assert changed.http_client is None
    assert adjust(config()).limits == ac.UsageLimits(budget=budget)
    assert RunSettings(adaptive=False).adjuster(None) is None  # nothing to change


def test_each_run_goes_through_the_batchs_limits_over_the_transport_it_would_take() -> None:
    limits = AdaptiveLimits(8)
    adjust = RunSettings().adjuster(limits)
    assert adjust is not None

    def transport(changed: ac.AgentLoopConfig) -> AdaptiveTransport:
        assert changed.http_session is None
        assert isinstance(changed.http_client, HttpClient)
        found = changed.http_client.transport
        assert isinstance(found, AdaptiveTransport)
        assert found.limits is limits
        return found

    assert transport(adjust(config())).inner is default_client().transport
    mock = MockTransport(lambda request: (200, {}, b""))
    assert transport(adjust(config(http_client=HttpClient(mock)))).inner is mock
    with requests.Session() as session:
        inner = transport(adjust(config(http_session=session))).inner
        assert isinstance(inner, RequestsTransport)
        assert inner.session is session
    assert attrs.evolve(config(), fallback_models=[]).http_client is None  # the config's own
