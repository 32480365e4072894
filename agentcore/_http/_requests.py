"""`RequestsTransport`: requests through a caller's `requests.Session`, on its public API only.

For a session the caller set up (proxies, certificates, adapters, auth, hooks, cookies): each
attempt is `session.post(..., stream=True)`, so requests does all it does (redirects included).
Its sockets are requests' own and cannot be watched: with a signal, the opening runs on an
`Opener` thread that an abort abandons (the abandoned connect or wait ends at its timeout), and
the body is read through the same reader as `Urllib3Transport`'s. The session is never closed
here: it is the caller's.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .._core import AbortSignal
from ._transport import Outgoing, Response, Timeouts, TransportError
from ._urllib3 import Urllib3Response
from ._watch import open_abandonably

if TYPE_CHECKING:
    import requests

__all__ = ["RequestsTransport"]


class RequestsTransport:
    """A `Transport` through `session.post` (see the module's docstring).

    Thread-safe as far as the session is (requests' sessions are, for sending).
    """

    __slots__ = ("session",)

    def __init__(self, session: requests.Session) -> None:
        import requests

        if not isinstance(session, requests.Session):
            raise TypeError(f"'session' must be a requests.Session, got {type(session).__name__}")
        self.session = session

    def __repr__(self) -> str:
        return f"RequestsTransport({type(self.session).__name__})"

    def open(self, request: Outgoing, timeouts: Timeouts, signal: AbortSignal | None
             ) -> Response:
        """Post `request` through the session; with a signal, on a thread the abort abandons."""
        send = functools.partial(_post, self.session, request, timeouts)
        if signal is None:
            return send()
        return open_abandonably(send, signal)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Nothing: the session is the caller's, who closes it."""


def _post(session: Any, request: Outgoing, timeouts: Timeouts) -> Response:
    import requests

    try:
        response = session.request(request.method, request.url, data=request.body,
                                   headers=dict(request.headers), stream=True, timeout=timeouts)
    except requests.ConnectTimeout as exc:
        raise TransportError(str(exc), timed_out=True, connecting=True) from exc
    except requests.Timeout as exc:
        raise TransportError(str(exc), timed_out=True) from exc
    except requests.ConnectionError as exc:
        raise TransportError(str(exc)) from exc
    return Urllib3Response(response.raw, response.headers)
