"""`resume_batch`: results of `run_batch` that stopped for approval, resumed with decisions."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from .._agent import Agent
from .._core import Budget, CircuitBreaker, Model, check_approvals
from .._loop import FallbackOn, OutputMode, check_output_mode
from ._result import BatchResult, pause_of
from ._run import Batch, check_arguments, check_remote
from ._settings import RunSettings
from ._store import open_store
from ._work import Resume

__all__ = ["resume_batch"]


def resume_batch(
    make_agent: Callable[[], Agent],
    decisions: Iterable[tuple[BatchResult, Mapping[str, bool | str]]],
    *,
    executor: Executor | None = None,
    max_concurrency: int = 8,
    output_type: Any = None,
    output_mode: OutputMode = "tool",
    store: str | os.PathLike[str] | None = None,
    progress: bool | Callable[[int, int, BatchResult], object] | None = None,
    fallback_models: list[Model] | None = None,
    fallback_on: FallbackOn | None = None,
    circuit_breaker: CircuitBreaker | None = None,
    budget: Budget | None = None,
    adaptive: bool = True,
) -> Iterator[BatchResult]:
    """Resume results of `run_batch` that stopped for approval; yield them as their runs end.

    `decisions` are `(result, approvals)` pairs: a `BatchResult` with `pending_approvals`, and
    a dict deciding every one of them by call id: `True` runs the call, `False` or a reason
    (str) denies it (the model gets the error result `denied: <reason>`), as
    `Agent.continue_(approvals=...)` does. Each run goes on from where it stopped, on an agent
    from `make_agent()` given the result's messages, and the run goes on to its end (or to the
    next pause). Its result has the same `index` and `input`, and describes the whole run:
    `messages` and `usage` are the first part's and the resumed part's together.

    Everything else is as with `run_batch`, and should be what that batch used: `make_agent`
    (the same tools), `executor`, `max_concurrency`, `output_type`, `output_mode`, `progress`,
    and the settings of every run (`fallback_models`, `fallback_on`, `circuit_breaker`,
    `budget`, `adaptive`).
    With `store`, each resumed result without error replaces the waiting one; an input whose
    stored result no longer waits for these calls (it was resumed already) is yielded as
    stored and not run again. A resume that fails before its run starts (say `make_agent`
    raised) is a result with `error` set that still lists its `pending_approvals`.

    Raises (at the call, before anything runs): `TypeError` or `ValueError` naming the argument
    that is wrong, and naming the decision for a result waiting for nothing, two results of
    one input, or `approvals` that do not decide exactly the result's pending calls.
    """
    pairs = _check_decisions(decisions)
    check_arguments(make_agent, [r.input for r, _ in pairs], executor, max_concurrency,
                    output_type, store, progress)
    check_output_mode(output_mode, output_type)
    settings = RunSettings(fallback_models, fallback_on, circuit_breaker, budget, adaptive)
    if executor is not None and not isinstance(executor, ThreadPoolExecutor):
        check_remote(executor, make_agent, output_type, settings)
    if store is not None:
        open_store(store).close()
    items = [(r.index, r.input, Resume.of(r, a)) for r, a in pairs]
    return Batch(make_agent, items, executor, max_concurrency, output_type, store, progress,
                  output_mode, settings).results()


def _check_decisions(decisions: object) -> list[tuple[BatchResult, dict[str, bool | str]]]:
    if isinstance(decisions, (str, bytes, Mapping)) or not isinstance(decisions, Iterable):
        raise TypeError(f"'decisions' must be an iterable of (BatchResult, approvals) pairs, "
                        f"got {decisions!r:.80}")
    pairs: list[tuple[BatchResult, dict[str, bool | str]]] = []
    seen: set[int] = set()
    for i, pair in enumerate(decisions):
        if not (isinstance(pair, tuple) and len(pair) == 2
                and isinstance(pair[0], BatchResult)):
            raise TypeError(f"'decisions[{i}]' must be a (BatchResult, approvals) pair, got "
                            f"{pair!r:.80}")
        result, approvals = pair
        pause = pause_of(result)
        if pause is None:
            raise ValueError(f"'decisions[{i}]': the result of input {result.index} waits for "
                             f"no approval")
        if result.index in seen:
            raise ValueError(f"'decisions[{i}]': input {result.index} is resumed twice")
        seen.add(result.index)
        try:
            check_approvals(pause, approvals)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"'decisions[{i}]' (input {result.index}): {exc}") from None
        assert isinstance(approvals, Mapping)
        pairs.append((result, dict(approvals)))
    return pairs
