"""Many agent runs at once against a local streaming server: agentcore beside pydantic-ai.

    python benchmarks/concurrency.py                  # N = 10, 100, 1000, 2000; every variant
    python benchmarks/concurrency.py --quick          # N = 10, 100, one run each
    python benchmarks/concurrency.py --n 1000 --variants agentcore-agent,pydantic-ai --runs 1
    python benchmarks/concurrency.py --json           # one JSON object per variant and N
    python benchmarks/concurrency.py --check          # exit 1 when a target is missed
    python benchmarks/concurrency.py --child agentcore-agent --n 1000 --profile agent.prof

The server (`stream_server.py`, asyncio, its own process) plays one conversation per run: the
first request is answered with a streamed `get_weather` call, the second (with the tool's
result) with a streamed text answer of 40 chunks; every reply has its first token 300 ms after
the request and its end at 700 ms, so a run ideally takes 1.4 s whatever N. Each variant and N
runs in a fresh child process (this file with `--child`), so that its thread count and memory are
its own; the child warms up with one conversation (not counted), resets the server's counters,
starts the clock at the first submit and stops it at the last result, then prints one JSON
object. A run in which the server fell behind its schedule (lateness p99 over 50 ms) measured
the server, not the client: it is measured again, once. Variants:

- agentcore-agent: N `Agent`s, built and `prompt`ed one after another from the main thread,
  then every run waited for.
- agentcore-batch: `agentcore.batch.run_batch(make_agent, inputs, max_concurrency=N)`.
- agentcore-dask: the same on a `distributed.LocalCluster` of 2 single-threaded worker processes
  (`executor=client.get_executor()`), started before the clock (its start time shown apart).
- pydantic-ai: one `Agent` on `OpenAIChatModel`, N `agent.run(...)` in one `asyncio.gather`,
  streaming (an `event_stream_handler`, so that it reads the same SSE replies).
- floor-requests, floor-shared, floor-socket: the conversation with no agent library, one
  thread per conversation (`floors.py`): `requests` with a `Session` per conversation, with
  one `Session` shared by all (the floor of API §29), and a raw socket.

See README.md beside this file for the figures and what exactly is counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib
import json
import os
import platform
import resource
import select
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

import floors
import stream_server

import agentcore as ac

NS = (10, 100, 1000, 2000)
QUICK_NS = (10, 100)
RUNS = 3
PEER_ONCE_FROM = 1000  # pydantic-ai runs once per N from here on (1-2 minutes a run)
VARIANTS = ("agentcore-agent", "agentcore-batch", "agentcore-dask", "pydantic-ai",
            "floor-requests", "floor-shared", "floor-socket")
AGENTCORE_VARIANTS = ("agentcore-agent", "agentcore-batch", "agentcore-dask")
BASE = "@base"  # a variant's label suffix: measured with the --baseline tree's agentcore
PEER = "pydantic-ai"
DASK_WORKERS = 2

TARGET_CPU_MS = 4.0  # agentcore CPU per conversation, agentcore-batch at N = 1000
TARGET_CPU_AT = 1000
TARGET_WALL_S = 10.0  # 2,000 runs in one process (agentcore-batch)
TARGET_DASK_WALL_S = 3.0  # 2,000 runs on the 2-worker LocalCluster
TARGET_AT = 2000
TARGET_LATENESS_MS = 50.0  # the server's p99 lateness: above it a run measured the server
INVALID_RETRIES = 1  # a run the server fell behind in is measured again (once), then kept

SERVER_START_TIMEOUT_S = 30.0
RUN_TIMEOUT_S = 540.0  # one conversation; and a child's whole life is bounded by CHILD_TIMEOUT_S
CHILD_TIMEOUT_S = 600.0
SAMPLE_S = 0.01
CHILD_SAMPLE_S = 0.05

API_KEY = "bench"
MODEL_ID = "gpt-4o-mini"
SYSTEM_PROMPT = "You tell the weather. Use the tool."
EXPECTED_TEXT = stream_server.expected_text()
HERE = os.path.dirname(os.path.abspath(__file__))

clock = time.perf_counter


# --- the conversation (module level: the Dask workers import it by name) -----------------------


def prompt_for(i: int) -> str:
    """The user's message of conversation `i`."""
    return f"What is the weather in {stream_server.CITIES[i % len(stream_server.CITIES)]}?"


def weather_in(city: str) -> str:
    """The tool's answer for `city` (the floors answer with it too)."""
    return f"{city}: sunny, 21 °C, light westerly breeze"


def ask_for(base_url: str, i: int) -> floors.Ask:
    """Conversation `i` as the floors send it: the same model, key, messages and tool."""
    return floors.Ask(base_url, MODEL_ID, API_KEY, SYSTEM_PROMPT, prompt_for(i), weather_in)


FLOORS: dict[str, Callable[[floors.Ask], str]] = {
    "floor-requests": floors.requests_conversation,
    "floor-shared": floors.shared_requests_conversation,
    "floor-socket": floors.socket_conversation,
}
"""The conversation with no agent library: what the machine allows any thread-per-stream client."""


