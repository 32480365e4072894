"""An independent check of AWS Signature Version 4, written from the spec with hashlib and hmac.

`check_sigv4(request, secret_key)` recomputes the signature of a request the test server
recorded (its raw path, its headers, its exact body bytes) and returns the problems found: an
empty list means the `Authorization` header is the valid signature of what arrived.
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html
"""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime, timedelta, timezone
from urllib.parse import quote, urlsplit

from sse_server import RecordedRequest

__all__ = ["check_sigv4", "credential_of"]

_AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=(?P<credential>[^,]+), "
                   r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def credential_of(request: RecordedRequest) -> tuple[str, str, str, str]:
    """(access key id, date, region, service) of the request's `Credential=` scope."""
    match = _AUTH.fullmatch(request.header("Authorization") or "")
    assert match is not None, "no SigV4 Authorization header"
    key, date, region, service, terminator = match["credential"].split("/")
    assert terminator == "aws4_request"
    return key, date, region, service


def check_sigv4(request: RecordedRequest, secret_key: str) -> list[str]:
    """What is wrong with the request's SigV4 signature (nothing: an empty list)."""
    match = _AUTH.fullmatch(request.header("Authorization") or "")
    if match is None:
        return [f"not a SigV4 Authorization header: {request.header('Authorization')!r}"]
    problems: list[str] = []
    _, date, region, service = credential_of(request)
    stamp = request.header("X-Amz-Date") or ""
    if not stamp.startswith(date):
        problems.append(f"X-Amz-Date {stamp!r} is not of the scope's date {date!r}")
    when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    if abs(datetime.now(timezone.utc) - when) > timedelta(minutes=5):
        problems.append(f"X-Amz-Date {stamp!r} is not now")
    signed = match["signed"].split(";")
    if signed != sorted(signed) or "host" not in signed:
        problems.append(f"signed headers {signed!r} are not sorted or leave out host")
    lowered = {name.lower(): value for name, value in request.headers.items()}
    missing = [name for name in signed if name not in lowered]
    if missing:
        return [*problems, f"signed headers not sent: {missing!r}"]
    parts = urlsplit(request.path)
    # A service other than S3 signs each path segment URI-encoded twice: the path arrived
    # encoded once, so it is encoded once more.
    canonical_uri = quote(parts.path or "/", safe="/~")
    query = "&".join(sorted(parts.query.split("&"))) if parts.query else ""
    headers = "".join(f"{name}:{' '.join(lowered[name].split())}\n" for name in signed)
    canonical = "\n".join([request.method, canonical_uri, query, headers, ";".join(signed),
                           hashlib.sha256(request.body).hexdigest()])
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope,
                         hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    key = _hmac(("AWS4" + secret_key).encode("utf-8"), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, match["signature"]):
        problems.append("the signature does not match the request as it arrived")
    return problems
