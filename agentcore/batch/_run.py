"""`run_batch`: the inputs' runs on an executor, their results yielded as they complete."""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import os
import pickle
import queue
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from typing import Any

import attrs

from .._agent import Agent
from .._core import AgentMessage, Budget, CircuitBreaker, Model
from .._function_tools import output_tool
from .._http import AdaptiveLimits
from .._loop import FallbackOn, OutputMode, check_output_mode
from ._progress import Progress, progress_for
from ._result import BatchResult, failed, from_wire, input_json, to_wire, wire_input
from ._settings import Adjust, RunSettings
from ._store import ResultStore, open_store
from ._work import Live, Resume, run_group, run_one

__all__ = ["Batch", "check_arguments", "check_remote", "run_batch"]

_Item = tuple[int, Any, "str | None", "Resume | None"]
"""An input to run: its index, the input, its store key (or None), what it resumes (or None)."""

_log = logging.getLogger(__name__)

_STOP_WAIT_S = 5.0
"""How long a stopped batch waits for its aborted in-process runs to end."""


def run_batch(
    make_agent: Callable[[], Agent],
    inputs: Iterable[str | AgentMessage | Sequence[AgentMessage]],
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
    """Run `make_agent().prompt(input)` to its end for every input; yield results as they end.

    Results come in completion order, one per input (`BatchResult.index` says which); a run
    that fails or raises is a result with `error` set, never an exception out of the iterator.
    At most `max_concurrency` runs are in flight at once. Runs start when iteration starts;
    leaving the loop early (`break`, an exception) aborts the runs still in flight here.

    `make_agent` must return a new `Agent` each call; the batch closes it after its run.
    `executor`: by default a private thread pool, where each run takes a pool thread (and
    runs share the process's HTTP client and its keep-alive connections, as every run does). A
    `ThreadPoolExecutor` of yours works the same way. Any other `concurrent.futures.Executor`
    (a Dask cluster's `client.get_executor()`, a `ProcessPoolExecutor`) runs the inputs in
    groups, each group's runs at once on one worker, so that every worker process runs many
    runs side by side; then `make_agent`, its tools and `output_type` must be picklable, and
    results travel back as JSON-ready data.

    `output_type`: every run answers with a value of that type (`BatchResult.output`; API §14),
    through a `final_result` tool or, with `output_mode="native"`, as its reply's JSON (§18).
    `store`: the path of a SQLite file, or a PostgreSQL URL (`postgresql://user:pw@host/db`,
    extra `postgres`; table `agentcore_batch_results`, made when missing) that processes on
    several machines may share; results without error are written to it as they complete, each
    committed on its own, and a later call with the same store yields the stored result for
    every `(index, input)` already there (inputs compared as JSON) without running it again. A
    file that is not SQLite, or a database that cannot be reached within its connect timeout
    (10 s unless the URL sets `connect_timeout`), raises `ValueError` at the call (never
    showing the password). A lost connection is replaced once per write; when that fails too,
    the iteration raises `ConnectionError` (the results already yielded are stored).
    `progress`: True shows a bar (tqdm when installed, else one updating line on stderr; a
    live display in Jupyter); a callable gets `(done, total, result)` on the iterating thread.

    A run whose model asks for a tool call needing approval (API §20), by an agent without an
    `approve` callback, stops there: its result has no error, no `output`, and lists the
    waiting calls in `pending_approvals` (none of its batch of calls ran). Decide them, now or
    after a restart (a `store` keeps waiting results too), and pass them to `resume_batch`.

    Staying up (API §24): `fallback_models`, `fallback_on` and `circuit_breaker`, when given,
    replace the agent's own in every run; `budget` (a `Budget`) is added to every run's
    `limits`, so that all of them stop starting model calls once it is spent. A budget or a
    circuit breaker is one object of this process: with an executor that runs work in other
    processes it raises `ValueError` (run on threads). `adaptive` (default True) adapts how
    many runs call one provider at once, per origin and API key, between 1 and
    `max_concurrency` (N): each request holds a slot from sending it until its reply is read;
    the limit starts at `min(N, 8)`; an accepted answer adds 1 until the first overload
    (doubling each round), then about 1 per round of calls (`1/limit` each, 4 times slower
    while crossing the level that last overloaded), only while at least half the limit is in
    use; an overload answer (429, 503, 529) sets it to `0.9 * min(limit, replies open)`, at
    least 1, once per round (answers to requests sent before that decrease do not decrease it
    again). A run's HTTP retries wait for a slot anew. It applies to the HTTP client the run
    would use (its `http_client`, its `http_session`, or the process's); on a remote
    executor, each group of runs on a worker has limits of its own.

    Raises (at the call, before anything runs): `TypeError` or `ValueError` naming the argument
    that is wrong.
    """
    items = check_arguments(make_agent, inputs, executor, max_concurrency, output_type,
                            store, progress)
    check_output_mode(output_mode, output_type)
    settings = RunSettings(fallback_models, fallback_on, circuit_breaker, budget, adaptive)
    if executor is not None and not isinstance(executor, ThreadPoolExecutor):
        check_remote(executor, make_agent, output_type, settings)
    if store is not None:  # a bad store (not SQLite, a server down) raises here, not later
        open_store(store).close()
    return Batch(make_agent, [(i, input, None) for i, input in enumerate(items)], executor,
                  max_concurrency, output_type, store, progress, output_mode,
                  settings).results()


def check_arguments(make_agent: object, inputs: object, executor: object,
                    max_concurrency: object, output_type: object, store: object,
                    progress: object) -> list[Any]:
    """`run_batch`'s arguments checked (raising `TypeError`/`ValueError`); the inputs listed."""
    if isinstance(make_agent, Agent):  # before `callable`: an Agent is not callable
        raise TypeError("'make_agent' must be a function returning a new Agent, not an Agent: "
                        "pass `lambda: Agent(...)` (each input needs an agent of its own)")
    if not callable(make_agent):
        raise TypeError(f"'make_agent' must be a function returning a new Agent, got "
                        f"{make_agent!r}")
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Iterable):
        raise TypeError(f"'inputs' must be an iterable of prompts, got {inputs!r:.80}"
                        + (" (a str: wrap it in a list)" if isinstance(inputs, str) else ""))
    items = list(inputs)
    for i, item in enumerate(items):
        if not _is_input(item):
            raise TypeError(f"'inputs[{i}]' must be a str, a message or a list of messages, "
                            f"got {item!r:.80}")
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(f"'executor' must be a concurrent.futures.Executor or None, got "
                        f"{executor!r}")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
            or max_concurrency < 1:
        raise ValueError(f"'max_concurrency' must be an int of at least 1, got "
                         f"{max_concurrency!r}")
    if output_type is not None:
        output_tool(output_type)  # raises TypeError naming 'output_type'
    if store is not None and not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"'store' must be a path (str or os.PathLike), a PostgreSQL URL or "
                        f"None, got {store!r}")
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise TypeError(f"'progress' must be True, False, None or a callable "
                        f"(done, total, result), got {progress!r}")
    return items