@ac.tool
def get_weather(city: str) -> str:
    """The weather in a city right now.

    Args:
        city: the city's name.
    """
    return weather_in(city)


def make_agent(base_url: str) -> ac.Agent:
    """A fresh agent on the server at `base_url` with the one tool (run_batch's `make_agent`)."""
    model = ac.Model(MODEL_ID, "GPT-4o mini", "openai-completions", "openai",
                     base_url=f"{base_url}/v1")
    return ac.Agent(model, system_prompt=SYSTEM_PROMPT, tools=[get_weather], api_key=API_KEY)


def check_text(text: str) -> str | None:
    """None when `text` is the server's answer, else an error saying what came instead."""
    return None if text == EXPECTED_TEXT else f"unexpected answer {text!r:.80}"


# --- measuring, in the child --------------------------------------------------------------------


def server_stats(base_url: str, reset: bool = False) -> dict[str, Any]:
    """The server's counters (`GET /stats`); with `reset`, start them afresh."""
    url = f"{base_url}/stats" + ("?reset=1" if reset else "")
    with urllib.request.urlopen(url, timeout=30) as response:
        return dict(json.load(response))


def _os_threads() -> int:
    """This process's OS threads (Linux: /proc), or Python's count elsewhere."""
    try:
        with open("/proc/self/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[17])
    except (OSError, ValueError, IndexError):
        return threading.active_count()


def _rss_mib() -> float:
    """This process's resident memory now (Linux: /proc), or its peak elsewhere."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return _peak_rss_mib()


def _peak_rss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Sampler:
    """Samples thread counts every SAMPLE_S on its own thread (and child processes' too).

    With `children`, every CHILD_SAMPLE_S it also sums the OS threads and resident memory of
    this process's descendants (psutil): the Dask nannies and workers.
    """

    def __init__(self, children: bool = False) -> None:
        self.peak_threads = 0
        self.peak_os_threads = 0
        self.peak_child_threads = 0
        self.peak_child_rss_mib = 0.0
        self._children = children
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        proc = None
        if self._children:
            proc = _psutil().Process()
        next_children = 0.0
        while True:
            self.peak_threads = max(self.peak_threads, threading.active_count())
            self.peak_os_threads = max(self.peak_os_threads, _os_threads())
            if proc is not None and clock() >= next_children:
                next_children = clock() + CHILD_SAMPLE_S
                threads, rss = _children_usage(proc)
                self.peak_child_threads = max(self.peak_child_threads, threads)
                self.peak_child_rss_mib = max(self.peak_child_rss_mib, rss)
            if self._stop.wait(SAMPLE_S):
                return


def _psutil() -> Any:
    """psutil (a dependency of distributed), imported only by the Dask variant."""
    return importlib.import_module("psutil")


def _children_usage(proc: Any) -> tuple[int, float]:
    """(OS threads, resident MiB) summed over the descendants of a psutil Process."""
    psutil = _psutil()
    threads, rss = 0, 0.0
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            threads += child.num_threads()
            rss += child.memory_info().rss / 2**20
    return threads, rss


def _children_cpu_s() -> float:
    """User + system CPU seconds of this process's live descendants (psutil)."""
    psutil = _psutil()
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            times = child.cpu_times()
            total += times.user + times.system
    return total


class Meter:
    """The clock of one measurement: `begin()` at the first submit, `end()` after the last result.

    `begin` resets the server's counters and starts the sampler; `end` stops both clocks and
    reads the server's counters (its lateness over exactly this window, give or take the
    warm-up's last writes, which are over before `begin`).
    """

    def __init__(self, base_url: str, children: bool = False) -> None:
        self.base_url = base_url
        self.children = children
        self.sampler = Sampler(children)
        self.t0 = 0.0
        self.report: dict[str, Any] = {}

    def begin(self) -> float:
        server_stats(self.base_url, reset=True)
        self.report["rss_start_mib"] = _rss_mib()
        self.report["threads_start"] = threading.active_count()
        self.sampler.start()
        self._children_cpu0 = _children_cpu_s() if self.children else 0.0
        self._cpu0 = _cpu_s()
        self.t0 = clock()
        return self.t0

    def end(self) -> None:
        wall = clock() - self.t0
        cpu = _cpu_s() - self._cpu0
        children_cpu = (_children_cpu_s() - self._children_cpu0) if self.children else 0.0
        self.sampler.stop()
        s = self.sampler
        self.report.update(
            wall_s=wall, cpu_s=cpu + children_cpu, cpu_self_s=cpu, cpu_workers_s=children_cpu,
            peak_threads=s.peak_threads + s.peak_child_threads, peak_py_threads=s.peak_threads,
            peak_os_threads=s.peak_os_threads, peak_worker_threads=s.peak_child_threads,
            peak_rss_mib=_peak_rss_mib() + s.peak_child_rss_mib, peak_rss_self_mib=_peak_rss_mib(),
            peak_rss_workers_mib=s.peak_child_rss_mib, server=server_stats(self.base_url))


Outcome = tuple[float, str | None]  # (seconds to the result, error or None)


def run_agents(base_url: str, n: int, meter: Meter) -> list[Outcome]:
    """agentcore-agent: N Agents prompted one after another from this thread; then wait for all.

    A conversation's latency is from its `prompt()` call to its `agent_end` event (a listener).
    """
    warm = make_agent(base_url)
    warm.prompt(prompt_for(0)).wait(RUN_TIMEOUT_S)
    warm.close()
    starts = [0.0] * n
    ends = [0.0] * n
    agents, runs = [], []

    def listener(i: int, event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.AgentEndEvent):
            ends[i] = clock()

    meter.begin()
    for i in range(n):
        agent = make_agent(base_url)
        agent.subscribe(functools.partial(listener, i))
        starts[i] = clock()
        runs.append(agent.prompt(prompt_for(i)))
        agents.append(agent)
    for run in runs:
        run.wait(RUN_TIMEOUT_S)
    meter.end()
    outcomes = []
    for i, run in enumerate(runs):
        error = run.error if run.done() else "not finished"
        outcomes.append((ends[i] - starts[i], error or check_text(run.text)))
    for agent in agents:
        agent.close()
    return outcomes


def _batch(make: Callable[[], ac.Agent], n: int, meter: Meter, executor: Any = None,
           warm_up: int = 1) -> list[Outcome]:
    """run_batch over N inputs at once; latency: from the first submit to the result's arrival."""
    from agentcore.batch import run_batch

    for result in run_batch(make, [prompt_for(i) for i in range(warm_up)], executor=executor,
                            max_concurrency=warm_up):
        if result.error:
            raise RuntimeError(f"warm-up run failed: {result.error}")
    inputs = [prompt_for(i) for i in range(n)]
    outcomes = []
    t0 = meter.begin()
    for result in run_batch(make, inputs, executor=executor, max_concurrency=n):
        outcomes.append((clock() - t0, result.error or check_text(result.text)))
    meter.end()
    return outcomes


def run_batch_variant(base_url: str, n: int, meter: Meter) -> list[Outcome]:
    """agentcore-batch: `run_batch(make_agent, inputs, max_concurrency=N)` in this process."""
    return _batch(functools.partial(make_agent, base_url), n, meter)


def run_dask(base_url: str, n: int, meter: Meter) -> list[Outcome]:
    """agentcore-dask: the same on a 2-worker LocalCluster (one thread each, own processes)."""
    # Imported by its name, so that the workers unpickle make_agent from this file (on their
    # PYTHONPATH) rather than receive a copy of __main__'s.
    import concurrency

    distributed: Any = importlib.import_module("distributed")

    # Dask's statistical profiler calls sys._current_frames() every 10 ms on each worker; on
    # CPython before 3.11.9 that can deadlock a process running hundreds of threads (gh-106883:
    # a garbage collection inside it, under the runtime's thread-list lock, runs Dask's GC
    # callback, which gives up the GIL; a thread that exits then holds the GIL waiting for
    # that lock). It did here at N=1000. It would also cost the workers CPU per thread sampled.
    importlib.import_module("dask").config.set({"distributed.worker.profile.enabled": False})
    started = clock()
    cluster = distributed.LocalCluster(n_workers=DASK_WORKERS, threads_per_worker=1,
                                       processes=True, host="127.0.0.1", dashboard_address=":0")
    client = distributed.Client(cluster)
    meter.report["cluster_start_s"] = clock() - started
    try:
        make = functools.partial(concurrency.make_agent, base_url)
        return _batch(make, n, meter, executor=client.get_executor(), warm_up=DASK_WORKERS)
    finally:
        client.close()
        cluster.close()


def run_pydantic_ai(base_url: str, n: int, meter: Meter) -> list[Outcome]:
    """pydantic-ai: one Agent, N `agent.run(...)` streaming, in one `asyncio.gather`.

    The tool is an `async def` (pydantic-ai's cheapest path: a plain `def` runs on a worker
    thread per call). A conversation's latency is from the gather's start to its own end.
    """
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async def get_weather(city: str) -> str:
        """The weather in a city right now.

        Args:
            city: the city's name.
        """
        return f"{city}: sunny, 21 °C, light westerly breeze"

    async def drain(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    model = OpenAIChatModel(MODEL_ID, provider=OpenAIProvider(base_url=f"{base_url}/v1",
                                                              api_key=API_KEY))
    agent = Agent(model, system_prompt=SYSTEM_PROMPT, tools=[get_weather])

    async def one(i: int, t0: float) -> Outcome:
        try:
            result = await agent.run(prompt_for(i), event_stream_handler=drain)
        except Exception as exc:
            return clock() - t0, f"{exc!r:.200}"
        return clock() - t0, check_text(result.output)

    async def main() -> list[Outcome]:
        _, error = await one(0, clock())
        if error:
            raise RuntimeError(f"warm-up run failed: {error}")
        t0 = meter.begin()
        outcomes = await asyncio.gather(*(one(i, t0) for i in range(n)))
        meter.end()
        return list(outcomes)

    return asyncio.run(main())


def run_floor(kind: str, base_url: str, n: int, meter: Meter) -> list[Outcome]:
    """floor-requests, floor-shared, floor-socket: N threads started at once, one each.

    A conversation's latency is from the first start to its own end.
    """
    conversation = FLOORS[kind]
    error = check_text(conversation(ask_for(base_url, 0)))
    if error:
        raise RuntimeError(f"warm-up run failed: {error}")
    outcomes: list[Outcome] = [(0.0, "not finished")] * n

    def one(i: int, t0: float) -> None:
        try:
            error = check_text(conversation(ask_for(base_url, i)))
            outcomes[i] = (clock() - t0, error)
        except Exception as exc:
            outcomes[i] = (clock() - t0, f"{exc!r:.200}")

    threads = []
    t0 = meter.begin()
    for i in range(n):
        thread = threading.Thread(target=one, args=(i, t0), name=f"{kind}-{i}")
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    meter.end()
    return outcomes


CHILD_VARIANTS: dict[str, Callable[[str, int, Meter], list[Outcome]]] = {
    "agentcore-agent": run_agents,
    "agentcore-batch": run_batch_variant,
    "agentcore-dask": run_dask,
    "pydantic-ai": run_pydantic_ai,
    **{kind: functools.partial(run_floor, kind) for kind in FLOORS},
}


def _percentile(values: list[float], q: float) -> float:
    return stream_server._percentile(sorted(values), q)


def measure(variant: str, n: int, base_url: str) -> dict[str, Any]:
    """One measurement of `variant` at N conversations, in this process."""
    stream_server.raise_open_files_limit()
    meter = Meter(base_url, children=variant == "agentcore-dask")
    outcomes = CHILD_VARIANTS[variant](base_url, n, meter)
    report = meter.report
    errors = [e for _, e in outcomes if e is not None]
    latencies = [t for t, _ in outcomes]
    report.update(
        variant=variant, n=n, conversations=len(outcomes), errors=len(errors) + n - len(outcomes),
        first_error=errors[0] if errors else None, runs_per_s=n / report["wall_s"],
        cpu_ms_per_conversation=report["cpu_s"] / n * 1e3,
        p50_s=_percentile(latencies, 50), p99_s=_percentile(latencies, 99))
    return report


def _profiled(call: Callable[[], dict[str, Any]], path: str) -> dict[str, Any]:
    """`call()` under cProfile on every thread (each thread its own profiler), merged to `path`.

    Threads started after this point profile themselves from their first Python call on
    (`threading.setprofile`); the stats of the threads still running at the end (idle pool
    threads) may miss their last calls. The timer is each thread's own CPU time
    (`time.thread_time`), so time spent blocked (reading a socket, waiting on a lock) counts
    nothing and the merged figures add up to CPU seconds. cProfile slows Python code down
    about twofold, so the timings of a profiled run are not the benchmark's: read the shares.
    """
    import cProfile
    import pstats

    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start_thread_profile(frame: Any, event: str, arg: Any) -> None:
        profile = cProfile.Profile(time.thread_time)
        with lock:
            profiles.append(profile)
        profile.enable()  # replaces this hook on this thread

    main = cProfile.Profile(time.thread_time)
    threading.setprofile(start_thread_profile)
    main.enable()
    try:
        return call()
    finally:
        main.disable()
        threading.setprofile(None)  # type: ignore[arg-type,unused-ignore]
        with lock:
            stats = pstats.Stats(main)
            for profile in profiles:
                with contextlib.suppress(TypeError):  # a profile that recorded nothing
                    stats.add(profile)
        stats.dump_stats(path)
        print(f"profile of {len(profiles) + 1} threads written to {path}", file=sys.stderr)


# --- one conversation alone (issue 26) ---------------------------------------------------------

SINGLE_ROUNDS = 8
TARGET_SINGLE_CPU_MS = 2.0  # one conversation alone, paced as a real model (issue 26)
PACINGS = {"paced": (), "unpaced": ("--first-token", "0", "--reply", "0")}


def _usage() -> tuple[float, int]:
    """(CPU seconds, voluntary context switches) of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_nvcsw


def single_child(kind: str, base_url: str) -> dict[str, Any]:
    """`--single-child`: one warm-up conversation of `kind`, then one measured: its report.

    For agentcore the agent is made before, and closed after, the clock: CPU is from
    `prompt()` to the run's end (the HTTP session, made at the first prompt, included). For a
    floor, around its whole conversation (its `requests.Session` or socket included).
    """
    def once() -> dict[str, Any]:
        if kind == "agentcore":
            agent = make_agent(base_url)
            try:
                cpu0, switches0 = _usage()
                run = agent.prompt(prompt_for(0))
                run.wait(RUN_TIMEOUT_S)
                cpu1, switches1 = _usage()
                text = run.text
            finally:
                agent.close()
        else:
            cpu0, switches0 = _usage()
            text = FLOORS[kind](ask_for(base_url, 0))
            cpu1, switches1 = _usage()
        error = check_text(text)
        if error is not None:
            raise RuntimeError(f"{kind}: {error}")
        return {"kind": kind, "cpu_ms": (cpu1 - cpu0) * 1e3, "switches": switches1 - switches0}

    once()  # imports, the server's first connection
    return once()


def run_single(rounds: int, as_json: bool, check: bool, baseline: str | None) -> int:
    """`--single`: one conversation at a time, paced and not, each in a fresh process.

    Every round measures agentcore (and the `--baseline` tree's), then both floors, one child
    process each, so that the trees and floors alternate; medians over the rounds.
    """
    kinds = ["agentcore", *(["agentcore@base"] if baseline else []), *FLOORS]
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pacing, server_args in PACINGS.items():
        with server_process(*server_args) as (url, _):
            for r in range(rounds):
                for kind in kinds:
                    report = run_child(kind, 1, url, single=True, baseline=baseline)
                    if "error" in report:
                        raise RuntimeError(f"{kind} ({pacing}): {report['error']}")
                    results.setdefault((pacing, kind), []).append(report)
                if not as_json:
                    print(f"  {pacing} round {r + 1}: " + ", ".join(
                        f"{k} {results[(pacing, k)][-1]['cpu_ms']:.2f} ms" for k in kinds),
                        file=sys.stderr, flush=True)
    rows = []
    for pacing in PACINGS:
        for kind in kinds:
            cpu = [x["cpu_ms"] for x in results[(pacing, kind)]]
            rows.append({"pacing": pacing, "kind": kind, "rounds": rounds,
                         "cpu_ms": round(statistics.median(cpu), 3),
                         "cpu_ms_min": round(min(cpu), 3), "cpu_ms_max": round(max(cpu), 3),
                         "switches": statistics.median(
                             x["switches"] for x in results[(pacing, kind)]),
                         "cpu_ms_all": [round(x, 3) for x in cpu]})
    median = {(row["pacing"], row["kind"]): row["cpu_ms"] for row in rows}
    paced = median[("paced", "agentcore")]
    if as_json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"one conversation alone, median of {rounds} rounds, each in a fresh process "
              f"(CPU ms of the process: user + system; {_source()}"
              + (f"; @base: {_source(baseline)}" if baseline else "") + ")")
        print("| pacing | client | CPU ms | min | max | context switches | above the socket "
              "floor |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for row in rows:
            above = row["cpu_ms"] - median[(row["pacing"], "floor-socket")]
            print(f"| {row['pacing']} | {row['kind']} | {row['cpu_ms']:.2f} | "
                  f"{row['cpu_ms_min']:.2f} | {row['cpu_ms_max']:.2f} | {row['switches']:.0f} | "
                  f"{above:+.2f} |")
    verdict = "ok" if paced <= TARGET_SINGLE_CPU_MS else "MISSED"
    print(f"  agentcore, paced = {paced:.2f} ms (target <= {TARGET_SINGLE_CPU_MS:g}): {verdict}; "
          f"the socket floor, paced = {median[('paced', 'floor-socket')]:.2f} ms",
          file=sys.stderr)
    return 1 if check and paced > TARGET_SINGLE_CPU_MS else 0


# --- the parent ---------------------------------------------------------------------------------


@contextlib.contextmanager
def server_process(*server_args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start stream_server.py in a child process; yield its base URL and process.

    The server is terminated (then killed, if need be) on the way out, whatever happens.
    """
    argv = [sys.executable, os.path.join(HERE, "stream_server.py"), *server_args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], SERVER_START_TIMEOUT_S)
        line = proc.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            raise RuntimeError(f"the server did not report its port (got {line!r})")
        yield f"http://127.0.0.1:{int(line)}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def run_child(label: str, n: int, base_url: str, *, single: bool = False,
              baseline: str | None = None) -> dict[str, Any]:
    """One measurement in a fresh interpreter; its JSON report (or an `error`).

    A label ending in `@base` measures its variant with the agentcore of the `baseline` tree
    (first on the child's PYTHONPATH). `single`: `--single-child` (one conversation) instead of
    `--child`. The child leads its own process group, so that a child that overruns
    CHILD_TIMEOUT_S is killed with everything it started (a Dask cluster's worker processes).
    """
    variant, based, _ = label.partition(BASE)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (baseline if based else None, HERE, env.get("PYTHONPATH")) if p)
    argv = [sys.executable, os.path.abspath(__file__),
            *(("--single-child", variant) if single else ("--child", variant, "--n", str(n))),
            "--url", base_url]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"variant": label, "n": n, "error": f"timed out after {CHILD_TIMEOUT_S:.0f} s"}
    if proc.returncode != 0:
        return {"variant": label, "n": n,
                "error": f"exit {proc.returncode}: {err.strip()[-600:]}"}
    report = dict(json.loads(out.strip().splitlines()[-1]))
    report["variant"] = label
    return report


