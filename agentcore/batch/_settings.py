"""What a batch changes in each of its runs: fallbacks, circuit breaker, budget, HTTP client.

`run_batch(..., fallback_models=..., budget=..., adaptive=...)` (API §24) are `RunSettings`,
checked when the batch is called. Each run's config gets them through `prompt_here(adjust=...)`
once its agent has made it, so they win over the agent's own; with `adaptive`, each run's
requests also go through an `AdaptiveTransport` over the transport the run would have used,
sharing the batch's `AdaptiveLimits`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import attrs

from .._core import (
    Budget,
    CircuitBreaker,
    Model,
    UsageLimits,
    instance_of,
    optional_instance_of,
    takes,
)
from .._http import (
    AdaptiveLimits,
    AdaptiveTransport,
    HttpClient,
    RequestsTransport,
    Transport,
    default_client,
)
from .._loop import AgentLoopConfig, FallbackOn, model_list

__all__ = ["Adjust", "RunSettings"]

Adjust = Callable[[AgentLoopConfig], AgentLoopConfig]
"""A change to each run's config (`prompt_here(adjust=...)`)."""

_SHARED = ("budget", "circuit_breaker")
"""Settings that are one object of this process, shared by the runs: never sent elsewhere."""


@attrs.frozen
class RunSettings:
    """`run_batch`'s settings for every run; None keeps what the run's agent has.

    `fallback_models`, `fallback_on` and `circuit_breaker` replace the config's; `budget` goes
    into the run's `limits` (its other limits kept); `adaptive` puts the run's requests under
    the batch's adaptive concurrency. Picklable unless it holds a budget or circuit breaker
    (or a fallback or `fallback_on` that is not): what a remote worker gets.
    """

    fallback_models: list[Model] | None = attrs.field(
        default=None, converter=attrs.converters.optional(model_list))  # checks each Model
    fallback_on: FallbackOn | None = attrs.field(default=None,
                                                 validator=takes("message", optional=True))
    circuit_breaker: CircuitBreaker | None = attrs.field(
        default=None, validator=optional_instance_of(CircuitBreaker))
    budget: Budget | None = attrs.field(default=None, validator=optional_instance_of(Budget))
    adaptive: bool = attrs.field(default=True, validator=instance_of(bool))

    def check_remote(self, executor: Executor) -> None:
        """Raise `ValueError` naming a setting that cannot cross to `executor`'s workers."""
        for name in _SHARED:
            if getattr(self, name) is not None:
                raise ValueError(
                    f"'{name}' is shared by the runs of this process and cannot reach "
                    f"{type(executor).__name__}'s worker processes: run the batch on threads "
                    f"(executor=None or a ThreadPoolExecutor), or give each agent its own")

    def picklable(self) -> dict[str, object]:
        """The settings given that travel to a remote worker, by argument name (to check)."""
        return {name: value for name in ("fallback_models", "fallback_on")
                if (value := getattr(self, name)) is not None}

    def adjuster(self, limits: AdaptiveLimits | None) -> Adjust | None:
        """The change to each run's config, with `limits` as the runs' adaptive limits.

        None when there is nothing to change.
        """
        if limits is None and all(getattr(self, name) is None for name in
                                  ("fallback_models", "fallback_on", *_SHARED)):
            return None
        return functools.partial(_adjust, self, limits)


def _adjust(settings: RunSettings, limits: AdaptiveLimits | None,
            config: AgentLoopConfig) -> AgentLoopConfig:
    changes: dict[str, Any] = {}
    if settings.fallback_models is not None:
        changes["fallback_models"] = settings.fallback_models
    if settings.fallback_on is not None:
        changes["fallback_on"] = settings.fallback_on
    if settings.circuit_breaker is not None:
        changes["circuit_breaker"] = settings.circuit_breaker
    if settings.budget is not None:
        changes["limits"] = attrs.evolve(config.limits or UsageLimits(), budget=settings.budget)
    if limits is not None:  # the client goes through the session, if any: it is not sent
        client = HttpClient(AdaptiveTransport(_transport_of(config), limits))
        changes["options"] = attrs.evolve(config.options, http_client=client, http_session=None)
    return attrs.evolve(config, **changes)  # no flat alias named: attrs' own __init__, faster


def _transport_of(config: AgentLoopConfig) -> Transport:
    """The transport the run's requests would take (as `client_for` picks the client)."""
    if config.http_client is not None:
        return config.http_client.transport  # type: ignore[no-any-return]
    if config.http_session is not None:
        return RequestsTransport(config.http_session)
    return default_client().transport
