"""What a run's bounded event log costs: `AgentRun.publish` per event, and what it keeps.

    python benchmarks/run_log.py            # a table
    python benchmarks/run_log.py --json     # one JSON object per measurement and line
    python benchmarks/run_log.py --check    # exit 1 when a target is missed

A long reply streams one `message_update` per chunk; an `AgentRun` keeps at most `max_events`
of its events (API §11), dropping the oldest `message_update`s in batches. Each run publishes
`agent_start`, `message_start`, 200,000 `message_update`s, `message_end` and `agent_end` into a
fresh `AgentRun` from this thread (no agent, no model, no consumer), with the bound active
(`max_events=1000` and the default 100,000) and never reached (`max_events` above the count).
A mixed run adds a `turn_start` after every tenth update (20,000 events of a kind never
dropped), so that its log outgrows `max_events=1000` by design and drops updates in batches.
The floor is what `publish` did before the bound: a list append and `notify_all` under a
`Condition`. Two more variants publish while a consumer follows the run live, as a thread
(`for event in run`) or as an asyncio task (`async for event in run`, which `publish` wakes
through `loop.call_soon_threadsafe`), bound not reached. The events are built before the
clock starts (one `message_update` object, published 200,000 times: the log's own cost, not
the events'). See README.md beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import agentcore as ac
from agentcore.providers.faux import faux_assistant_message, faux_text

RUNS = 5
UPDATES = 200_000
BOUNDS = (1000, 100_000, 10**9)  # the last is never reached: the bound is not active


MIXED_EVERY = 10  # the mixed run: one turn_start after this many updates


def _events(updates: int, mixed: bool = False) -> list[ac.AgentEvent]:
    reply = faux_assistant_message([faux_text("x")])
    update = ac.MessageUpdateEvent(reply, ac.TextDeltaEvent(0, "x", reply))
    stream: list[ac.AgentEvent] = [update] * updates
    if mixed:
        turn = ac.TurnStartEvent()
        stream = [e for i, u in enumerate(stream)
                  for e in ((u, turn) if i % MIXED_EVERY == MIXED_EVERY - 1 else (u,))]
    return [ac.AgentStartEvent(), ac.MessageStartEvent(reply), *stream,
            ac.MessageEndEvent(reply), ac.AgentEndEvent([reply])]


def publish_all(events: list[ac.AgentEvent], max_events: int) -> tuple[float, int]:
    """Publish `events` into a fresh run bounded by `max_events`: (seconds, events kept)."""
    run = ac.AgentRun(ac.AbortController(), max_events=max_events)
    publish = run.publish
    start = time.perf_counter()
    for event in events:
        publish(event)
    wall = time.perf_counter() - start
    run.finish([])
    return wall, len(run.snapshot()[0])


def publish_followed(events: list[ac.AgentEvent], consumer: str) -> tuple[float, int]:
    """Publish `events` while a `consumer` ("thread" or "asyncio") iterates the run live.

    Times the publishing thread only: (seconds, events the consumer saw).
    """
    run = ac.AgentRun(ac.AbortController(), max_events=10**9)
    wall: list[float] = []

    def produce() -> None:
        start = time.perf_counter()
        for event in events:
            run.publish(event)
        wall.append(time.perf_counter() - start)
        run.finish([])

    if consumer == "thread":
        seen: list[int] = []
        follower = threading.Thread(target=lambda: seen.append(sum(1 for _ in run)))
        follower.start()
        produce()
        follower.join()
        return wall[0], seen[0]

    async def follow() -> int:
        async def count() -> int:
            return sum([1 async for _ in run])

        task = asyncio.create_task(count())
        await asyncio.sleep(0)  # the consumer waits before the first event is published
        producer = threading.Thread(target=produce)
        producer.start()
        seen = await task
        producer.join()
        return seen

    seen_async = asyncio.run(follow())
    return wall[0], seen_async


def floor(events: list[ac.AgentEvent]) -> tuple[float, int]:
    """The unbounded log `publish` kept before `max_events`: append and notify under a lock."""
    cond = threading.Condition(threading.Lock())
    log: list[ac.AgentEvent] = []
    start = time.perf_counter()
    for event in events:
        with cond:
            log.append(event)
            cond.notify_all()
    return time.perf_counter() - start, len(log)


def _row(name: str, values: list[float], unit: str, target: str | None = None,
         ok: bool | None = None) -> dict[str, Any]:
    return {"name": name, "median": round(statistics.median(values), 6),
            "min": round(min(values), 6), "max": round(max(values), 6), "unit": unit,
            "runs": len(values), "target": target, "ok": ok}


def _label(bound: int) -> str:
    return "not reached" if bound >= 10**9 else f"{bound:,}"


def measure(runs: int, updates: int) -> list[dict[str, Any]]:
    """Every variant, run after run in turn (one warm-up round), so that noise hits them alike."""
    events, mixed = _events(updates), _events(updates, mixed=True)
    variants: dict[str, Callable[[], tuple[float, int]]] = {
        f"max_events={_label(b)}": functools.partial(publish_all, events, b) for b in BOUNDS}
    variants["floor (append + notify_all, no bound)"] = functools.partial(floor, events)
    variants["mixed, max_events=1,000"] = functools.partial(publish_all, mixed, 1000)
    for consumer in ("thread", "asyncio"):
        variants[f"followed live, {consumer} consumer"] = functools.partial(
            publish_followed, events, consumer)
    walls: dict[str, list[float]] = {name: [] for name in variants}
    kept: dict[str, int] = {}
    for round_ in range(runs + 1):
        for name, variant in variants.items():
            wall, size = variant()
            if round_:
                walls[name].append(wall)
            kept[name] = size
    rows = [_row(f"publish per event, {name}",
                 [w / len(mixed if name.startswith("mixed") else events) * 1e6
                  for w in walls[name]], "µs") for name in variants]
    unbounded = walls[f"max_events={_label(BOUNDS[-1])}"]
    for bound in BOUNDS[:-1]:
        ratio = [a / b for a, b in zip(walls[f"max_events={_label(bound)}"], unbounded,
                                       strict=True)]
        rows.append(_row(f"bound {bound:,} / not reached (time)", ratio, "x"))
    for bound in BOUNDS:
        size = kept[f"max_events={_label(bound)}"]
        target, ok = (None, None) if bound >= 10**9 else (f"<= {bound:,}", size <= bound)
        rows.append(_row(f"events kept of {len(events):,}, max_events={_label(bound)}", [size],
                         "n", target, ok))
    others = len(mixed) - updates
    size = kept["mixed, max_events=1,000"]
    most = max(1000, others * 10 // 9 + 1)  # updates go once they are a tenth of the log
    rows.append(_row(f"mixed: events kept of {len(mixed):,} ({others:,} never dropped)", [size],
                     "n", f"<= {most:,}", size <= most))
    return rows


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 or value == int(value) else f"{value:.3f}"


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'median':>10}  {'min':>10}  {'max':>10}  unit  target"]
    for r in rows:
        target = "" if r["target"] is None else f"{r['target']} ({'ok' if r['ok'] else 'MISSED'})"
        lines.append(f"{r['name']:<{width}}  {_fmt(r['median']):>10}  {_fmt(r['min']):>10}  "
                     f"{_fmt(r['max']):>10}  {r['unit']:<4}  {target}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per variant")
    parser.add_argument("--updates", type=int, default=UPDATES,
                        help="message_update events per run")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.updates < 1:
        parser.error("--runs and --updates must be positive")
    started = time.perf_counter()
    rows = measure(args.runs, args.updates)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, median of "
              f"{args.runs} runs after a warm-up, {args.updates:,} updates a run; took "
              f"{time.perf_counter() - started:.1f} s")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