class Cell:
    """Every run of one variant at one N; medians over the runs."""

    def __init__(self, variant: str, n: int) -> None:
        self.variant = variant
        self.n = n
        self.runs: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.invalid: list[float] = []  # server lateness p99 (ms) of runs measured again

    def median(self, key: str) -> float:
        return float(statistics.median(r[key] for r in self.runs))

    def server(self, key: str) -> float:
        return float(statistics.median(r["server"][key] for r in self.runs))

    @property
    def lateness_p99_ms(self) -> float:
        """The worst run's server lateness p99: the run most likely to have measured the server."""
        return float(max(r["server"]["lateness_ms"]["p99"] for r in self.runs))

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"variant": self.variant, "n": self.n, "runs": len(self.runs)}
        if self.failures:
            out["failures"] = self.failures
        if self.invalid:
            out["invalid_runs_measured_again"] = self.invalid
        if not self.runs:
            return out
        keys = ("wall_s", "runs_per_s", "cpu_s", "cpu_self_s", "cpu_workers_s",
                "cpu_ms_per_conversation", "peak_threads", "peak_os_threads",
                "peak_rss_mib", "rss_start_mib", "p50_s", "p99_s", "errors")
        out["median"] = {k: round(self.median(k), 4) for k in keys}
        if "cluster_start_s" in self.runs[0]:
            out["median"]["cluster_start_s"] = round(self.median("cluster_start_s"), 3)
        out["server"] = {"lateness_p99_ms_worst": self.lateness_p99_ms,
                         "lateness_p50_ms": self.server_lateness("p50"),
                         "lateness_max_ms": max(r["server"]["lateness_ms"]["max"]
                                                for r in self.runs),
                         "connections": self.server("connections_with_chat"),
                         "requests": self.server("requests"),
                         "cpu_s": self.server("cpu_s")}
        out["all_runs"] = self.runs
        return out

    def server_lateness(self, key: str) -> float:
        return float(statistics.median(r["server"]["lateness_ms"][key] for r in self.runs))


