"""`Budget`: a spending limit shared by any number of runs, agents and batches (API §24).

`UsageLimits` bound one run; a budget bounds them all together. Every model call's usage is
charged to it as the call completes (failed calls included), and once it is spent no run that
holds it starts another model call: such runs end with `usage limit reached: budget ...`.
Calls already in flight finish and are charged, so the overshoot is at most one call per
running agent.
"""

from __future__ import annotations

import math
import threading
from typing import final

from ._usage import Usage
from ._validators import type_error

__all__ = ["Budget"]


def _check(name: str, value: object, integral: bool) -> None:
    if value is None:
        return
    kinds: tuple[type, ...] = (int,) if integral else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise type_error(name, "a non-negative int or None" if integral
                         else "a number of dollars or None", value)
    if not 0 <= value < math.inf:  # type: ignore[operator]
        raise ValueError(f"'{name}' must be non-negative and finite, got {value!r}")


@final
class Budget:
    """Dollars and tokens that runs sharing this object may spend together; thread-safe.

    Pass it as `UsageLimits(budget=b)` (to an `Agent` or `AgentLoopConfig`) or
    `run_batch(..., budget=b)`; any number of runs on any threads of this process may hold
    it. `spent` is the usage charged so far; `remaining_cost` and `remaining_tokens` are what
    is left (`None` where unlimited, never below 0). It belongs to one process: it does not
    pickle (a batch on a Dask cluster refuses it).

    Args:
        max_cost: Dollars (`usage.cost.total`, summed).
        max_total_tokens: Tokens (`usage.total_tokens`, summed).

    Raises:
        ValueError: Neither limit is set, or one is negative or not finite.
        TypeError: A limit is not a number.
    """

    __slots__ = ("_lock", "_spent", "max_cost", "max_total_tokens")

    def __init__(self, max_cost: float | None = None,
                 max_total_tokens: int | None = None) -> None:
        _check("max_cost", max_cost, False)
        _check("max_total_tokens", max_total_tokens, True)
        if max_cost is None and max_total_tokens is None:
            raise ValueError("a Budget needs 'max_cost' or 'max_total_tokens' (or both): one "
                             "with neither would never be spent")
        self.max_cost = max_cost
        """The dollars it allows, or None."""
        self.max_total_tokens = max_total_tokens
        """The tokens it allows, or None."""
        self._lock = threading.Lock()
        self._spent = Usage()

    def __repr__(self) -> str:
        spent = self.spent
        limits = ", ".join(f"{name}={value!r}" for name, value in (
            ("max_cost", self.max_cost), ("max_total_tokens", self.max_total_tokens))
            if value is not None)
        return (f"Budget({limits}; spent ${spent.cost.total:.4f}, "
                f"{spent.total_tokens} tokens)")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("a Budget is shared in memory by the runs of one process and cannot "
                        "be pickled (run the batch on threads: executor=None)")

    @property
    def spent(self) -> Usage:
        """The usage charged so far, summed."""
        with self._lock:
            return self._spent

    @property
    def remaining_cost(self) -> float | None:
        """Dollars left (0 once spent), or None when `max_cost` is not set."""
        if self.max_cost is None:
            return None
        return max(0.0, self.max_cost - self.spent.cost.total)

    @property
    def remaining_tokens(self) -> int | None:
        """Tokens left (0 once spent), or None when `max_total_tokens` is not set."""
        if self.max_total_tokens is None:
            return None
        return max(0, self.max_total_tokens - self.spent.total_tokens)

    def charge(self, usage: Usage) -> None:
        """Add one model call's `usage` to what is spent (the loop calls it for every call)."""
        if not isinstance(usage, Usage):
            raise type_error("usage", "a Usage", usage)
        with self._lock:
            self._spent = self._spent + usage

    def exhausted(self) -> str | None:
        """Which limit is spent, as `budget max_cost=1.0`; None while some of each is left."""
        spent = self.spent
        if self.max_cost is not None and spent.cost.total >= self.max_cost:
            return f"budget max_cost={self.max_cost!r}"
        if self.max_total_tokens is not None and spent.total_tokens >= self.max_total_tokens:
            return f"budget max_total_tokens={self.max_total_tokens!r}"
        return None
