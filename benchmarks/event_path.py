"""What one streamed text chunk costs, layer by layer, from the transport's bytes to a listener.

    python benchmarks/event_path.py            # a table
    python benchmarks/event_path.py --json     # one JSON object per layer
    PYTHONPATH=../old-checkout python benchmarks/event_path.py   # another tree's agentcore

A reply of Chat Completions text chunks (`stream_server.text_reply`: the JSON of real
`gpt-4o-mini` chunks, one token each) is handed to agentcore by an in-process transport, one
chunk per read as a paced model sends them: no socket, no thread waiting on the network, so
what is measured is the Python cost of the event path. Each layer adds one stage to the one
before it:

- L0 floor: per chunk, cut the `data: ` line out and `json.loads` it, keep the text (what any
  client must do, with no events at all);
- L1 `agentcore.stream`: SSE decoding, the Chat Completions wire handler, the reply builder,
  the event stream, consumed to its end;
- L2 `run_agent_loop` with a sink that drops the events: the loop's `message_update`s;
- L3 `Agent.prompt` + `run.wait()`: the agent's state, the run's event log, the run's thread;
- L4 the same with one listener (`subscribe`).

CPU per chunk is `time.process_time()` (every thread) of a reply of LONG chunks minus one of
SHORT chunks, divided by the difference, so that what a run costs once cancels out; each
figure is the median (and min) of RUNS such differences, each over REPS replies. The transport
test double plugs into the public seam, `HttpClient(transport)`, as `MockTransport` does.
See README.md beside this file for the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import stream_server

import agentcore as ac
from agentcore.providers import HttpClient

SHORT, LONG = 100, 2_100
RUNS = 5
REPS = 15
MODEL = ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai",
                 base_url="http://in-process/v1")


BODIES = {count: stream_server.text_reply(count).sse for count in (SHORT, LONG)}
"""The SSE events of a text reply of so many chunks, one HTTP chunk's payload each."""


class _Reply:
    """A transport's reply whose body is the chunks given, one per read."""

    status = 200
    headers: ClassVar[dict[str, str]] = {"content-type": "text/event-stream"}

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def chunks(self) -> Iterator[bytes]:
        yield from self._chunks

    def read(self, limit: int) -> bytes:
        return b""

    def set_read_timeout(self, seconds: float) -> None:
        pass

    def cut(self) -> None:
        pass

    def close(self) -> None:
        pass


class _InProcess:
    """A transport answering every request with the reply of `count` chunks."""

    count = SHORT

    def open(self, request: Any, timeouts: Any, signal: Any) -> _Reply:
        return _Reply(BODIES[self.count])

    def close(self) -> None:
        pass


TRANSPORT = _InProcess()
CLIENT = HttpClient(TRANSPORT)


def floor() -> None:
    text = []
    for chunk in BODIES[TRANSPORT.count]:
        for line in chunk.split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                choices = json.loads(line[6:])["choices"]
                if choices:
                    text.append(choices[0]["delta"].get("content") or "")
    if not text:
        raise RuntimeError("the floor read no text")


def stream() -> None:
    events = ac.stream(MODEL, ac.Context("sys", [ac.UserMessage("hi")]),
                       ac.StreamOptions(api_key="bench", http_client=CLIENT))
    for _ in events:
        pass
    if events.result().stop_reason != ac.StopReason.STOP:
        raise RuntimeError(events.result().error_message)


def loop() -> None:
    config = ac.AgentLoopConfig(model=MODEL, api_key="bench", http_client=CLIENT)
    ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext("sys", [], []), config,
                      lambda event: None)


def _agent(listen: bool) -> None:
    agent = ac.Agent(MODEL, system_prompt="sys", api_key="bench", http_client=CLIENT)
    try:
        if listen:
            agent.subscribe(lambda event, signal: None)
        run = agent.prompt("hi")
        run.wait(60)
        if run.error is not None:
            raise RuntimeError(run.error)
    finally:
        agent.close()


def agent() -> None:
    _agent(False)


def listener() -> None:
    _agent(True)


LAYERS: list[tuple[str, Callable[[], None]]] = [
    ("L0 floor: json.loads per chunk", floor),
    ("L1 agentcore.stream (SSE, wire handler, builder)", stream),
    ("L2 + run_agent_loop (a sink)", loop),
    ("L3 + Agent (state, run log, run thread)", agent),
    ("L4 + one listener", listener),
]


def per_chunk_us(call: Callable[[], None], runs: int = RUNS, reps: int = REPS) -> list[float]:
    """CPU µs per chunk of `call`, `runs` times: (t(LONG) - t(SHORT)) / (LONG - SHORT)."""
    def seconds(count: int) -> float:
        TRANSPORT.count = count
        call()  # warm
        start = time.process_time()
        for _ in range(reps):
            call()
        return (time.process_time() - start) / reps

    return [(seconds(LONG) - seconds(SHORT)) / (LONG - SHORT) * 1e6 for _ in range(runs)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per layer")
    parser.add_argument("--runs", type=int, default=RUNS, help="differences per layer")
    args = parser.parse_args(argv)
    if not args.json:
        print(f"agentcore {ac.__version__} ({ac.__file__}), Python {sys.version.split()[0]}; "
              f"CPU µs per chunk, median (min) of {args.runs} runs")
    for name, call in LAYERS:
        values = per_chunk_us(call, args.runs)
        row = {"layer": name, "us_per_chunk": round(statistics.median(values), 2),
               "min": round(min(values), 2), "all": [round(v, 2) for v in values]}
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{name:52s} {row['us_per_chunk']:7.2f} ({row['min']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
