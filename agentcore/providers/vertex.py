"""Google Vertex AI (`google-vertex`): Gemini's wire (`google`'s body and events) on Google Cloud.

A stream posts to `{root}/projects/{project}/locations/{location}/publishers/google/models/{id}
:streamGenerateContent?alt=sse` with `Authorization: Bearer <access token>` from Application
Default Credentials, or, in express mode, to `{root}/publishers/google/models/{id}
:streamGenerateContent?alt=sse` with `x-goog-api-key` (see `_gcp` for which one, the project and
the location).

`root` is `model.base_url`. The catalogue's is `https://aiplatform.googleapis.com/v1`, the global
endpoint; on that host a location picks its own endpoint as Google documents them:
`https://{location}-aiplatform.googleapis.com` for a region, `aiplatform.{us,eu}.rep.googleapis.com`
for the multi-regions, the global host for `global` and for express mode. Any other base URL (a
proxy, a Private Service Connect endpoint, a local server) is used as given, with the same path
after it.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import attrs

from .._core import AssistantMessageEventStream, Context, Model, StreamOptions
from .._http import HttpError
from ._clouds import gcp
from ._wire import WireApi, message_text, stream_http_reply
from .google import build_body, handle

__all__ = ["GLOBAL_HOST", "endpoint_host", "stream_vertex", "url_for"]

GLOBAL_HOST = "aiplatform.googleapis.com"
"""The global endpoint's host, used for the location `global` and for express mode."""

_MULTI_REGIONS = frozenset({"us", "eu"})
_HINTS = {
    (401, False): "check the Application Default Credentials: `gcloud auth application-default "
                  "login`, or GOOGLE_APPLICATION_CREDENTIALS naming a key file",
    (401, True): "check the express-mode API key (GOOGLE_CLOUD_API_KEY or api_key)",
    (403, False): "the account needs the Vertex AI User role (roles/aiplatform.user) on the "
                  "project, and the project the Vertex AI API enabled",
    (403, True): "check that the API key may use the Vertex AI API in express mode",
}


def endpoint_host(location: str | None) -> str:
    """Vertex's host for `location` (None: express mode, which uses the global host)."""
    if location is None or location == "global":
        return GLOBAL_HOST
    if location in _MULTI_REGIONS:
        return f"aiplatform.{location}.rep.googleapis.com"
    return f"{location}-{GLOBAL_HOST}"


def _root(base_url: str, location: str | None) -> str:
    parts = urlsplit(base_url.rstrip("/"))
    if parts.hostname != GLOBAL_HOST or parts.port is not None or "@" in parts.netloc:
        return parts.geturl()
    return urlunsplit((parts.scheme, endpoint_host(location), parts.path, parts.query,
                       parts.fragment))


def url_for(model: Model, found: gcp.Access) -> str:
    """The `streamGenerateContent` URL of `model` for the access `found`."""
    resource = f"publishers/google/models/{model.id}"
    if found.project is not None:
        project = quote(found.project, safe=":")
        resource = f"projects/{project}/locations/{found.location}/{resource}"
    return f"{_root(model.base_url, found.location)}/{resource}:streamGenerateContent?alt=sse"


def _error_detail(body: str) -> dict[str, Any] | None:
    """The `error` object of a Google error body (a list of them, for some endpoints)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if isinstance(payload, list) and payload:
        payload = payload[0]
    detail = payload.get("error") if isinstance(payload, dict) else None
    return detail if isinstance(detail, dict) else None


@attrs.define(eq=False)
class _Call:
    """One stream's way to Vertex, found when the stream is made (`WireApi.api_key`)."""

    found: gcp.Access | None = attrs.field(default=None, repr=False)

    def api_key(self, model: Model, options: StreamOptions) -> str:
        self.found = gcp.access(options.api_key)
        return self.found.credential

    def _access(self) -> gcp.Access:
        assert self.found is not None, "api_key is called first"
        return self.found

    def url(self, model: Model) -> str:
        return url_for(model, self._access())

    def headers(self, model: Model, key: str) -> dict[str, str]:
        return self._access().headers()

    def http_error_text(self, error: HttpError) -> str:
        """`<status> <STATUS>: <message>`, with what to check for a 401 or a 403.

        An empty message gives the error object's JSON instead (`_reply.message_text`).
        """
        detail = _error_detail(error.body)
        if detail is not None and isinstance(detail.get("message"), str):
            said = message_text(detail["message"], detail)
            text = f"{error.status} {detail.get('status') or 'error'}: {said}"
        else:
            text = f"{error.status} {error.body}" if error.body else str(error)
        hint = _HINTS.get((error.status or 0, self._access().express))
        return f"{text} ({hint})" if hint else text


def stream_vertex(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """Stream a reply from Gemini on Vertex AI (`streamGenerateContent`).

    The credentials are found now (see `_gcp`): raises `MissingApiKeyError` naming what to set
    when there are none or no project, `ImportError` when Application Default Credentials need
    google-auth and it is missing.
    """
    call = _Call()
    wire = WireApi(url=call.url, headers=call.headers, body=build_body, handle=handle,
                   http_error_text=call.http_error_text, api_key=call.api_key)
    return stream_http_reply(wire, model, context, options)
