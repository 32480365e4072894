"""Google Cloud credentials for Vertex AI: an express-mode key, or Application Default Credentials.

Which one is decided as google-genai decides it: an `api_key` in the options is express mode;
else a project or location in the environment (`GOOGLE_CLOUD_PROJECT`, `GCLOUD_PROJECT`,
`GOOGLE_CLOUD_LOCATION`) means Application Default Credentials (ADC), even when
`GOOGLE_CLOUD_API_KEY` is set; else `GOOGLE_CLOUD_API_KEY` is express mode; else ADC.

Express mode needs nothing but the key (no google-auth, no network). ADC need google-auth (the
`vertex` extra), imported only then: `google.auth.default` finds the credentials (a key file
named by `GOOGLE_APPLICATION_CREDENTIALS`, `gcloud auth application-default login`, the metadata
server of a Google Cloud machine) once per process and key file, and their access token is
refreshed under a lock whenever google-auth no longer deems it valid, which it does from a few
minutes (3 min 45 s) before it expires: a request never leaves with a token about to expire.
The token is fetched when a stream is made, before its request (an abort cannot cut a refresh
short). The project is `GOOGLE_CLOUD_PROJECT`, else `GCLOUD_PROJECT`, else the credentials'
own; the location is `GOOGLE_CLOUD_LOCATION`, else `global` (google-genai's default too).
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

import attrs

from ..._core import MissingApiKeyError

__all__ = [
    "DEFAULT_LOCATION",
    "KEY_VAR",
    "LOCATION_VAR",
    "PROJECT_VARS",
    "Access",
    "TokenError",
    "access",
    "forget",
    "require_credentials",
]

KEY_VAR = "GOOGLE_CLOUD_API_KEY"
PROJECT_VARS = ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT")
LOCATION_VAR = "GOOGLE_CLOUD_LOCATION"
DEFAULT_LOCATION = "global"
AUTHENTICATED = "<authenticated>"
"""What `require_credentials` returns: ADC were found (the token itself is fetched per stream)."""

_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
_WHO = "provider 'google-vertex'"
_EXPRESS = f"or use express mode with an API key: set {KEY_VAR} or pass api_key"
_LOCATION = re.compile(r"[a-z][a-z0-9-]*\Z")

_lock = threading.Lock()
_loaded: dict[str, _Adc] = {}
"""The ADC of this process, by the value of `GOOGLE_APPLICATION_CREDENTIALS` they were found
with (another key file is other credentials)."""


class TokenError(Exception):
    """No access token could be had from the ADC; its text (no secret) becomes the error reply."""


@attrs.frozen
class Access:
    """How one stream reaches Vertex: an express-mode key, or a token for a project and location.

    Attributes:
        credential: The API key (express mode) or the access token; never in a repr.
        project: The Google Cloud project; None in express mode.
        location: The location (`global`, `us-central1`, ...); None in express mode.
        quota_project: The credentials' quota project, sent as `x-goog-user-project`.
    """

    credential: str = attrs.field(repr=False)
    project: str | None = None
    location: str | None = None
    quota_project: str | None = None

    @property
    def express(self) -> bool:
        """Whether this is an express-mode API key (no project, no location)."""
        return self.project is None

    def headers(self) -> dict[str, str]:
        """The credential as Vertex expects it, as google-auth would apply it for ADC."""
        if self.express:
            return {"x-goog-api-key": self.credential}
        headers = {"Authorization": f"Bearer {self.credential}"}
        if self.quota_project:
            headers["x-goog-user-project"] = self.quota_project
        return headers


@attrs.define(eq=False)
class _Adc:
    """Application Default Credentials found once; `token` may be called from any thread."""

    credentials: Any = attrs.field(repr=False)
    project: str | None
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)

    @property
    def quota_project(self) -> str | None:
        value = getattr(self.credentials, "quota_project_id", None)
        return value if isinstance(value, str) and value else None

    def token(self) -> str:
        """The access token, refreshed first (under the lock) unless google-auth deems it valid."""
        with self._lock:
            if not self.credentials.valid:
                _refresh(self.credentials)
            token = self.credentials.token
        if not isinstance(token, str) or not token:
            raise TokenError("google-vertex: the Application Default Credentials gave no "
                                "access token")
        return token


def access(api_key: str | None) -> Access:
    """How to reach Vertex for a stream whose options carry `api_key` (see the module's rules).

    Raises:
        MissingApiKeyError: No credentials, or no project for ADC; the message names what to set.
        ImportError: ADC are needed and google-auth is not installed (the `vertex` extra).
        ValueError: `GOOGLE_CLOUD_LOCATION` is no location name.
        TokenError: The access token could not be refreshed (its text becomes the error).
    """
    if api_key:
        return Access(api_key)
    project, location, key = _env(*PROJECT_VARS), _env(LOCATION_VAR), _env(KEY_VAR)
    if key and not (project or location):
        return Access(key)
    adc, project, location = _configured(project, location)
    return Access(adc.token(), project, location, adc.quota_project)


def require_credentials() -> str:
    """Check that ADC and a project are there, asking for no token; for `require_api_key`.

    Returns `"<authenticated>"` (no secret): the token is fetched when a stream is made.

    Raises:
        MissingApiKeyError, ImportError, ValueError: as `access`.
    """
    _configured(_env(*PROJECT_VARS), _env(LOCATION_VAR))
    return AUTHENTICATED


def forget() -> None:
    """Drop the ADC found so far: the next stream looks for them again (for tests)."""
    with _lock:
        _loaded.clear()


def _configured(project: str | None, location: str | None) -> tuple[_Adc, str, str]:
    location = location or DEFAULT_LOCATION
    if not _LOCATION.match(location):
        raise ValueError(f"{LOCATION_VAR} must be a Google Cloud location such as 'global' or "
                         f"'us-central1', got {location!r}")
    adc = _adc()
    project = project or adc.project
    if not project:
        raise MissingApiKeyError(
            f"no Google Cloud project for {_WHO}: set {PROJECT_VARS[0]} (or {PROJECT_VARS[1]}), "
            f"{_EXPRESS}")
    return adc, project, location


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _adc() -> _Adc:
    try:
        import google.auth
        import google.auth.exceptions
    except ImportError as exc:
        raise ImportError(
            "Application Default Credentials for Vertex AI need google-auth: pip install "
            f"'agentcore[vertex]'; {_EXPRESS}") from exc
    source = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS", "")
    with _lock:
        found = _loaded.get(source)
        if found is None:
            try:
                credentials, project = google.auth.default(scopes=_SCOPES)
            except google.auth.exceptions.DefaultCredentialsError as exc:
                raise MissingApiKeyError(
                    f"no credentials for {_WHO}: set up Application Default Credentials "
                    "(`gcloud auth application-default login`, or GOOGLE_APPLICATION_CREDENTIALS "
                    f"naming a key file), {_EXPRESS} (google-auth: {exc})") from exc
            found = _loaded[source] = _Adc(credentials, project or None)
    return found


def _refresh(credentials: Any) -> None:
    import google.auth.exceptions
    import google.auth.transport.requests
    import requests

    with requests.Session() as session:
        try:
            credentials.refresh(google.auth.transport.requests.Request(session))
        except google.auth.exceptions.GoogleAuthError as exc:
            raise TokenError(
                "google-vertex: could not refresh the access token of the Application Default "
                f"Credentials: {exc}") from exc
