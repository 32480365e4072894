"""`lean_post`: a POST through a session of `new_http_session`, straight to urllib3.

`requests` spends about as much per request as urllib3 itself on what such a session does not
use (cookies, auth, hooks, `.netrc`, redirects): the watched transport sends through here
whenever the session needs none of it, and through `session.post` otherwise.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["lean_post"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def lean_post(session: Any, adapter: Any, verify: Any, cert: Any, url: str, body: bytes,
              headers: Mapping[str, str], timeouts: tuple[float, float]) -> Any | None:
    """`session.post(url, ..., stream=True)` for a session of `new_http_session`, made cheaper.

    The request goes from the session's adapter straight to urllib3, with what `requests` would
    send (the session's headers under ours, the environment's certificate settings), and
    urllib3's errors become the `requests` exceptions `HTTPAdapter.send` raises. It skips what
    such a session does not use per request (cookies, auth, hooks, `.netrc`, redirects), which
    costs about as much as urllib3 itself; cookies a response sets are kept, and from then on the
    session's requests take requests' own path. `adapter` is the session's for `url`; `verify`
    and `cert` are what the session and the environment say. Returns urllib3's response; None,
    having sent nothing, when the session needs any of that (then use `session.post`); a
    redirect answer is closed and gives None.
    """
    if session.auth or session.params or session.cookies or any(session.hooks.values()):
        return None
    pool = _pool(adapter, url, verify, cert)
    adapter.cert_verify(pool, url, verify, cert)
    ours = {name.lower() for name in headers}
    sent = {name: value for name, value in session.headers.items()
            if value is not None and name.lower() not in ours}
    sent.update(headers)
    sent["Content-Length"] = str(len(body))
    with _requests_errors():
        raw = pool.urlopen("POST", _request_uri(url), body=body, headers=sent,
                           redirect=False, assert_same_host=False, preload_content=False,
                           decode_content=False, retries=adapter.max_retries,
                           timeout=_timeout(*timeouts), chunked=False)
    if "set-cookie" in raw.headers:  # kept for the next request, as requests does
        from requests import cookies, structures

        target = _prepared(url)
        target.headers = structures.CaseInsensitiveDict(
            {name: str(value) for name, value in sent.items()})
        extract: Any = cookies.extract_cookies_to_jar
        extract(session.cookies, target, raw)
    if raw.status in _REDIRECTS:  # requests follows these: let it
        raw.close()
        raw.release_conn()
        return None
    return raw


def _pool(adapter: Any, url: str, verify: Any, cert: Any) -> Any:
    """The urllib3 pool `adapter` sends `url` through, as requests finds it; kept a while.

    requests finds the pool anew for every request (it parses the URL, builds the pool's key,
    looks at the certificate bundle on disk), tens of microseconds each time. An adapter of
    `new_http_session` keeps the pools it found (`agentcore_pools`, emptied when it closes) by
    origin and certificate settings for `POOLS_TTL_S`, then asks its pool manager again: a pool
    the manager has dropped since (one host too many) is not used for long, and the one in use
    stays the manager's most recent.
    """
    pools: dict[Any, tuple[Any, float]] | None = getattr(adapter, "agentcore_pools", None)
    key = (*url.split("/", 3)[:3], verify, cert)
    now = time.monotonic()
    try:
        kept = pools.get(key) if pools is not None else None
    except TypeError:  # an unhashable setting: found anew every time
        pools = kept = None
    if kept is not None and now < kept[1] and getattr(kept[0], "pool", None) is not None:
        return kept[0]
    pool = adapter.get_connection_with_tls_context(_prepared(url), verify, proxies=None,
                                                   cert=cert)
    if pools is not None:
        if len(pools) >= _POOLS_KEPT:
            pools.clear()
        pools[key] = (pool, now + POOLS_TTL_S)
    return pool


POOLS_TTL_S = 1.0
"""How long an adapter of `new_http_session` sends through a pool before asking for it again."""

_POOLS_KEPT = 64


def _prepared(url: str) -> Any:
    """A `requests.PreparedRequest` of a POST to `url` (what requests' helpers look at)."""
    import requests

    target = requests.PreparedRequest()
    target.url, target.method = url, "POST"
    return target


@functools.lru_cache(maxsize=256)
def _request_uri(url: str) -> str:
    """The path and query of `url`, as urllib3 sends them (a model's URL is one of a few)."""
    from urllib3.util import parse_url

    return parse_url(url).request_uri


@functools.lru_cache(maxsize=64)
def _timeout(connect: float, read: float) -> Any:
    """urllib3's `Timeout` for (connect, read) seconds; urllib3 copies it before using it."""
    from urllib3.util import Timeout

    return Timeout(connect=connect, read=read)


@contextlib.contextmanager
def _requests_errors() -> Iterator[None]:
    """Raise urllib3's errors as the `requests` exceptions `HTTPAdapter.send` makes of them."""
    import requests
    from urllib3 import exceptions as u3

    try:
        yield
    except u3.MaxRetryError as exc:
        reason = exc.reason
        if isinstance(reason, u3.ConnectTimeoutError) and \
                not isinstance(reason, u3.NewConnectionError):
            raise requests.ConnectTimeout(exc) from exc
        if isinstance(reason, u3.ResponseError):
            raise requests.exceptions.RetryError(exc) from exc
        if isinstance(reason, u3.SSLError):
            raise requests.exceptions.SSLError(exc) from exc
        raise requests.ConnectionError(exc) from exc
    except (u3.ProtocolError, u3.ClosedPoolError, OSError) as exc:
        raise requests.ConnectionError(exc) from exc
    except u3.SSLError as exc:
        raise requests.exceptions.SSLError(exc) from exc
    except u3.ReadTimeoutError as exc:
        raise requests.ReadTimeout(exc) from exc
    except u3.InvalidHeader as exc:
        raise requests.exceptions.InvalidHeader(exc) from exc
