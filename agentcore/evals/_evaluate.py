"""`evaluate`: run every case of a dataset (maybe several times) on `run_batch`, then score it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from .._agent import Agent
from .._core import now_ms
from ..batch import BatchResult, run_batch
from ._cases import Case, Dataset
from ._evaluators import Evaluator, Judge, RunResult, evaluator_name, score_of
from ._report import Report, Row


def evaluate(
    make_agent: Callable[[], Agent],
    dataset: Dataset | Iterable[Case],
    evaluators: Sequence[Evaluator],
    *,
    repeat: int = 1,
    executor: Executor | None = None,
    max_concurrency: int = 8,
    store: str | os.PathLike[str] | None = None,
    progress: bool = True,
    output_type: Any = None,
) -> Report:
    """Run every case of `dataset` `repeat` times and score each run with every evaluator.

    Each run is `make_agent().prompt(case.input)`; the result is a `Report`.

    The runs go through `agentcore.batch.run_batch`, with its `executor` (threads by default,
    or a Dask cluster's `client.get_executor()`), `max_concurrency`, `store` (a SQLite file or
    a PostgreSQL URL: a second call with the same store, dataset and `repeat` runs only what
    did not finish without error) and `progress`. `output_type` (an extra, as in `run_batch`)
    gives every run a structured `output`, which `Equals` and `Contains` compare instead of
    the text.

    A run's `duration` is the wall time from its prompt (the timestamp of the first message it
    added, stamped where it ran) to the moment this process received its result: that covers
    the model calls and tools, not making the agent. A result read back from `store` has no
    such moment; its duration ends at its last message's timestamp instead (the start of the
    last reply, so slightly short). With a remote executor, runs arrive in groups and the
    worker's clock must agree with this one's: durations there are upper bounds.

    Evaluators run here, after the batch, on the results in dataset order (on up to
    `max_concurrency` threads when a `Judge` is among them, since each judge is a model call).
    An evaluator's failure is an error score, never an exception out of `evaluate`.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    cases = dataset.cases if isinstance(dataset, Dataset) else Dataset(dataset).cases
    named = _named(evaluators)
    inputs = [case.input for _ in range(repeat) for case in cases]
    started = now_ms()
    results: dict[int, tuple[BatchResult, int]] = {}
    for result in run_batch(make_agent, inputs, executor=executor,
                            max_concurrency=max_concurrency, output_type=output_type,
                            store=store, progress=progress):
        results[result.index] = (result, now_ms())

    def row(index: int) -> Row:
        batch_result, received = results[index]
        run = _run_result(batch_result, received, started)
        case = cases[index % len(cases)]
        scores = {name: score_of(ev, case, run) for name, ev in named}
        return Row(case, index // len(cases), run, scores)

    indexes = range(len(inputs))
    if any(isinstance(ev, Judge) for _, ev in named) and len(inputs) > 1:
        with ThreadPoolExecutor(min(max_concurrency, len(inputs)),
                                thread_name_prefix="agentcore-eval") as pool:
            rows = list(pool.map(row, indexes))
    else:
        rows = [row(i) for i in indexes]
    return Report(rows, [name for name, _ in named], repeat)


def _named(evaluators: Sequence[Evaluator]) -> list[tuple[str, Evaluator]]:
    """Each evaluator with its name; a name met again gets `-2`, `-3`... (`Contains-2`)."""
    seen: dict[str, int] = {}
    named = []
    for ev in evaluators:
        if not callable(ev):
            raise TypeError(f"an evaluator is a callable fn(case, result); got {ev!r}")
        base = evaluator_name(ev)
        seen[base] = seen.get(base, 0) + 1
        named.append((base if seen[base] == 1 else f"{base}-{seen[base]}", ev))
    return named


def _run_result(result: BatchResult, received: int, started: int) -> RunResult:
    duration = 0.0
    if result.messages:
        first = _stamp(result.messages[0])
        end = received if first >= started else _stamp(result.messages[-1])
        duration = max(0, end - first) / 1000
    return RunResult(result.text, result.output, result.messages, result.usage, duration,
                     result.error)





def _stamp(message: Any) -> int:
    """When `message` was made, in ms since the epoch (0 for a message kind without a time)."""
    stamp = getattr(message, "timestamp", 0)
    return stamp if isinstance(stamp, int) else 0
