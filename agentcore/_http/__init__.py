"""Layer 1, HTTP: the client every provider request goes through, and its transports.

It imports nothing from agentcore but `_core`; `providers` and everything above reach it
through the names below.

- `_client`: `HttpClient(transport)`, one request with the retry and rate-limit policy,
  signing each attempt and redacting secrets from errors; `default_client()`, the one a
  process shares.
- `_policy`: when a request is retried, after how long, and the rate-limit pauses runs share;
  `_invalid`: a server error that says the request was invalid (never retried).
- `_transport`: the contract (`Transport.open(request, timeouts, signal) -> Response`,
  `Outgoing`, and the typed failures).
- `_urllib3`: `Urllib3Transport`, owning a `urllib3.PoolManager`: the only module allowed
  other libraries' private names, behind a version gate. `_bodies`: the sans-IO decoder of
  chunked and sized bodies it reads with. `_watch`: sockets an abort shuts down, threads it
  abandons.
- `_requests`: `RequestsTransport(session)`, a caller's `requests.Session` on public API.
- `_mock`: `MockTransport(handler)`, replies from a function, no socket.
- `_adaptive`: `AdaptiveTransport(inner, limits)`, a batch's requests held to `AdaptiveLimits`
  per origin and key, adapted by AIMD from the answers (API §24).
- `_redact`: secrets out of text.

Importing this package loads neither urllib3 nor requests.
"""

from ._adaptive import AdaptiveLimits, AdaptiveTransport
from ._client import (
    CONNECT_TIMEOUT_S,
    DEFAULT_READ_TIMEOUT_S,
    HttpClient,
    HttpError,
    HttpRequest,
    Opening,
    StreamedError,
    default_client,
)
from ._mock import MockReply, MockTransport
from ._policy import clear_pauses
from ._redact import redact
from ._requests import RequestsTransport
from ._transport import (
    Outgoing,
    ReadError,
    Replayed,
    RequestAborted,
    Response,
    Timeouts,
    Transport,
    TransportBug,
    TransportError,
)
from ._urllib3 import DEFAULT_POOL_SIZE, Urllib3Transport

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_READ_TIMEOUT_S",
    "AdaptiveLimits",
    "AdaptiveTransport",
    "HttpClient",
    "HttpError",
    "HttpRequest",
    "MockReply",
    "MockTransport",
    "Opening",
    "Outgoing",
    "ReadError",
    "Replayed",
    "RequestAborted",
    "RequestsTransport",
    "Response",
    "StreamedError",
    "Timeouts",
    "Transport",
    "TransportBug",
    "TransportError",
    "Urllib3Transport",
    "clear_pauses",
    "default_client",
    "redact",
]
