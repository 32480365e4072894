"""Many runs: `run_batch` over 100 prompts with a progress bar, here or on a Dask cluster.

`run_batch(make_agent, prompts)` runs `make_agent().prompt(prompt)` for every prompt, at most
`max_concurrency` at once on a private thread pool, and yields each run's `BatchResult` as it
ends. The model is offline: each agent gets a faux model of its own that answers the sum its
prompt asks for. Swap it for a real one (`ac.Agent(ac.get_model("openai", "gpt-4o-mini"))`)
and the same code runs against a provider.

`python examples/batch.py --dask` then runs the same call on a Dask `LocalCluster` of two
worker processes (`pip install 'agentcore[dask]'`): `executor=client.get_executor()` is the
only change. Dask sends `make_agent` to the workers, so it is a module-level function holding
no lock, open file or session; each result travels back as JSON.
"""

import re
import sys

import agentcore as ac
from agentcore.batch import BatchResult, run_batch
from agentcore.providers.faux import register_faux_provider


def answer(context: ac.Context, options: ac.StreamOptions, model: ac.Model) -> ac.AssistantMessage:
    """The faux model's reply to "What is A + B?": the sum."""
    a, b = map(int, re.findall(r"\d+", context.messages[-1].text))
    return ac.AssistantMessage([ac.TextContent(f"{a} + {b} = {a + b}")], "faux", "faux", "faux")


def make_agent() -> ac.Agent:
    """A new agent, made where it runs: in this process, or on a Dask worker."""
    faux = register_faux_provider(tokens_per_second=50)  # offline, about 0.1 s a reply
    faux.unregister()  # the agent calls it directly (stream_fn): nothing stays registered
    faux.set_responses([answer])  # one reply: each run makes one model call
    return ac.Agent(faux.get_model(), system_prompt="Answer with the sum.",
                    stream_fn=faux.stream)


def report(where: str, results: list[BatchResult]) -> None:
    failed = [r for r in results if r.error is not None]
    tokens = sum(r.usage.total_tokens for r in results)
    print(f"{where}: {len(results)} answers, {len(failed)} failed, {tokens} tokens")


def on_a_cluster(prompts: list[str]) -> list[BatchResult]:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        return list(run_batch(make_agent, prompts, executor=client.get_executor(),
                              progress=True))


def main() -> list[BatchResult]:
    prompts = [f"What is {i} + {2 * i}?" for i in range(100)]
    results = list(run_batch(make_agent, prompts, max_concurrency=16, progress=True))
    report("here", results)
    for result in sorted(results, key=lambda r: r.index)[:3]:  # they came as they ended
        print(f"  {result.input} -> {result.text}")
    if "--dask" in sys.argv:
        report("on a LocalCluster", on_a_cluster(prompts))
    return results


if __name__ == "__main__":
    main()
