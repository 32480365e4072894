"""How requests reach AWS Bedrock: the endpoint and its region, the credentials, SigV4 signing.

Credentials, in order: an explicit `api_key` (or a `get_api_key` hook) or `AWS_BEARER_TOKEN_BEDROCK`
is a Bedrock API key, sent as `Authorization: Bearer` (no botocore needed); otherwise botocore's
credential chain (environment, shared files and profiles, SSO, web identity, container and
instance roles) finds AWS credentials, and every attempt at a request is signed with SigV4 over
its exact body bytes. botocore is imported only then; without it, an `ImportError` names
`pip install 'agentcore[bedrock]'`.

The chain is resolved once per AWS environment (the `AWS_*` variables), as a boto3 client does,
so that an assume-role profile does not call STS for every request; refreshable credentials
(SSO, roles) refresh themselves, read afresh for every attempt.

The region, in order: the region named in the host of `Model.base_url` (a regional endpoint,
a VPC endpoint such as `vpce-....bedrock-runtime.us-east-1.vpce.amazonaws.com`), else
`AWS_REGION`, `AWS_DEFAULT_REGION`, then (with SigV4) the profile's `region`. A base URL may
hold `{region}` (the catalogue's rows do): it is filled in. Any other host (a proxy, a local
test server) is sent to as it is and signed for the region found; with a bearer token such a
host needs no region at all.

SigV4 is computed with botocore's canonicalization, but not through `SigV4Auth.add_auth`: that
logs the canonical request (with the session token) and the signature at DEBUG.
"""

from __future__ import annotations

import functools
import os
import re
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, urlsplit

import attrs

from ..._core import MissingApiKeyError, Model, StreamOptions
from ..._http import Outgoing

__all__ = [
    "DEFAULT_BASE_URL",
    "TOKEN_VAR",
    "Access",
    "access",
    "forget_credentials",
    "require_credentials",
]

DEFAULT_BASE_URL = "https://bedrock-runtime.{region}.amazonaws.com"
"""The catalogue's base URL: Bedrock's runtime endpoint in the region found."""
TOKEN_VAR = "AWS_BEARER_TOKEN_BEDROCK"
SERVICE = "bedrock"
_REGION_VARS = ("AWS_REGION", "AWS_DEFAULT_REGION")
_REGION_LABEL = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d+")
_EXTRA = "pip install 'agentcore[bedrock]'"
_NO_CREDENTIALS = (
    "no credentials for provider 'amazon-bedrock': set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API "
    "key), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile of "
    "~/.aws/config, e.g. after `aws sso login`), or pass api_key")
_SIGNER_HEADERS = frozenset({"authorization", "x-amz-date", "x-amz-security-token"})


