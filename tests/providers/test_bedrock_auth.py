"""Bedrock's credentials, region and SigV4 signing, checked by the server that receives them.

The server recomputes every signature from the request as it arrived (`sigv4`, written from
the spec, independent of botocore): over real HTTP (`sse_server`), where the transport adds the
signed `Host`; what needs no signature checked runs on `mock_server` (no socket). Secrets (the
secret key, the session token, a bearer token and the signatures) must never appear in errors,
events, reprs or log records.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from _internals import _aws
from bedrock_replies import (
    ACCESS_KEY,
    SECRET_KEY,
    SESSION_TOKEN,
    bedrock_model,
    reply,
    serve,
    text_block,
    throttled,
)
from mock_server import MockServer, ScriptedServer
from sigv4 import check_sigv4, credential_of
from sse_server import SSEServer

import agentcore as ac
from agentcore import MissingApiKeyError, StopReason
from agentcore.providers import require_api_key

WAIT_S = 5.0
CONTEXT = ac.Context(None, [ac.UserMessage("hi")])
BEARER = "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29tLz9BY3Rpb249VEVTVA=="
PNG = "UklGRhYAAABXRUJQVlA4TAoAAAAvAAAAAEX/I/of"
ARN = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"


def complete(model: ac.Model, **changes: Any) -> ac.AssistantMessage:
    return ac.complete(model, CONTEXT, ac.StreamOptions(**{"timeout": WAIT_S, **changes}))


def ok(server: ScriptedServer) -> None:
    serve(server, reply(text_block(0, "ok")))


# --- SigV4 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", [
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0", ARN, "amazon.nova-pro-v1:0"])
def test_bedrock_sigv4_signs_the_exact_body_and_encoded_model_id(
        sse_server: SSEServer, aws_env: pytest.MonkeyPatch, model_id: str) -> None:
    ok(sse_server)
    context = ac.Context("sys", [ac.UserMessage([ac.TextContent("héllo ✓ \u2028 \"quoted\""),
                                                 ac.ImageContent(PNG, "image/webp")])])
    result = ac.complete(bedrock_model(sse_server.url, model_id), context,
                         ac.StreamOptions(timeout=WAIT_S))
    assert result.text == "ok"
    request = sse_server.requests[0]
    encoded = model_id.replace(":", "%3A").replace("/", "%2F")
    assert request.path == f"/model/{encoded}/converse-stream"
    assert check_sigv4(request, SECRET_KEY) == []
    assert credential_of(request) == (ACCESS_KEY, request.header("X-Amz-Date")[:8],
                                      "us-east-1", "bedrock")
    assert request.header("X-Amz-Security-Token") == SESSION_TOKEN
    assert request.header("Accept") == "application/vnd.amazon.eventstream"
    assert request.json["messages"][0]["content"][:2] == [
        {"text": "héllo ✓ \u2028 \"quoted\""},
        {"image": {"format": "webp", "source": {"bytes": PNG}}}]


def test_bedrock_sigv4_covers_a_body_on_payload_replaced_and_extra_headers(
        sse_server: SSEServer, aws_env: pytest.MonkeyPatch) -> None:
    ok(sse_server)
    model = bedrock_model(sse_server.url, headers={"X-Team": "alpha"})
    result = complete(model, headers={"X-Trace": "t-1"},
                      on_payload=lambda body, m: {**body, "requestMetadata": {"k": "v"}})
    assert result.text == "ok"
    request = sse_server.requests[0]
    assert request.json["requestMetadata"] == {"k": "v"}
    assert "x-team;x-trace" in (request.header("Authorization") or "")
    assert check_sigv4(request, SECRET_KEY) == []


def test_bedrock_tampered_body_fails_the_check(sse_server: SSEServer,
                                               aws_env: pytest.MonkeyPatch) -> None:
    """The check itself: a body other than the one signed does not pass."""
    ok(sse_server)
    complete(bedrock_model(sse_server.url))
    request = sse_server.requests[0]
    tampered = dataclasses.replace(request, body=request.body + b" ")
    assert check_sigv4(tampered, SECRET_KEY) == [
        "the signature does not match the request as it arrived"]
    assert check_sigv4(request, SECRET_KEY + "x") != []


def test_bedrock_refreshable_credentials_are_read_for_every_attempt(
        sse_server: SSEServer, aws_env: pytest.MonkeyPatch, backoffs: list[int]) -> None:
    import botocore.credentials
    import botocore.session

    issued: list[str] = []

    def refresh() -> dict[str, str]:
        issued.append(f"ASIAREFRESHED{len(issued):04d}")
        expiry = datetime.now(timezone.utc) + timedelta(seconds=30)  # always due again
        return {"access_key": issued[-1], "secret_key": f"secret-{len(issued)}",
                "token": "refreshed-token", "expiry_time": expiry.isoformat()}

    credentials = botocore.credentials.RefreshableCredentials.create_from_metadata(
        refresh(), refresh, "test")
    aws_env.setattr(botocore.session.Session, "get_credentials", lambda self: credentials)
    serve(sse_server, throttled())
    ok(sse_server)
    assert complete(bedrock_model(sse_server.url)).text == "ok"
    keys = [credential_of(r)[0] for r in sse_server.requests]
    assert len(set(keys)) == 2
    assert all(k in issued for k in keys)
    for request, key in zip(sse_server.requests, keys, strict=True):
        assert check_sigv4(request, f"secret-{issued.index(key) + 1}") == []


# --- bearer tokens (Bedrock API keys) ------------------------------------------------------------


def test_bedrock_api_key_from_the_environment_is_a_bearer(
        mock_server: MockServer, aws_env: pytest.MonkeyPatch) -> None:
    aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER)
    ok(mock_server)
    assert complete(bedrock_model(mock_server.url)).text == "ok"
    request = mock_server.requests[0]
    assert request.header("Authorization") == f"Bearer {BEARER}"
    assert request.header("X-Amz-Date") is None
    assert request.header("X-Amz-Security-Token") is None


def test_bedrock_explicit_api_key_wins_over_aws_credentials(
        mock_server: MockServer, aws_env: pytest.MonkeyPatch) -> None:
    ok(mock_server)
    assert complete(bedrock_model(mock_server.url), api_key="explicit-key-0123").text == "ok"
    assert mock_server.requests[0].header("Authorization") == "Bearer explicit-key-0123"


def test_bedrock_api_key_needs_no_botocore(mock_server: MockServer,
                                           aws_env: pytest.MonkeyPatch) -> None:
    for name in ("botocore", "botocore.session", "botocore.auth", "botocore.awsrequest"):
        aws_env.setitem(sys.modules, name, None)  # any import of it now fails
    aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER)
    ok(mock_server)
    assert complete(bedrock_model(mock_server.url)).text == "ok"
    aws_env.delenv("AWS_BEARER_TOKEN_BEDROCK")
    needs = ("AWS credentials for Bedrock need botocore: pip install 'agentcore[bedrock]', or "
             "set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key")
    assert complete(bedrock_model(mock_server.url)).error_message == needs
    with pytest.raises(ImportError, match=re.escape(needs)):  # an Agent checks before its run
        require_api_key("amazon-bedrock")
    assert len(mock_server.requests) == 1


# --- missing credentials and regions -------------------------------------------------------------


def test_bedrock_without_credentials_names_what_to_set(aws_env: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        aws_env.delenv(name)
    model = bedrock_model("http://127.0.0.1:9")
    expected = re.escape(
        "no credentials for provider 'amazon-bedrock': set AWS_BEARER_TOKEN_BEDROCK (a Bedrock "
        "API key), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile "
        "of ~/.aws/config, e.g. after `aws sso login`), or pass api_key")
    with pytest.raises(MissingApiKeyError, match=expected):
        ac.stream(model, CONTEXT)
    with pytest.raises(MissingApiKeyError, match=expected):  # before the run starts
        ac.Agent(model).prompt("hi")
    with pytest.raises(MissingApiKeyError, match=expected):
        require_api_key("amazon-bedrock")


def test_bedrock_key_check_before_a_run_accepts_aws_credentials(
        aws_env: pytest.MonkeyPatch) -> None:
    assert require_api_key("amazon-bedrock") == ACCESS_KEY
    aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER)
    assert require_api_key("amazon-bedrock") == BEARER
    assert ac.get_env_api_key("amazon-bedrock") == BEARER


def test_bedrock_credentials_from_a_profile(sse_server: SSEServer, aws_env: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_REGION"):
        aws_env.delenv(name)
    (tmp_path / "aws-credentials").write_text(
        "[work]\naws_access_key_id = AKIAPROFILEKEY000001\n"
        "aws_secret_access_key = profile-secret-0001\n")
    (tmp_path / "aws-config").write_text("[profile work]\nregion = eu-west-3\n")
    aws_env.setenv("AWS_PROFILE", "work")
    ok(sse_server)
    assert complete(bedrock_model(sse_server.url)).text == "ok"
    request = sse_server.requests[0]
    assert credential_of(request)[::2] == ("AKIAPROFILEKEY000001", "eu-west-3")
    assert check_sigv4(request, "profile-secret-0001") == []


def test_bedrock_without_a_region_names_aws_region(aws_env: pytest.MonkeyPatch) -> None:
    aws_env.delenv("AWS_REGION")
    result = complete(ac.get_model("amazon-bedrock", "amazon.nova-pro-v1:0"))
    assert result.error_message == (
        "no AWS region for provider 'amazon-bedrock': set AWS_REGION (or AWS_DEFAULT_REGION), "
        "or give the model a regional base_url such as "
        "'https://bedrock-runtime.us-east-1.amazonaws.com'")


def test_bedrock_bearer_to_a_host_of_no_region_needs_no_region(
        mock_server: MockServer, aws_env: pytest.MonkeyPatch) -> None:
    """A Bedrock API key sent through a gateway: nothing is signed, no region is asked for."""
    aws_env.delenv("AWS_REGION")
    ok(mock_server)
    assert complete(bedrock_model(mock_server.url), api_key=BEARER).text == "ok"
    assert complete(bedrock_model(mock_server.url)).error_message.startswith(
        "no AWS region for provider 'amazon-bedrock'")  # SigV4 signs for a region


@pytest.mark.parametrize(("base_url", "env", "url", "region"), [
    ("https://bedrock-runtime.{region}.amazonaws.com", {"AWS_REGION": "eu-central-1"},
     "https://bedrock-runtime.eu-central-1.amazonaws.com", "eu-central-1"),
    ("https://bedrock-runtime.{region}.amazonaws.com", {"AWS_DEFAULT_REGION": "ap-south-1"},
     "https://bedrock-runtime.ap-south-1.amazonaws.com", "ap-south-1"),
    ("https://bedrock-runtime.us-west-2.amazonaws.com/", {"AWS_REGION": "eu-central-1"},
     "https://bedrock-runtime.us-west-2.amazonaws.com", "us-west-2"),
    ("https://vpce-0a1b2c3d-4e5f6a7b.bedrock-runtime.us-gov-west-1.vpce.amazonaws.com", {},
     "https://vpce-0a1b2c3d-4e5f6a7b.bedrock-runtime.us-gov-west-1.vpce.amazonaws.com",
     "us-gov-west-1"),
    ("https://bedrock-runtime-fips.ca-central-1.amazonaws.com", {},
     "https://bedrock-runtime-fips.ca-central-1.amazonaws.com", "ca-central-1"),
    ("https://llm-proxy.internal.example/bedrock", {"AWS_REGION": "eu-north-1"},
     "https://llm-proxy.internal.example/bedrock", "eu-north-1"),
])
def test_bedrock_region_and_endpoint(aws_env: pytest.MonkeyPatch, base_url: str,
                                     env: dict[str, str], url: str, region: str) -> None:
    aws_env.delenv("AWS_REGION")
    for name, value in env.items():
        aws_env.setenv(name, value)
    model = bedrock_model(base_url, "amazon.nova-lite-v1:0")
    found = _aws.access(model, ac.StreamOptions())
    assert (found.url, found.region) == (f"{url}/model/amazon.nova-lite-v1%3A0/converse-stream",
                                         region)


# --- secrets -------------------------------------------------------------------------------------


def test_bedrock_secrets_never_appear(sse_server: SSEServer, aws_env: pytest.MonkeyPatch,
                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    def echo(handler: Any) -> None:
        """A 403 that quotes everything it got, as a careless proxy might."""
        request = sse_server.requests[-1]
        authorization = request.header("Authorization") or ""
        signature = authorization.rpartition("Signature=")[2]
        body = json.dumps({"message": f"denied {authorization} sig {signature} token "
                                      f"{request.header('X-Amz-Security-Token')}"}).encode()
        handler.send_response(403)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("x-amzn-ErrorType", "InvalidSignatureException")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    sse_server.custom(echo)
    stream = ac.stream(bedrock_model(sse_server.url), CONTEXT, ac.StreamOptions(timeout=WAIT_S))
    events = list(stream)
    result = stream.result()
    assert result.stop_reason == StopReason.ERROR
    assert result.error_message.startswith("403 InvalidSignatureException: denied ")
    signature = (sse_server.requests[0].header("Authorization") or "").rpartition(
        "Signature=")[2]
    outputs = [ac.to_json(result), ac.to_json(events), repr(result), repr(stream),
               *(record.getMessage() for record in caplog.records)]
    for secret in (SECRET_KEY, SESSION_TOKEN, signature):
        assert not any(secret in text for text in outputs), secret


def test_bedrock_bearer_token_never_appears(mock_server: MockServer, aws_env: pytest.MonkeyPatch,
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER)
    mock_server.status(403, json.dumps({"message": f"Invalid API key {BEARER}"}),
                       {"x-amzn-ErrorType": "AccessDeniedException"})
    result = complete(bedrock_model(mock_server.url))
    assert result.error_message == "403 AccessDeniedException: Invalid API key ***"
    assert BEARER not in "".join(record.getMessage() for record in caplog.records)


def test_bedrock_rate_limit_pause_is_per_credential(
        mock_server: MockServer, aws_env: pytest.MonkeyPatch) -> None:
    """A 429 with a delay pauses the requests of those credentials, not another access key's."""
    mock_server.status(429, '{"message": "Too many requests"}',
                       {"x-amzn-ErrorType": "ThrottlingException", "Retry-After": "30"})
    model = bedrock_model(mock_server.url)
    first = complete(model, max_retry_delay_ms=1000)
    assert first.error_message.startswith("Server requested 30s retry delay (max: 1s).")
    again = complete(model, max_retry_delay_ms=1000)  # refused without asking the server
    assert again.error_message.startswith("Server requested 30s retry delay")
    assert len(mock_server.requests) == 1
    aws_env.setenv("AWS_ACCESS_KEY_ID", "AKIAOTHERKEY00000002")
    ok(mock_server)
    assert complete(model, max_retry_delay_ms=1000).text == "ok"
    assert credential_of(mock_server.requests[1])[0] == "AKIAOTHERKEY00000002"
