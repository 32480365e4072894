"""Adaptive concurrency (API §24): how many requests may be open at once to one origin and key.

`run_batch` runs up to `max_concurrency` (N) runs at once; a provider that serves fewer
streams at once answers the others with 429, and plain retries turn that into a storm. So a
batch sends every request through an `AdaptiveTransport`, which holds a slot of its
`AdaptiveLimits` for the request's key from sending it until its reply is closed, and adapts
how many slots the key has (AIMD, as TCP does for its window) from the answers:

- Key: the request's origin and a SHA-256 digest of its credential headers (`key_of`, the idea
  of the rate-limit pauses' `PauseKey`; a SigV4 signature, new on every request, is left out).
- Start: `limit = min(N, 8)`; a request waits (FIFO, abortable) until fewer than `floor(limit)`
  requests of its key are open.
- Growth, on an accepted answer (2xx), only when the request was sent with at least half of
  the limit in use (a key that does not use its limit never learns a larger one): `+1` until
  the key's first overload (slow start: the limit doubles each round of calls), then
  `+1/limit` (about one more per round), capped at N. While `floor(limit)` equals the number
  of requests the origin had accepted when it last overloaded, the step past that level (the
  one that overloaded it) is approached four times slower, `+1/(4 * limit)`; without this a
  server of small capacity C (5, say) would refuse about one request in eight.
- Decrease, on an overload answer (429, 503, 529): `limit = max(1, 0.9 * min(limit, A))`,
  where A is the number of requests of the key open with an accepted answer at that moment
  (what the origin serves at once). At most once per round: each decrease starts a new
  generation, and an overload answer to a request sent before the last decrease (an older
  generation) leaves the limit as it is.
- Other answers (4xx, 500, a connection error) change nothing. The transport sees statuses
  only: an error inside a 2xx body (Bedrock's throttling event) counts as accepted.

Retries go through the transport again (`HttpClient.open`), so each one waits for a slot anew.
A response dropped without `close()` gives its slot back when it is garbage-collected. Per
batch, not per process: each batch makes its own `AdaptiveLimits`.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
from collections.abc import Hashable, Iterator, Mapping

from .._core import ABORTED_TEXT, AbortSignal
from ._policy import PauseKey
from ._transport import Outgoing, RequestAborted, Response, Timeouts, Transport

__all__ = ["OVERLOAD_STATUSES", "AdaptiveLimits", "AdaptiveTransport", "Ticket", "key_of"]

_log = logging.getLogger(__name__)

OVERLOAD_STATUSES = frozenset({429, 503, 529})
"""Answers that say the origin has too much to do: 429, 503, and Anthropic's 529."""
INITIAL_LIMIT = 8
DECREASE = 0.9
CREEP = 4.0
"""How many times slower the limit approaches the step that last overloaded the origin."""
_RECHECK_S = 1.0
"""How often a waiting request looks for slots freed by garbage-collected responses."""
_SIGV4 = "AWS4-HMAC-SHA256"


def key_of(request: Outgoing) -> PauseKey:
    """Whose slots `request` takes: its origin and a digest of its credential headers.

    A SigV4 `Authorization` header counts by its credential scope only (access key, date,
    region, service): its signature differs on every request.
    """
    headers = request.headers
    auth = headers.get("Authorization") or headers.get("authorization")
    if auth is not None and auth.startswith(_SIGV4):
        scope = next((part.strip() for part in auth[len(_SIGV4):].split(",")
                      if part.strip().startswith("Credential=")), auth)
        return PauseKey.of(request.url, (scope,), headers)
    return PauseKey.of(request.url, (), headers)


class _Key:
    """One key's state, guarded by its `AdaptiveLimits`' lock."""

    __slots__ = ("accepted", "ceiling", "generation", "in_flight", "limit", "slow_start",
                 "waiters")

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.in_flight = 0
        self.accepted = 0  # open requests with a 2xx answer
        self.generation = 0  # decreases so far
        self.slow_start = True
        self.ceiling = -1  # accepted requests at the last overload (-1: none yet)
        self.waiters: collections.deque[_Waiter] = collections.deque()