def check_remote(executor: Executor, make_agent: object, output_type: object,
                 settings: RunSettings) -> None:
    """Raise naming the argument that cannot travel to `executor`'s workers.

    `ValueError` for a budget or circuit breaker (one object of this process, which the runs
    share); `TypeError` for what cannot be pickled. Dask pickles with cloudpickle (functions
    defined in `__main__`, lambdas), other executors with `pickle`; the check uses the same
    one, so that a batch never fails input by input for a reason that holds for all of them.
    """
    settings.check_remote(executor)
    dumps: Callable[[object], bytes] = pickle.dumps
    if type(executor).__module__.split(".")[0] == "distributed":
        with contextlib.suppress(ImportError):
            dumps = importlib.import_module("cloudpickle").dumps
    values = {"make_agent": make_agent, "output_type": output_type, **settings.picklable()}
    for name, value in values.items():
        try:
            dumps(value)
        except Exception as exc:
            raise TypeError(
                f"'{name}' cannot be pickled, so it cannot run on {type(executor).__name__}'s "
                f"workers ({type(exc).__name__}: {exc}); define it at module level, without "
                f"references to locks, open files or sessions (or run on threads here: "
                f"executor=None)") from None


def _is_input(item: object) -> bool:
    messages = AgentMessage.__args__
    if isinstance(item, (str, *messages)):
        return True
    return isinstance(item, (list, tuple)) and all(isinstance(m, messages) for m in item)


