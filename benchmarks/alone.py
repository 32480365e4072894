"""One conversation of `concurrency.py` at a time: what it costs agentcore and the floor alone.

    python benchmarks/alone.py              # 200 conversations a client, 4 alternations
    python benchmarks/alone.py --n 100 --rounds 6

The server is `concurrency.py`'s, unpaced (`--first-token 0 --reply 0`), so a conversation
costs only its client's work. Each client runs N conversations in a row on this thread; the
clients alternate, round by round, and each figure is the median over the rounds of the
process's user CPU, system CPU and context switches (`getrusage`) divided by N. Clients:

- agent: `Agent.prompt` + `wait`, a new agent a conversation (as `agentcore-agent`).
- agent, call inline: the same with the tool call run where it is submitted (an executor that
  runs it at once), so no worker thread: what the tool's hand-off costs.
- batch: `run_batch(..., max_concurrency=1)`: each run on the batch's thread (as
  `agentcore-batch`), its tool call on a worker.
- batch, call inline: the same with the call run where submitted: the run's work alone.
- loop, call inline: `run_agent_loop` on this thread with a sink that drops the events, the
  call run where submitted: the streaming, the wire handler, the loop and its events, without
  an `Agent` (no state, no run log, no run thread) and without a worker.
- floor-shared: `floors.shared_requests_conversation`, the floor of API §29.

Issue 39 reads it beside `concurrency.py`: at N = 1,000 every client is CPU-bound on one core,
so the ratio there follows the ratio of the work alone measured here.
"""

from __future__ import annotations

import argparse
import functools
import resource
import statistics
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import concurrency
import floors

import agentcore as ac
from agentcore.batch import run_batch


class Here(ThreadPoolExecutor):
    """An executor that runs each call where it is submitted (the loop ignores the future)."""

    _done: Future[Any] = Future()
    _done.set_result(None)

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        fn(*args, **kwargs)
        return self._done


def make_agent(base_url: str, inline: bool) -> ac.Agent:
    agent = concurrency.make_agent(base_url)
    if inline:
        agent.tool_executor = Here(1)
    return agent


def agents(base_url: str, n: int, inline: bool) -> None:
    for i in range(n):
        agent = make_agent(base_url, inline)
        run = agent.prompt(concurrency.prompt_for(i))
        run.wait(concurrency.RUN_TIMEOUT_S)
        error = run.error or concurrency.check_text(run.text)
        agent.close()
        if error:
            raise RuntimeError(error)


def batch(base_url: str, n: int, inline: bool) -> None:
    inputs = [concurrency.prompt_for(i) for i in range(n)]
    for result in run_batch(functools.partial(make_agent, base_url, inline), inputs,
                            max_concurrency=1):
        if result.error:
            raise RuntimeError(result.error)


def loop(base_url: str, n: int) -> None:
    model = ac.Model(concurrency.MODEL_ID, "GPT-4o mini", "openai-completions", "openai",
                     base_url=f"{base_url}/v1")
    here = Here(1)
    for i in range(n):
        config = ac.AgentLoopConfig(model=model, api_key=concurrency.API_KEY,
                                    tool_executor=here)
        context = ac.AgentContext(concurrency.SYSTEM_PROMPT, [], [concurrency.get_weather])
        messages = ac.run_agent_loop([ac.UserMessage(concurrency.prompt_for(i))], context,
                                     config, _drop)
        last = messages[-1]
        text = "".join(b.text for b in last.content if isinstance(b, ac.TextContent)) \
            if isinstance(last, ac.AssistantMessage) else ""
        error = concurrency.check_text(text)
        if error:
            raise RuntimeError(error)


def _drop(event: ac.AgentEvent) -> None:
    """A sink that keeps nothing."""


def floor(base_url: str, n: int) -> None:
    for i in range(n):
        error = concurrency.check_text(
            floors.shared_requests_conversation(concurrency.ask_for(base_url, i)))
        if error:
            raise RuntimeError(error)


CLIENTS: dict[str, Callable[[str, int], None]] = {
    "agent": functools.partial(agents, inline=False),
    "agent, call inline": functools.partial(agents, inline=True),
    "batch": functools.partial(batch, inline=False),
    "batch, call inline": functools.partial(batch, inline=True),
    "loop, call inline": loop,
    "floor-shared": floor,
}


def _usage() -> tuple[float, float, int]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime, usage.ru_nvcsw + usage.ru_nivcsw


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="conversations a client a round")
    parser.add_argument("--rounds", type=int, default=4, help="alternations (median reported)")
    args = parser.parse_args(argv)
    if args.n < 1 or args.rounds < 1:
        parser.error("--n and --rounds must be positive")
    seen: dict[str, list[tuple[float, float, float]]] = {name: [] for name in CLIENTS}
    with concurrency.server_process("--first-token", "0", "--reply", "0") as (url, _):
        for client in CLIENTS.values():  # warm-up: imports, the pools, the server
            client(url, 20)
        for _ in range(args.rounds):
            for name, client in CLIENTS.items():
                before = _usage()
                client(url, args.n)
                after = _usage()
                seen[name].append(((after[0] - before[0]) / args.n,
                                   (after[1] - before[1]) / args.n,
                                   (after[2] - before[2]) / args.n))
    print(f"{args.n} conversations a client, median of {args.rounds} alternations")
    print("| client | user ms/conv | system ms/conv | context switches/conv | CPU / floor |")
    print("|---|---:|---:|---:|---:|")
    medians = {name: [statistics.median(row[k] for row in rows) for k in range(3)]
               for name, rows in seen.items()}
    floor_cpu = sum(medians["floor-shared"][:2])
    for name, (user, system, switches) in medians.items():
        print(f"| {name} | {user * 1e3:.2f} | {system * 1e3:.2f} | {switches:.0f} | "
              f"{(user + system) / floor_cpu:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