class Ticket:
    """One request's slot, from `AdaptiveLimits.acquire` until `release`."""

    __slots__ = ("accepted", "busy", "generation", "released", "state")

    def __init__(self, state: _Key, busy: bool) -> None:
        self.state = state
        self.generation = state.generation
        self.busy = busy  # sent with at least half of the limit in use
        self.accepted = False
        self.released = False


class _Waiter:
    __slots__ = ("event", "ticket")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.ticket: Ticket | None = None


class AdaptiveLimits:
    """The slots of every key a batch's requests go to, adapted by AIMD (see the module).

    Thread-safe. `acquire(key, signal)` blocks until the key has a free slot and returns its
    `Ticket`; `answered(ticket, status)` reports the answer's status; `release(ticket)` frees
    the slot (once; later calls do nothing).
    """

    def __init__(self, max_concurrency: int) -> None:
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
                or max_concurrency < 1:
            raise ValueError(f"'max_concurrency' must be an int of at least 1, got "
                             f"{max_concurrency!r}")
        self.max_concurrency = max_concurrency
        self._lock = threading.Lock()
        self._keys: dict[Hashable, _Key] = {}
        self._orphans: queue.SimpleQueue[Ticket] = queue.SimpleQueue()

    def __repr__(self) -> str:
        return f"AdaptiveLimits(max_concurrency={self.max_concurrency}, keys={len(self._keys)})"

    def limit(self, key: Hashable) -> float:
        """The key's limit now (`min(N, 8)` for a key not seen yet)."""
        state = self._keys.get(key)
        return float(min(self.max_concurrency, INITIAL_LIMIT)) if state is None else state.limit

    def in_flight(self, key: Hashable) -> int:
        """How many requests of the key hold a slot now."""
        state = self._keys.get(key)
        return 0 if state is None else state.in_flight

    def waiting(self, key: Hashable) -> int:
        """How many requests of the key wait for a slot now."""
        state = self._keys.get(key)
        return 0 if state is None else len(state.waiters)

    def acquire(self, key: Hashable, signal: AbortSignal | None = None) -> Ticket:
        """A slot for a request of `key`, once fewer than `floor(limit)` are open (FIFO).

        Raises `RequestAborted` once `signal` aborts, whether waiting or not.
        """
        if signal is not None and signal.aborted:
            raise RequestAborted(ABORTED_TEXT)
        with self._lock:
            self._adopt_orphans()
            state = self._keys.get(key)
            if state is None:
                state = self._keys[key] = _Key(float(min(self.max_concurrency,
                                                         INITIAL_LIMIT)))
            if not state.waiters and state.in_flight < int(state.limit):
                return self._grant(state)
            waiter = _Waiter()
            state.waiters.append(waiter)
        remove = signal.add_listener(waiter.event.set) if signal is not None else None
        try:
            return self._wait(state, waiter, signal)
        finally:
            if remove is not None:
                remove()

    def _wait(self, state: _Key, waiter: _Waiter, signal: AbortSignal | None) -> Ticket:
        while True:
            woke = waiter.event.wait(_RECHECK_S)
            with self._lock:
                if not woke:
                    self._adopt_orphans()
                ticket = waiter.ticket
                if signal is not None and signal.aborted:
                    if ticket is None:
                        state.waiters.remove(waiter)
                    else:  # granted as the abort came: the slot goes to the next in line
                        self._release(ticket)
                    raise RequestAborted(ABORTED_TEXT)
                if ticket is not None:
                    return ticket

    def answered(self, ticket: Ticket, status: int) -> None:
        """Adapt the ticket's key to an answer of `status` (see the module's docstring)."""
        if 200 <= status < 300:
            with self._lock:
                state = ticket.state
                ticket.accepted = True
                state.accepted += 1
                if not ticket.busy or state.limit >= self.max_concurrency:
                    return
                if state.slow_start:
                    step = 1.0
                else:
                    step = 1.0 / state.limit
                    if int(state.limit) == state.ceiling:
                        step /= CREEP
                state.limit = min(float(self.max_concurrency), state.limit + step)
                self._grant_waiters(state)
        elif status in OVERLOAD_STATUSES:
            with self._lock:
                state = ticket.state
                state.slow_start = False
                if ticket.generation != state.generation:
                    return  # sent before the last decrease: that one answered for it
                level = min(state.limit, float(state.accepted))
                state.ceiling = int(level)
                state.limit = max(1.0, DECREASE * level)
                state.generation += 1
                limit = state.limit
            _log.debug("overload answer %d: at most %d requests at once now", status,
                       int(limit))

    def release(self, ticket: Ticket) -> None:
        """Free the ticket's slot (the first call; later ones do nothing)."""
        with self._lock:
            self._release(ticket)
            self._adopt_orphans()

    def orphan(self, ticket: Ticket) -> None:
        """Free the slot of a response being garbage-collected (at the next chance).

        Takes no lock (a finalizer may run while this thread holds it): the ticket is queued,
        and the next `acquire`, `release` or waiter's recheck frees it.
        """
        self._orphans.put(ticket)

    def _grant(self, state: _Key) -> Ticket:
        state.in_flight += 1
        return Ticket(state, 2 * state.in_flight >= int(state.limit))

    def _grant_waiters(self, state: _Key) -> None:
        while state.waiters and state.in_flight < int(state.limit):
            waiter = state.waiters.popleft()
            waiter.ticket = self._grant(state)
            waiter.event.set()

    def _release(self, ticket: Ticket) -> None:
        if ticket.released:
            return
        ticket.released = True
        state = ticket.state
        state.in_flight -= 1
        if ticket.accepted:
            state.accepted -= 1
        self._grant_waiters(state)

    def _adopt_orphans(self) -> None:
        while not self._orphans.empty():
            self._release(self._orphans.get_nowait())


