"""Many runs of one agent: `run_batch` over a dataset, on threads here or on a cluster (API §16).

`run_batch(make_agent, inputs)` runs `make_agent().prompt(input)` to its end for every input and
yields a `BatchResult` per input as runs complete. By default the runs share a private thread
pool (each run on a pool thread, no thread of its own) and the process's HTTP client, with
adaptive concurrency: how many of them call one provider at once follows its 429s (API §24).
Fallback models, a circuit breaker and a budget given to the batch apply to every run. Any
`concurrent.futures.Executor` may run them instead: a `ThreadPoolExecutor` of yours, or one that
runs work in other processes, such as a Dask cluster's `client.get_executor()`, which gets runs
in groups (each worker process runs many at once) and sends back only JSON-ready data. A `store`
(a SQLite file, or a PostgreSQL URL) makes a batch resumable; `progress` shows how far it got.
A run that stops for approval of a tool call (API §20) is a result listing its
`pending_approvals`; `resume_batch(make_agent, [(result, approvals), ...])` goes on with those
decisions.

Layer 4: builds on the `Agent` (layer 3); `sqlite3` (or psycopg) is imported only when a store is
used.
"""

from __future__ import annotations

from ._result import BatchResult
from ._resume import resume_batch
from ._run import run_batch

__all__ = ["BatchResult", "resume_batch", "run_batch"]
