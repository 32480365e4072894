"""`lean_post`: a POST through a session of `new_http_session`, straight to urllib3.

`requests` spends about as much per request as urllib3 itself on what such a session does not
use (cookies, auth, hooks, `.netrc`, redirects): the watched transport sends through here
whenever the session needs none of it, and through `session.post` otherwise.
"""

from __future__ import annotations

import contextlib
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
    import requests
    from urllib3.util import Timeout, parse_url

    target = requests.PreparedRequest()
    target.url, target.method = url, "POST"
    pool = adapter.get_connection_with_tls_context(target, verify, proxies=None, cert=cert)
    adapter.cert_verify(pool, url, verify, cert)
    ours = {name.lower() for name in headers}
    sent = {name: value for name, value in session.headers.items()
            if value is not None and name.lower() not in ours}
    sent.update(headers)
    sent["Content-Length"] = str(len(body))
    with _requests_errors():
        raw = pool.urlopen("POST", parse_url(url).request_uri, body=body, headers=sent,
                           redirect=False, assert_same_host=False, preload_content=False,
                           decode_content=False, retries=adapter.max_retries,
                           timeout=Timeout(connect=timeouts[0], read=timeouts[1]),
                           chunked=False)
    if "set-cookie" in raw.headers:  # kept for the next request, as requests does
        from requests import cookies, structures

        target.headers = structures.CaseInsensitiveDict(
            {name: str(value) for name, value in sent.items()})
        extract: Any = cookies.extract_cookies_to_jar
        extract(session.cookies, target, raw)
    if raw.status in _REDIRECTS:  # requests follows these: let it
        raw.close()
        raw.release_conn()
        return None
    return raw


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