class Batch:
    """One iteration of `run_batch` or `resume_batch`: what is stored, runs, was yielded.

    `items` are `(index, input, Resume or None)`: an input to run, or a result to resume.
    """

    def __init__(self, make_agent: Callable[[], Agent],
                 items: Sequence[tuple[int, Any, Resume | None]],
                 executor: Executor | None, max_concurrency: int, output_type: Any,
                 store: str | os.PathLike[str] | None, progress: object,
                 output_mode: OutputMode, settings: RunSettings) -> None:
        self.make_agent = make_agent
        self.settings = settings
        self.items = items
        self.executor = executor
        self.max_concurrency = max_concurrency
        self.output_type = output_type
        self.output_mode = output_mode
        self.store_path = store
        self.progress = progress
        self.done = 0
        # Completed futures, handed over by their callbacks (a `wait()` over thousands of
        # pending futures would cost time linear in them at every completion)
        self.finished: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()

    def results(self) -> Iterator[BatchResult]:
        store = None if self.store_path is None else open_store(self.store_path)
        reporter = progress_for(self.progress, len(self.items))
        runs: Generator[tuple[BatchResult, str | None], None, None] | None = None
        try:
            todo: list[_Item] = []
            for index, input, resume in self.items:
                key = input_json(input) if store is not None else None
                stored = self._stored(store, index, input, key)
                if stored is not None and (resume is None or resume.moved_on(stored)):
                    yield self._report(reporter, stored)
                else:
                    todo.append((index, input, key, resume))
            if isinstance(self.executor, ThreadPoolExecutor) or self.executor is None:
                runs = self._here(todo)
            else:
                runs = self._remote(todo, self.executor)
            for result, key in runs:
                if store is not None and result.error is None:
                    assert key is not None
                    _put(store, result, key)
                yield self._report(reporter, result)
        finally:
            # Now, not once `runs` is collected: an exception raised in this frame (Ctrl-C
            # during a store write) keeps it alive, and the runs going, with its traceback
            if runs is not None:
                runs.close()
            if reporter is not None:
                reporter.close()
            if store is not None:
                store.close()

    def _stored(self, store: ResultStore | None, index: int, input: Any,
                key: str | None) -> BatchResult | None:
        if store is None or key is None:
            return None
        data = store.get(index, key)
        if data is None:
            return None
        try:
            return from_wire(data, input, self.output_type)
        except Exception:  # stored under another output_type, say: run it again
            _log.info("stored result of input %d does not fit; running it again", index,
                      exc_info=True)
            return None

    def _report(self, reporter: Progress | None, result: BatchResult) -> BatchResult:
        self.done += 1
        if reporter is not None:
            reporter.update(self.done, len(self.items), result)
        return result

    def _here(self, todo: list[_Item]
              ) -> Generator[tuple[BatchResult, str | None], None, None]:
        """Each input a task on a thread pool of this process: the run on the task's thread."""
        live = Live()
        limits = AdaptiveLimits(self.max_concurrency) if self.settings.adaptive else None
        adjust = self.settings.adjuster(limits)
        own = self.executor is None
        pool = ThreadPoolExecutor(min(self.max_concurrency, max(1, len(todo))),
                                  thread_name_prefix="agentcore-batch") \
            if self.executor is None else self.executor
        keys: dict[Future[Any], _Item] = {}
        pending = iter(todo)
        try:
            for _ in range(self.max_concurrency):
                if not self._submit_here(pool, next(pending, None), live, keys, adjust):
                    break
            while keys:
                future = self._next_finished()
                item = keys.pop(future)
                yield _result_of(future, item), item[2]
                self._submit_here(pool, next(pending, None), live, keys, adjust)
        finally:
            live.stop()
            for future in keys:
                future.cancel()
            stuck = wait(list(keys), _STOP_WAIT_S).not_done
            if own:  # its threads end once their runs have: wait for them, unless stuck
                pool.shutdown(wait=not stuck, cancel_futures=True)

    def _submit_here(self, pool: Executor, item: _Item | None,
                     live: Live, keys: dict[Future[Any], _Item], adjust: Adjust | None
                     ) -> bool:
        if item is None:
            return False
        index, input, _, resume = item
        try:
            future = pool.submit(run_one, self.make_agent, index, input, self.output_type,
                                 live, self.output_mode, resume, adjust)
        except Exception as exc:  # a pool that was shut down
            future = Future()
            future.set_result(_failed(item, exc))
        keys[future] = item
        future.add_done_callback(self.finished.put)
        return True

    def _next_finished(self) -> Future[Any]:
        while True:  # a timeout, so that Ctrl-C reaches the iterating thread
            with contextlib.suppress(queue.Empty):
                return self.finished.get(timeout=1.0)

    def _remote(self, todo: list[_Item], executor: Executor
                ) -> Generator[tuple[BatchResult, str | None], None, None]:
        """Inputs in groups, each group a task that runs them at once on a worker process."""
        slots = _slots(executor)
        size = max(1, min(math.ceil(self.max_concurrency / slots),
                          math.ceil(len(todo) / slots)))
        groups = [todo[i:i + size] for i in range(0, len(todo), size)]
        in_flight = max(1, self.max_concurrency // size)
        members: dict[Future[Any], list[_Item]] = {}
        pending = iter(groups)
        try:
            for _ in range(in_flight):
                if not self._submit_group(executor, next(pending, None), members):
                    break
            while members:
                future = self._next_finished()
                group = members.pop(future)
                yield from self._group_results(future, group)
                self._submit_group(executor, next(pending, None), members)
        finally:
            for future in members:
                future.cancel()

    def _submit_group(self, executor: Executor, group: list[_Item] | None,
                      members: dict[Future[Any], list[_Item]]) -> bool:
        if group is None:
            return False
        wire = [(index, wire_input(input), None if resume is None else resume.to_wire())
                for index, input, _, resume in group]
        try:
            future = executor.submit(run_group, self.make_agent, wire, self.output_type,
                                     self.output_mode, self.settings)
        except Exception as exc:  # say, make_agent cannot be pickled
            future = Future()
            future.set_exception(exc)
        members[future] = group
        future.add_done_callback(self.finished.put)
        return True

    def _group_results(self, future: Future[Any], group: list[_Item]
                       ) -> Iterator[tuple[BatchResult, str | None]]:
        by_index = {item[0]: item for item in group}
        try:
            wires = future.result()
        except BaseException as exc:  # the task failed as a whole: every input of it did
            if isinstance(exc, KeyboardInterrupt):
                raise
            for item in group:
                yield _failed(item, exc), item[2]
            return
        for data in wires:
            item = by_index.pop(int(data["index"]))
            try:
                result = from_wire(data, item[1], self.output_type)
            except Exception as exc:
                result = _failed(item, exc)
            yield result, item[2]
        for item in by_index.values():  # a worker that lost some: say so
            yield _failed(item, RuntimeError("the worker returned no result")), item[2]


def _result_of(future: Future[Any], item: _Item) -> BatchResult:
    """The result `run_one` returned, or a failed one for a task that never ran.

    A caller's pool shut down with `cancel_futures` cancels it: that is a result with an error
    too, never an exception out of the iterator.
    """
    try:
        result = future.result()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return _failed(item, exc)
    assert isinstance(result, BatchResult)
    return result


def _failed(item: _Item, exc: BaseException) -> BatchResult:
    """The result of `item` when its task never ran: a resume's calls still wait."""
    index, input, _, resume = item
    result = failed(index, input, exc)
    if resume is None:
        return result
    return attrs.evolve(result, messages=list(resume.messages), usage=resume.usage,
                        pending_approvals=list(resume.pending))


def _put(store: ResultStore, result: BatchResult, key: str) -> None:
    try:
        store.put(result.index, key, to_wire(result))
    except ConnectionError:  # the store's server is gone: stop, not run on unrecorded
        raise
    except Exception:  # a full disk, say: the batch goes on, the result is only not kept
        _log.exception("could not store the result of input %d in %r", result.index, store)


def _slots(executor: Executor) -> int:
    """How many tasks `executor` runs at once: a Dask cluster's threads, a pool's workers.

    Read from attributes these executors keep (`distributed`'s `ClientExecutor._client`,
    `ProcessPoolExecutor._max_workers`); any other executor counts as the machine's CPUs.
    """
    client = getattr(executor, "_client", None)
    nthreads = getattr(client, "nthreads", None)
    if callable(nthreads):
        with contextlib.suppress(Exception):
            total = sum(int(n) for n in nthreads().values())
            if total > 0:
                return total
    workers = getattr(executor, "_max_workers", None)
    if isinstance(workers, int) and workers > 0:
        return workers
    return os.cpu_count() or 1