class AdaptiveTransport:
    """A `Transport` that sends through `inner`, each request holding a slot of `limits`.

    `open` waits for a slot of the request's key (`key_of`), opens through `inner`, reports the
    answer's status and returns a response that frees the slot when closed. `close()` does
    nothing: `inner` is shared (the process's transport, or a caller's) and outlives the batch.
    """

    __slots__ = ("inner", "limits")

    def __init__(self, inner: Transport, limits: AdaptiveLimits) -> None:
        self.inner = inner
        self.limits = limits

    def __repr__(self) -> str:
        return f"AdaptiveTransport({self.inner!r})"

    def open(self, request: Outgoing, timeouts: Timeouts, signal: AbortSignal | None
             ) -> Response:
        """Send `request` through `inner` once its key has a free slot; see the class."""
        limits = self.limits
        ticket = limits.acquire(key_of(request), signal)
        try:
            response = self.inner.open(request, timeouts, signal)
        except BaseException:
            limits.release(ticket)
            raise
        limits.answered(ticket, response.status)
        return _Held(response, limits, ticket)

    def close(self) -> None:
        """Nothing: the inner transport is not this one's to close."""


class _Held:
    """A `Response` holding a slot of `limits` until it is closed (or garbage-collected)."""

    __slots__ = ("_limits", "_response", "_ticket", "headers", "status")

    def __init__(self, response: Response, limits: AdaptiveLimits, ticket: Ticket) -> None:
        self._response = response
        self._limits = limits
        self._ticket = ticket
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers

    def chunks(self) -> Iterator[bytes]:
        return self._response.chunks()

    def read(self, limit: int) -> bytes:
        return self._response.read(limit)

    def set_read_timeout(self, seconds: float) -> None:
        self._response.set_read_timeout(seconds)

    def cut(self) -> None:
        self._response.cut()  # the reading thread closes it (and frees the slot) next

    def close(self) -> None:
        try:
            self._response.close()
        finally:
            self._limits.release(self._ticket)

    def __del__(self) -> None:
        ticket = getattr(self, "_ticket", None)
        if ticket is not None and not ticket.released:
            self._limits.orphan(ticket)