class Target:
    """One target: `value` against `limit` (<=); `ok` None when not measured."""

    def __init__(self, what: str, value: float | None, limit: float, unit: str,
                 checked: bool = True) -> None:
        self.what, self.value, self.limit, self.unit, self.checked = (
            what, value, limit, unit, checked)

    @property
    def ok(self) -> bool | None:
        return None if self.value is None else self.value <= self.limit

    def line(self) -> str:
        if self.value is None:
            status = "not measured"
        else:
            status = "ok" if self.ok else ("MISSED" if self.checked else "over")
        value = "-" if self.value is None else f"{self.value:,.2f}"
        extra = "" if self.checked else " (reported, not checked)"
        return f"{self.what} = {value} {self.unit} (target <= {self.limit:g}): {status}{extra}"


def targets(cells: dict[tuple[str, int], Cell]) -> list[Target]:
    def value(variant: str, n: int, key: str) -> float | None:
        cell = cells.get((variant, n))
        return cell.median(key) if cell and cell.runs else None

    out = [
        Target(f"agentcore-batch CPU per conversation, N={TARGET_CPU_AT}",
               value("agentcore-batch", TARGET_CPU_AT, "cpu_ms_per_conversation"),
               TARGET_CPU_MS, "ms"),
        Target(f"agentcore-agent CPU per conversation, N={TARGET_CPU_AT}",
               value("agentcore-agent", TARGET_CPU_AT, "cpu_ms_per_conversation"),
               TARGET_CPU_MS, "ms", checked=False),
        Target(f"agentcore-batch wall, N={TARGET_AT}", value("agentcore-batch", TARGET_AT,
                                                             "wall_s"), TARGET_WALL_S, "s"),
        Target(f"agentcore-agent wall, N={TARGET_AT}", value("agentcore-agent", TARGET_AT,
                                                             "wall_s"), TARGET_WALL_S, "s",
               checked=False),
        Target(f"agentcore-dask wall ({DASK_WORKERS} workers), N={TARGET_AT}",
               value("agentcore-dask", TARGET_AT, "wall_s"), TARGET_DASK_WALL_S, "s"),
    ]
    measured = [c for c in cells.values() if c.runs]
    ours = [c for c in measured if c.variant in AGENTCORE_VARIANTS]
    out.append(Target("agentcore runs that ended in error, all cells (medians summed)",
                      sum(c.median("errors") for c in ours) if ours else None, 0, "runs"))
    worst = max(measured, key=lambda c: c.lateness_p99_ms, default=None)
    out.append(Target("server lateness p99, worst cell"
                      + (f" ({worst.variant} N={worst.n})" if worst else ""),
                      worst.lateness_p99_ms if worst else None, TARGET_LATENESS_MS, "ms"))
    return out


