"""`CircuitBreaker`: stop calling a model that keeps failing, for a while (API §24).

One breaker watches any number of models, each its own circuit, keyed by what makes a model
a different endpoint: its API, provider, id and base URL. A circuit is closed (calls go
through) until `failure_threshold` calls to its model fail in a row; it is then open: calls
fail at once, without a request, and fall back to the next model, until `cooldown` seconds
have passed. Then it is half-open: the next call is a trial (other calls meanwhile still fall
back) whose success closes the circuit and whose failure opens it again for another
`cooldown`. The loop decides what a failure is (`_loop/_fallback.py`); the breaker only counts.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Literal, final

import attrs

from ._model import Model
from ._validators import type_error

__all__ = ["CircuitBreaker", "CircuitState", "Permit", "default_breaker"]

CircuitState = Literal["closed", "open", "half_open"]

_Key = tuple[str, str, str, str]


def _key(model: Model) -> _Key:
    return (model.api, model.provider, model.id, model.base_url)


@attrs.define(eq=False)
class _Circuit:
    """One model's circuit: failures in a row, and while open, when the cooldown ends."""

    failures: int = 0
    opened_until: float | None = None  # set while open or half-open
    trial: bool = False  # a half-open circuit's trial call is in flight


@final
class Permit:
    """Leave to make one call to a model; `settle` reports how the call went.

    `trial` says the call is a half-open circuit's trial. A permit settled twice, or never
    (a call that was aborted), changes nothing more: a trial left unsettled is released when
    the permit is, so that the next call may try.
    """

    __slots__ = ("_breaker", "_key", "_settled", "trial")

    def __init__(self, breaker: CircuitBreaker, key: _Key, trial: bool) -> None:
        self._breaker, self._key, self.trial, self._settled = breaker, key, trial, False

    def settle(self, ok: bool | None) -> None:
        """The call succeeded (True), failed (False), or says nothing of the model (None)."""
        if not self._settled:
            self._settled = True
            self._breaker._settle(self._key, ok, self.trial)


@final
class CircuitBreaker:
    """Opens a model's circuit after `failure_threshold` failed calls in a row (API §24).

    While a circuit is open, calls to its model fail at once and the run falls back to its
    next model without sending a request; `cooldown` seconds after it opened, one trial call
    decides: success closes it, failure opens it for another `cooldown`. `state(model)` says
    where a model stands. `failure_threshold=0` never opens a circuit (the breaker is off).

    One breaker is shared by the whole process unless a run names another
    (`AgentLoopConfig(circuit_breaker=...)`, `Agent(...)`, `run_batch(...)`). Thread-safe.
    It belongs to one process: it does not pickle.

    Raises:
        TypeError: `failure_threshold` is not an int, or `cooldown` not a number.
        ValueError: Either is negative (or `cooldown` is not finite).
    """

    __slots__ = ("_circuits", "_clock", "_lock", "cooldown", "failure_threshold")

    def __init__(self, failure_threshold: int = 3, cooldown: float = 30.0) -> None:
        if isinstance(failure_threshold, bool) or not isinstance(failure_threshold, int):
            raise type_error("failure_threshold", "an int", failure_threshold)
        if failure_threshold < 0:
            raise ValueError(f"'failure_threshold' must be 0 (never open) or more, got "
                             f"{failure_threshold!r}")
        if isinstance(cooldown, bool) or not isinstance(cooldown, (int, float)):
            raise type_error("cooldown", "a number of seconds", cooldown)
        if not 0 <= cooldown < math.inf:
            raise ValueError(f"'cooldown' must be a finite, non-negative number of seconds, "
                             f"got {cooldown!r}")
        self.failure_threshold = failure_threshold
        """Failed calls in a row that open a model's circuit (0: never)."""
        self.cooldown = float(cooldown)
        """Seconds an open circuit stays open before a trial call."""
        self._lock = threading.Lock()
        self._circuits: dict[_Key, _Circuit] = {}
        self._clock: Callable[[], float] = time.monotonic

    def __repr__(self) -> str:
        with self._lock:
            now = self._clock()
            opened = sum(c.opened_until is not None and c.opened_until > now
                         for c in self._circuits.values())
        return (f"CircuitBreaker(failure_threshold={self.failure_threshold}, "
                f"cooldown={self.cooldown:g}, open={opened})")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("a CircuitBreaker belongs to one process and cannot be pickled: make "
                        "one in each worker (or leave the default, one per process)")

    def state(self, model: Model) -> CircuitState:
        """Where `model`'s circuit stands: `"closed"`, `"open"` or `"half_open"`.

        Half-open: the cooldown has passed, and the next call (or the one in flight) is the
        trial that decides.
        """
        if not isinstance(model, Model):
            raise type_error("model", "a Model", model)
        with self._lock:
            circuit = self._circuits.get(_key(model))
            if circuit is None or circuit.opened_until is None:
                return "closed"
            return "open" if self._clock() < circuit.opened_until else "half_open"

    def reset(self) -> None:
        """Close every circuit and forget every failure."""
        with self._lock:
            self._circuits.clear()

    def permit(self, model: Model) -> Permit | None:
        """Leave for one call to `model`, or None while its circuit is open (or on trial)."""
        key = _key(model)
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None or circuit.opened_until is None:
                return Permit(self, key, False)
            if self._clock() < circuit.opened_until or circuit.trial:
                return None
            circuit.trial = True
            return Permit(self, key, True)

    def refusal(self, model: Model) -> str:
        """Why calls to `model` are refused now, in words, for the run's events and errors."""
        with self._lock:
            circuit = self._circuits.get(_key(model))
            left = 0.0 if circuit is None or circuit.opened_until is None \
                else max(0.0, circuit.opened_until - self._clock())
            trial = circuit is not None and circuit.trial
        name = f"{model.provider}/{model.id}"
        if trial:
            return f"circuit open for {name}: a trial call is deciding whether it recovered"
        return (f"circuit open for {name} after {self.failure_threshold} failed calls in a "
                f"row; the next trial in {left:.1f} s")

    def _settle(self, key: _Key, ok: bool | None, trial: bool) -> None:
        with self._lock:
            circuit = self._circuits.get(key)
            if ok is None:  # no verdict: only give back the trial
                if trial and circuit is not None:
                    circuit.trial = False
                return
            if ok:
                self._circuits.pop(key, None)  # closed, failures forgotten
                return
            if self.failure_threshold == 0:
                return
            if circuit is None:
                circuit = self._circuits[key] = _Circuit()
            circuit.failures += 1
            if trial or circuit.failures >= self.failure_threshold:
                circuit.opened_until = self._clock() + self.cooldown
                circuit.trial = False


_default: CircuitBreaker | None = None
_default_lock = threading.Lock()


def default_breaker() -> CircuitBreaker:
    """The breaker every run uses unless its config names another: one per process."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = CircuitBreaker()
    return _default
