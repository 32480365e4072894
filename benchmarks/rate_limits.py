"""What the shared rate-limit checks cost a request that is not paused.

    python benchmarks/rate_limits.py            # a table
    python benchmarks/rate_limits.py --json     # one JSON object per measurement and line
    python benchmarks/rate_limits.py --check    # exit 1 when a target is missed

Every request asks `_policy.paused()` before each attempt: with no pause anywhere that is one
clock read and a comparison. While another key is paused, a request also derives its key and
calls `_policy.wait`, a dict lookup without a lock. Each is timed with `timeit` over `CALLS`
calls, `RUNS` times after a warm-up; the figure is the time per call. Targets (issue 17, held
by a unit test until issue 34 moved timings here): under 1 µs each. That neither takes the
registry's lock is a unit test's to prove (tests/providers/test_rate_limits.py). See README.md
beside this file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import timeit
from typing import Any

from run_log import _row, _table  # the rows and table as run_log.py prints them

import agentcore as ac
from agentcore._http import _policy as _ratelimit
from agentcore._http._policy import PauseKey, RetryPolicy

RUNS = 7
CALLS = 100_000
TARGET_S = 1e-6
URL = "https://api.example.com/v1"


def measure(runs: int, calls: int) -> list[dict[str, Any]]:
    """Both checks, alternating run by run after one warm-up round."""
    _ratelimit.clear_pauses()
    key = PauseKey.of(URL, ("sk-mine",), {})
    policy = RetryPolicy()
    other = PauseKey.of(URL, ("sk-another",), {})

    def paused_none() -> float:
        _ratelimit.clear_pauses()
        return timeit.timeit(_ratelimit.paused, number=calls) / calls

    def wait_other() -> float:
        _ratelimit.pause(other, 3600)
        try:
            return timeit.timeit(lambda: _ratelimit.wait(key, None, policy), number=calls) / calls
        finally:
            _ratelimit.clear_pauses()

    variants = {"paused(), nothing paused": paused_none,
                "wait(), another key paused": wait_other}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(runs + 1):
        for name, variant in variants.items():
            per_call = variant()
            if round_:
                seconds[name].append(per_call)
    rows = []
    for name, values in seconds.items():
        median = sorted(values)[len(values) // 2]
        rows.append(_row(f"{name}: per call", [v * 1e6 for v in values], "µs",
                         f"<= {TARGET_S * 1e6:g}", median <= TARGET_S))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per check")
    parser.add_argument("--calls", type=int, default=CALLS, help="calls per timed run")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.calls < 1:
        parser.error("--runs and --calls must be positive")
    started = time.perf_counter()
    rows = measure(args.runs, args.calls)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"agentcore {ac.__version__}, Python {sys.version.split()[0]}, median of "
              f"{args.runs} runs of {args.calls:,} calls after a warm-up; took "
              f"{time.perf_counter() - started:.1f} s")
        print(_table(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