def _fmt(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(cells: list[Cell]) -> str:
    head = ("variant", "N", "runs", "wall s", "runs/s", "CPU s", "CPU ms/conv", "peak threads",
            "peak RSS MiB", "p50 s", "p99 s", "errors", "server late p99 ms",
            "connections / requests")
    lines = ["| " + " | ".join(head) + " |",
             "|---|---:|---:|" + "---:|" * (len(head) - 4) + "---|"]
    for cell in cells:
        if not cell.runs:
            lines.append(f"| {cell.variant} | {cell.n:,} | 0 | failed: "
                         f"{'; '.join(cell.failures)[:200]} |")
            continue
        m = cell.median
        lines.append("| " + " | ".join([
            cell.variant, f"{cell.n:,}", str(len(cell.runs)), _fmt(m("wall_s")),
            _fmt(m("runs_per_s")), _fmt(m("cpu_s")), _fmt(m("cpu_ms_per_conversation")),
            f"{m('peak_threads'):,.0f}", f"{m('peak_rss_mib'):,.0f}", _fmt(m("p50_s")),
            _fmt(m("p99_s")), f"{m('errors'):,.0f}", _fmt(cell.lateness_p99_ms),
            f"{cell.server('connections_with_chat'):,.0f} / {cell.server('requests'):,.0f}",
        ]) + " |")
    return "\n".join(lines)


def ratios(cells: dict[tuple[str, int], Cell], ns: list[int],
           pairs: list[tuple[str, str]]) -> str:
    """A table of wall-time ratios, one column per (variant, reference) pair measured."""
    pairs = [(a, b) for a, b in pairs if any(
        cells.get((a, n)) and cells.get((b, n)) for n in ns)]
    if not pairs:
        return ""
    lines = ["| N | " + " | ".join(f"{a} / {b}" for a, b in pairs) + " |",
             "|---:|" + "---:|" * len(pairs)]
    for n in ns:
        row = []
        for a, b in pairs:
            ours, theirs = cells.get((a, n)), cells.get((b, n))
            if ours and ours.runs and theirs and theirs.runs:
                row.append(f"{ours.median('wall_s') / theirs.median('wall_s'):.3f}")
            else:
                row.append("-")
        lines.append(f"| {n:,} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def _notes(cells: list[Cell]) -> list[str]:
    notes = []
    for cell in cells:
        if cell.invalid:
            notes.append(f"{cell.variant} N={cell.n}: {len(cell.invalid)} run(s) measured again, "
                         f"the server having been late (p99 "
                         + ", ".join(f"{x:.0f}" for x in cell.invalid) + " ms)")
        for failure in cell.failures:
            notes.append(f"{cell.variant} N={cell.n}: a run failed: {failure[:300]}")
        for r in cell.runs:
            if r.get("first_error"):
                notes.append(f"{cell.variant} N={cell.n}: {r['errors']} error(s), first: "
                             f"{r['first_error']}")
                break
        if cell.runs and "cluster_start_s" in cell.runs[0]:
            m = cell.median
            notes.append(f"{cell.variant} N={cell.n}: cluster start {m('cluster_start_s'):.2f} s "
                         f"(before the clock); CPU {m('cpu_self_s'):.2f} s in the client "
                         f"process + {m('cpu_workers_s'):.2f} s in the workers; peak threads "
                         f"and RSS are the client's plus the workers' and nannies'")
    return notes


def _versions() -> str:
    parts = []
    for dist in ("agentcore", "pydantic-ai-slim", "openai", "distributed", "requests"):
        try:
            parts.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    return ", ".join(parts)


def _source(tree: str | None = None) -> str:
    """Which agentcore is measured: `tree`'s (by default the one imported) commit."""
    tree = tree or os.path.dirname(os.path.dirname(os.path.abspath(ac.__file__)))
    try:
        head = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", tree, "status", "--porcelain", "--", "agentcore"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        head, dirty = "", ""
    if not head:
        return f"agentcore from {tree} (not a git work tree)"
    return f"agentcore at commit {head}" + (" with uncommitted changes" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default=",".join(map(str, NS)),
                        help="comma-separated numbers of concurrent runs (default: %(default)s)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated variants (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=None,
                        help=f"runs per cell, median reported (default {RUNS}; pydantic-ai "
                             f"runs once from N={PEER_ONCE_FROM})")
    parser.add_argument("--quick", action="store_true",
                        help=f"N = {','.join(map(str, QUICK_NS))}, one run each")
    parser.add_argument("--json", action="store_true", help="one JSON object per variant and N")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--save", metavar="PATH", help="also write the --json lines to PATH")
    parser.add_argument("--child", choices=VARIANTS, help="measure one variant in this process "
                        "and print its JSON report (starts its own server without --url)")
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--profile", metavar="PATH",
                        help="with --child: cProfile every thread, merged stats to PATH")
    parser.add_argument("--single", action="store_true",
                        help=f"one conversation alone, {SINGLE_ROUNDS} rounds (--runs), paced "
                        "and unpaced, beside the floors (no --n, no --variants)")
    parser.add_argument("--single-child", choices=("agentcore", *FLOORS),
                        help=argparse.SUPPRESS)
    parser.add_argument("--baseline", metavar="TREE",
                        help="also measure each agentcore variant (label ending in @base) with "
                        "the agentcore of TREE, a checkout of another commit (before/after "
                        "in the same run)")
    args = parser.parse_args(argv)
    if args.baseline and not os.path.isfile(os.path.join(args.baseline, "agentcore",
                                                         "__init__.py")):
        parser.error(f"--baseline {args.baseline!r} holds no agentcore/ package")
    if args.single_child:
        print(json.dumps(single_child(args.single_child, args.url)))
        return 0
    if args.single:
        return run_single(args.runs or SINGLE_ROUNDS, args.json, args.check, args.baseline)
    try:
        ns = [int(x) for x in (",".join(map(str, QUICK_NS)) if args.quick else args.n).split(",")]
    except ValueError:
        parser.error("--n takes comma-separated integers")
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or any(n < 1 for n in ns):
        parser.error(f"unknown variant(s) {unknown}; choose from {', '.join(VARIANTS)}"
                     if unknown else "--n must be positive")
    runs = args.runs if args.runs is not None else (1 if args.quick else RUNS)
    stream_server.raise_open_files_limit()
    if args.baseline and not args.child:  # each agentcore variant, then the baseline's
        variants = [label for v in variants
                    for label in ((v, v + BASE) if v in AGENTCORE_VARIANTS else (v,))]

    if args.child:
        def child(url: str) -> dict[str, Any]:
            call = functools.partial(measure, args.child, ns[0], url)
            return _profiled(call, args.profile) if args.profile else call()

        if args.url:
            report = child(args.url)
        else:
            with server_process() as (url, _):
                report = child(url)
        print(json.dumps(report))
        return 0

    cells = {(v, n): Cell(v, n) for n in ns for v in variants}
    started = clock()
    with server_process() as (url, _):
        for n in ns:
            for r in range(runs):
                for v in variants:
                    if v == PEER and n >= PEER_ONCE_FROM and r > 0:
                        continue
                    cell = cells[(v, n)]
                    for attempt in range(1 + INVALID_RETRIES):
                        report = run_child(v, n, url, baseline=args.baseline)
                        late = (None if "error" in report
                                else report["server"]["lateness_ms"]["p99"])
                        if not args.json:
                            print(f"  {v} N={n} run {r + 1}: " + (
                                f"failed: {report['error'][:200]}" if late is None else
                                f"{report['wall_s']:.2f} s, {report['cpu_s']:.2f} CPU s, "
                                f"{report['errors']} errors, server late p99 {late:.1f} ms"
                                + (" (invalid)" if late > TARGET_LATENESS_MS else "")),
                                file=sys.stderr, flush=True)
                        if late is None or late <= TARGET_LATENESS_MS \
                                or attempt == INVALID_RETRIES:
                            break
                        cell.invalid.append(late)
                    if late is None:
                        cell.failures.append(report["error"])
                    else:
                        cell.runs.append(report)
    total = clock() - started
    found = targets(cells)
    ordered = [cells[(v, n)] for n in ns for v in variants]
    lines = [json.dumps(cell.summary()) for cell in ordered]
    lines.append(json.dumps({"targets": [{"what": t.what, "value": t.value, "limit": t.limit,
                                          "unit": t.unit, "ok": t.ok, "checked": t.checked}
                                         for t in found],
                             "source": _source(), "seconds": round(total, 1)}))
    if args.save:
        with open(args.save, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json:
        print("\n".join(lines))
    else:
        print(f"{_versions()}; Python {platform.python_version()}, nproc {os.cpu_count()}; "
              f"{_source()}"
              + (f"; @base: {_source(args.baseline)}" if args.baseline else "")
              + f"; median of {runs} run(s) per cell"
              + (f", pydantic-ai once from N={PEER_ONCE_FROM}" if PEER in variants and runs > 1
                 and any(n >= PEER_ONCE_FROM for n in ns) else ""))
        print(table(ordered))
        ours = [v for v in variants if v in AGENTCORE_VARIANTS]
        for title, pairs in (
                ("agentcore / pydantic-ai", [(v, PEER) for v in ours]),
                ("after / before (the --baseline tree)", [(v, v + BASE) for v in ours]),
                ("agentcore / the floors", [(v, f) for v in ours for f in FLOORS])):
            ratio_table = ratios(cells, ns, pairs)
            if ratio_table:
                print(f"\nwall time, {title}:")
                print(ratio_table)
        print("\ntargets:")
        for t in found:
            print(f"  {t.line()}")
        invalid = [c for c in ordered if c.runs and c.lateness_p99_ms > TARGET_LATENESS_MS]
        if invalid:
            print("\nINVALID: the server fell behind its schedule (lateness p99 over "
                  f"{TARGET_LATENESS_MS:g} ms) in "
                  + ", ".join(f"{c.variant} N={c.n}" for c in invalid)
                  + ": those figures measure the server, not the client")
        notes = _notes(ordered)
        if notes:
            print("\nnotes:")
            for note in notes:
                print(f"  {note}")
        print(f"\ntime: {total:.0f} s")
    missed = any(t.ok is False and t.checked for t in found)
    failed = any(cell.failures for cell in ordered)
    return 1 if args.check and (missed or failed) else 0


if __name__ == "__main__":
    sys.exit(main())