@attrs.frozen
class Access:
    """How one stream's requests reach Bedrock: where to, and with which credentials.

    Attributes:
        url: The `converse-stream` URL of the model.
        region: The region requests are signed for ("" when nothing needs one: a bearer
            token sent to a host of no region).
        key: What the wire API knows as its key: the bearer token, or the access key id of
            the AWS credentials (redacted from error text, and the rate-limit key).
        token: The Bedrock API key, sent as a bearer; None when requests are signed.
        credentials: botocore's credentials for SigV4; None with a bearer token.
    """

    url: str
    region: str
    key: str = attrs.field(repr=False)
    token: str | None = attrs.field(default=None, repr=False)
    credentials: Any = attrs.field(default=None, repr=False)

    def headers(self, model: Model, key: str) -> dict[str, str]:
        """Bedrock's headers: the event-stream reply, and the bearer token if there is one."""
        headers = {"Accept": "application/vnd.amazon.eventstream"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def sign(self, outgoing: Outgoing) -> Outgoing:
        """`outgoing` signed with SigV4 now (a retry is signed anew); as is with a bearer."""
        if self.credentials is None:
            return outgoing
        return sigv4(outgoing, self.credentials.get_frozen_credentials(), self.region)


def access(model: Model, options: StreamOptions) -> Access:
    """Find the credentials and the region for `model`; raise if either is missing.

    Raises:
        MissingApiKeyError: No API key and no AWS credentials; the message names what to set.
        ImportError: No API key, and botocore (needed for AWS credentials) is not installed.
        ValueError: No region could be found; the message names `AWS_REGION`.
    """
    token = options.api_key or _env(TOKEN_VAR)
    credentials: Any = None
    profile_region = None
    if not token:
        credentials, profile_region = _chain()
        if credentials is None:
            raise MissingApiKeyError(_NO_CREDENTIALS)
    needed = not token or "{region}" in model.base_url
    region = region_of(model.base_url, profile_region, needed)
    base = model.base_url.replace("{region}", region).rstrip("/")
    url = f"{base}/model/{quote(model.id, safe='')}/converse-stream"
    if token:
        return Access(url, region, token, token=token)
    key: str = credentials.get_frozen_credentials().access_key
    return Access(url, region, key, credentials=credentials)


def require_credentials() -> str:
    """The access key id of the AWS credentials the chain finds (`require_api_key`'s answer).

    For the providers' key check before a run (a bearer token was looked for already).

    Raises:
        MissingApiKeyError: The chain finds no credentials.
        ImportError: botocore is not installed.
    """
    credentials, _ = _chain()
    if credentials is None:
        raise MissingApiKeyError(_NO_CREDENTIALS)
    key: str = credentials.get_frozen_credentials().access_key
    return key


def region_of(base_url: str, profile_region: str | None = None, needed: bool = True) -> str:
    """The region to sign for: from the base URL's host, else the environment, else the profile.

    Raises `ValueError` naming `AWS_REGION` when there is none but one is `needed` (else "").
    """
    host = urlsplit(base_url.replace("{region}", "x")).hostname or ""
    for label in host.split("."):
        if _REGION_LABEL.fullmatch(label):
            return label
    for name in _REGION_VARS:
        value = _env(name)
        if value:
            return value.strip()
    if profile_region or not needed:
        return profile_region or ""
    raise ValueError(
        "no AWS region for provider 'amazon-bedrock': set AWS_REGION (or AWS_DEFAULT_REGION), "
        "or give the model a regional base_url such as "
        "'https://bedrock-runtime.us-east-1.amazonaws.com'")


def _env(name: str) -> str | None:
    value = os.environ.get(name, "")
    return value if value.strip() else None


def _chain() -> tuple[Any, str | None]:
    """The chain's credentials (None when it finds none) and the profile's region.

    Resolved once per AWS environment; a miss is not remembered (the user may log in).
    """
    environment = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
    found = _resolve(environment)
    if found[0] is None:
        _resolve.cache_clear()
    return found


def forget_credentials() -> None:
    """Drop the credentials resolved so far: the next request runs the chain afresh."""
    _resolve.cache_clear()


@functools.lru_cache(maxsize=8)
def _resolve(environment: tuple[tuple[str, str], ...]) -> tuple[Any, str | None]:
    """Run botocore's credential chain (`environment` is the cache key: the `AWS_*` variables)."""
    try:
        import botocore.session
    except ImportError as exc:
        raise ImportError(
            f"AWS credentials for Bedrock need botocore: {_EXTRA}, or set {TOKEN_VAR} to a "
            "Bedrock API key") from exc
    session = botocore.session.Session()
    region = session.get_config_variable("region")
    return session.get_credentials(), region if isinstance(region, str) and region else None


def sigv4(outgoing: Outgoing, credentials: Any, region: str,
          now: datetime | None = None) -> Outgoing:
    """`outgoing` signed with SigV4 for the service `bedrock` in `region`.

    X-Amz-Date, the session token if any, and an Authorization that signs every header given
    (the transport's own, such as User-Agent, are not) and the exact body bytes. `credentials`
    are frozen botocore credentials (`access_key`, `secret_key`, `token`).
    """
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    headers = {name: value for name, value in outgoing.headers.items()
               if name.lower() not in _SIGNER_HEADERS}
    headers["X-Amz-Date"] = stamp
    if credentials.token:
        headers["X-Amz-Security-Token"] = credentials.token
    request = AWSRequest(method="POST", url=outgoing.url, headers=headers, data=outgoing.body)
    request.context["timestamp"] = stamp
    auth = SigV4Auth(credentials, SERVICE, region)
    string_to_sign = auth.string_to_sign(request, auth.canonical_request(request))
    signed = auth.signed_headers(auth.headers_to_sign(request))
    headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={auth.scope(request)}, SignedHeaders={signed}, "
        f"Signature={auth.signature(string_to_sign, request)}")
    return Outgoing(outgoing.url, headers, outgoing.body)
