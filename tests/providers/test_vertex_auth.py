"""Google Vertex AI (`google-vertex`) against scripted servers.

Vertex speaks Gemini's wire: every Gemini fixture replayed through Vertex gives the reply it
gives through `google-generative-ai`, from the same request body. Application Default
Credentials are real google-auth ones: a service-account key file (made per run) whose
`token_uri` is a second local server, the token endpoint, which counts the refreshes. The GCE
metadata server is never asked (google-auth's own switch), nor gcloud's configuration. Vertex's
own requests go to `mock_server` (no socket), but for one over real HTTP (`sse_server`); the
token endpoint is always a real server, asked by google-auth's own HTTP client.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import paths
import pytest
from _internals import _gcp
from mock_server import MockServer, ScriptedServer
from sse_server import SSEServer

import agentcore as ac
from agentcore import Context, MissingApiKeyError, Model, StreamOptions, UserMessage
from agentcore.providers import require_api_key
from agentcore.providers.vertex import stream_vertex

GOOGLE = paths.FIXTURES / "google"
WAIT_S = 5.0
KEY = "AIza-express-key-0123456789"
PROJECT = "proj-adc"
CONTEXT = Context("You are terse.", [UserMessage("hi")])
OPTIONS = StreamOptions(timeout=WAIT_S)
PATH = "/v1/projects/{}/locations/{}/publishers/google/models/gemini-2.5-flash" \
       ":streamGenerateContent?alt=sse"
EXPRESS_PATH = "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
GCP_VARS = ["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_CLOUD_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG"]


def vertex(url: str, model_id: str = "gemini-2.5-flash") -> Model:
    """The catalogue's Vertex model, pointed at a local server."""
    return attrs.evolve(ac.get_model("google-vertex", model_id), base_url=f"{url}/v1")


def text_reply() -> bytes:
    return (GOOGLE / "text.sse").read_bytes()


@functools.cache
def private_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


@attrs.define
class Adc:
    """A service-account key file for ADC, and its token endpoint (a local server)."""

    endpoint: SSEServer
    path: Path

    def write(self, project_id: str | None = PROJECT) -> None:
        info = {"type": "service_account", "private_key_id": "k1",
                "private_key": private_key_pem(), "client_id": "1",
                "client_email": f"agent@{PROJECT}.iam.gserviceaccount.com",
                "token_uri": f"{self.endpoint.url}/token"}
        if project_id is not None:
            info["project_id"] = project_id
        self.path.write_text(json.dumps(info), encoding="utf-8")

    def grant(self, token: str, expires_in: int = 3600) -> None:
        """Queue the token endpoint's next answer."""
        self.endpoint.status(200, json.dumps({"access_token": token, "expires_in": expires_in,
                                              "token_type": "Bearer"}))

    @property
    def refreshes(self) -> int:
        return len(self.endpoint.requests)


@pytest.fixture
def gcp_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    """No Google Cloud settings, no gcloud configuration, no metadata server; no ADC cached."""
    from google.auth.compute_engine import _metadata

    for name in GCP_VARS:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "gcloud").mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)  # read once, at import
    _gcp.forget()
    yield monkeypatch
    _gcp.forget()


@pytest.fixture
def adc(gcp_env: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Adc]:
    endpoint = SSEServer()
    try:
        found = Adc(endpoint, tmp_path / "adc.json")
        found.write()
        gcp_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(found.path))
        yield found
    finally:
        endpoint.close()


def paths_and_auth(server: ScriptedServer) -> list[tuple[str, str | None, str | None]]:
    return [(r.path, r.header("Authorization"), r.header("x-goog-api-key"))
            for r in server.requests]


# --- Application Default Credentials ----------------------------------------------------------


def test_vertex_adc_posts_gemini_body_to_the_project_and_location(
    sse_server: SSEServer, adc: Adc
) -> None:
    adc.grant("ya29.first")
    sse_server.sse(text_reply())
    reply = ac.complete(vertex(sse_server.url), CONTEXT, OPTIONS)
    assert (reply.stop_reason, reply.text, reply.error_message) == ("stop", "Hello test successful",
                                                                    None)
    assert (reply.api, reply.provider) == ("google-vertex", "google-vertex")
    assert paths_and_auth(sse_server) == [(PATH.format(PROJECT, "global"), "Bearer ya29.first",
                                           None)]
    token_request = adc.endpoint.requests[0]
    assert (token_request.path, token_request.header("Content-Type")) == (
        "/token", "application/x-www-form-urlencoded")
    assert b"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer" in token_request.body



@pytest.mark.parametrize(("env", "project", "location"), [
    ({"GOOGLE_CLOUD_PROJECT": "env-proj"}, "env-proj", "global"),
    ({"GCLOUD_PROJECT": "legacy-proj"}, "legacy-proj", "global"),
    ({"GOOGLE_CLOUD_PROJECT": "env-proj", "GCLOUD_PROJECT": "legacy"}, "env-proj", "global"),
    ({"GOOGLE_CLOUD_LOCATION": "europe-west4"}, PROJECT, "europe-west4"),
])
def test_vertex_project_and_location_come_from_the_environment_else_adc(
    mock_server: MockServer, gcp_env: pytest.MonkeyPatch, adc: Adc, env: dict[str, str],
    project: str, location: str,
) -> None:
    for name, value in env.items():
        gcp_env.setenv(name, value)
    adc.grant("ya29.t")
    mock_server.sse(text_reply())
    reply = ac.complete(vertex(mock_server.url), CONTEXT, OPTIONS)
    assert reply.error_message is None
    assert mock_server.requests[0].path == PATH.format(project, location)


def test_vertex_adc_token_is_refreshed_once_while_valid_even_from_many_threads(
    mock_server: MockServer, adc: Adc
) -> None:
    adc.grant("ya29.only")  # a second refresh would get the endpoint's 418 and fail a stream
    runs = 6
    for _ in range(runs):
        mock_server.sse(text_reply())
    together = threading.Barrier(runs, timeout=WAIT_S)
    replies: list[ac.AssistantMessage] = []

    def one() -> None:
        together.wait()
        replies.append(ac.complete(vertex(mock_server.url), CONTEXT, OPTIONS))

    threads = [threading.Thread(target=one) for _ in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert [r.error_message for r in replies] == [None] * runs
    assert adc.refreshes == 1
    assert {r.header("Authorization") for r in mock_server.requests} == {"Bearer ya29.only"}
    mock_server.sse(text_reply())
    assert ac.complete(vertex(mock_server.url), CONTEXT, OPTIONS).error_message is None
    assert adc.refreshes == 1  # later streams too


def test_vertex_adc_token_about_to_expire_is_refreshed_before_the_request(
    mock_server: MockServer, adc: Adc
) -> None:
    # 200 s left is inside google-auth's refresh margin (3 min 45 s): stale, though not expired
    adc.grant("ya29.short", expires_in=200)
    adc.grant("ya29.long", expires_in=3600)
    for _ in range(3):
        mock_server.sse(text_reply())
    replies = [ac.complete(vertex(mock_server.url), CONTEXT, OPTIONS) for _ in range(3)]
    assert [r.error_message for r in replies] == [None] * 3
    assert [r.header("Authorization") for r in mock_server.requests] == [
        "Bearer ya29.short", "Bearer ya29.long", "Bearer ya29.long"]
    assert adc.refreshes == 2


def test_vertex_adc_token_refresh_failure_is_an_error_reply_before_any_request(
    mock_server: MockServer, adc: Adc
) -> None:
    adc.endpoint.status(400, json.dumps({"error": "invalid_grant",
                                         "error_description": "Invalid JWT Signature."}))
    reply = ac.complete(vertex(mock_server.url), CONTEXT, OPTIONS)
    assert reply.stop_reason == "error"
    assert reply.error_message is not None
    assert reply.error_message.startswith(
        "google-vertex: could not refresh the access token of the Application Default "
        "Credentials: ('invalid_grant: Invalid JWT Signature.'")
    assert mock_server.requests == []


def test_vertex_adc_without_a_project_names_what_to_set(
    mock_server: MockServer, adc: Adc
) -> None:
    adc.write(project_id=None)
    model = vertex(mock_server.url)
    message = ("no Google Cloud project for provider 'google-vertex': set GOOGLE_CLOUD_PROJECT "
               "(or GCLOUD_PROJECT), or use express mode with an API key: set "
               "GOOGLE_CLOUD_API_KEY or pass api_key")
    with pytest.raises(MissingApiKeyError) as raised:
        ac.stream(model, CONTEXT, OPTIONS)
    assert str(raised.value) == message
    with pytest.raises(MissingApiKeyError):
        ac.Agent(model).prompt("hi")
    assert (adc.refreshes, mock_server.requests) == (0, [])  # checked before any token


def test_vertex_without_any_credentials_names_what_to_set(
    mock_server: MockServer, gcp_env: pytest.MonkeyPatch
) -> None:
    with pytest.raises(MissingApiKeyError) as raised:
        ac.stream(vertex(mock_server.url), CONTEXT, OPTIONS)
    message = str(raised.value)
    assert message.startswith(
        "no credentials for provider 'google-vertex': set up Application Default Credentials "
        "(`gcloud auth application-default login`, or GOOGLE_APPLICATION_CREDENTIALS naming a "
        "key file), or use express mode with an API key: set GOOGLE_CLOUD_API_KEY or pass "
        "api_key (google-auth: ")
    with pytest.raises(MissingApiKeyError, match="GOOGLE_APPLICATION_CREDENTIALS"):
        require_api_key("google-vertex")
    assert mock_server.requests == []


def test_vertex_adc_from_a_missing_key_file_says_so(
    gcp_env: pytest.MonkeyPatch, tmp_path: Path, mock_server: MockServer
) -> None:
    gcp_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "nowhere.json"))
    with pytest.raises(MissingApiKeyError, match=r"google-auth: File .*nowhere\.json was not "
                                                 r"found"):
        ac.stream(vertex(mock_server.url), CONTEXT, OPTIONS)


def test_vertex_adc_without_google_auth_names_the_extra_and_express_mode_still_works(
    mock_server: MockServer, gcp_env: pytest.MonkeyPatch
) -> None:
    gcp_env.setitem(sys.modules, "google.auth", None)  # `import google.auth` fails
    gcp_env.setenv("GOOGLE_CLOUD_PROJECT", "p")
    model = vertex(mock_server.url)
    extra = (r"^Application Default Credentials for Vertex AI need google-auth: pip install "
             r"'agentcore\[vertex\]'; or use express mode with an API key: set "
             r"GOOGLE_CLOUD_API_KEY or pass api_key$")
    with pytest.raises(ImportError, match=extra):
        stream_vertex(model, CONTEXT, OPTIONS)
    with pytest.raises(ImportError, match=extra):
        require_api_key("google-vertex")
    failed = ac.complete(model, CONTEXT, OPTIONS)  # the registry makes it an error reply
    assert "pip install 'agentcore[vertex]'" in (failed.error_message or "")
    mock_server.sse(text_reply())
    reply = ac.complete(model, CONTEXT, attrs.evolve(OPTIONS, api_key=KEY))
    assert (reply.text, paths_and_auth(mock_server)) == (
        "Hello test successful", [(EXPRESS_PATH, None, KEY)])


@pytest.mark.parametrize("location", ["us-central1/../x", "US-CENTRAL1", "europe west4"])
def test_vertex_a_location_that_is_no_name_is_refused(
    mock_server: MockServer, adc: Adc, gcp_env: pytest.MonkeyPatch, location: str
) -> None:
    gcp_env.setenv("GOOGLE_CLOUD_LOCATION", location)
    reply = ac.complete(vertex(mock_server.url), CONTEXT, OPTIONS)
    assert reply.error_message == (
        "GOOGLE_CLOUD_LOCATION must be a Google Cloud location such as 'global' or "
        f"'us-central1', got {location!r}")
    assert (adc.refreshes, mock_server.requests) == (0, [])


def test_vertex_agent_runs_on_adc_alone(mock_server: MockServer, adc: Adc) -> None:
    adc.grant("ya29.agent")
    mock_server.sse(text_reply())
    assert require_api_key("google-vertex") == "<authenticated>"  # the agent's check, no token
    assert adc.refreshes == 0
    with ac.Agent(vertex(mock_server.url)) as agent:
        run = agent.prompt("hi")
        run.raise_for_error()
    assert run.text == "Hello test successful"
    assert paths_and_auth(mock_server) == [(PATH.format(PROJECT, "global"), "Bearer ya29.agent",
                                            None)]


# --- express mode -----------------------------------------------------------------------------


@pytest.mark.parametrize(("env", "api_key", "express"), [
    ({}, KEY, True),
    ({"GOOGLE_CLOUD_API_KEY": KEY}, None, True),
    ({"GOOGLE_CLOUD_PROJECT": PROJECT}, KEY, True),  # an explicit key wins
    ({"GOOGLE_CLOUD_API_KEY": KEY, "GOOGLE_CLOUD_PROJECT": PROJECT}, None, False),
    ({"GOOGLE_CLOUD_API_KEY": KEY, "GOOGLE_CLOUD_LOCATION": "global"}, None, False),
])
def test_vertex_express_mode_or_adc_as_google_genai_decides(
    mock_server: MockServer, gcp_env: pytest.MonkeyPatch, adc: Adc, env: dict[str, str],
    api_key: str | None, express: bool,
) -> None:
    for name, value in env.items():
        gcp_env.setenv(name, value)
    adc.grant("ya29.adc")
    mock_server.sse(text_reply())
    reply = ac.complete(vertex(mock_server.url), CONTEXT, attrs.evolve(OPTIONS, api_key=api_key))
    assert reply.error_message is None
    if express:
        assert paths_and_auth(mock_server) == [(EXPRESS_PATH, None, KEY)]
        assert adc.refreshes == 0  # express mode asks nothing of google-auth
    else:
        assert paths_and_auth(mock_server) == [(PATH.format(PROJECT, "global"),
                                                "Bearer ya29.adc", None)]


# --- errors and secrets --------------------------------------------------------------------------


def everything_said(stream: ac.AssistantMessageEventStream, caplog: pytest.LogCaptureFixture,
                    *more: Any) -> str:
    """Every event and the reply, as JSON and repr, the log, and `more` as repr."""
    events = list(stream)
    reply = stream.result(WAIT_S)
    texts = [ac.to_json(e) for e in events] + [repr(e) for e in events]
    texts += [ac.to_json(reply), repr(reply), caplog.text, *map(repr, more)]
    texts += [repr(r.args) for r in caplog.records]
    return "\n".join(texts)


def test_vertex_adc_401_is_readable_and_never_shows_the_token(
    mock_server: MockServer, adc: Adc, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = "ya29.a0AfB_secret-access-token-0123456789"
    adc.grant(token)
    mock_server.status(401, json.dumps({"error": {
        "code": 401, "status": "UNAUTHENTICATED",
        "message": f"Request had invalid authentication credentials: Bearer {token}"}}))
    stream = ac.stream(vertex(mock_server.url), CONTEXT, OPTIONS)
    said = everything_said(stream, caplog, OPTIONS, list(_gcp._loaded.values()))
    assert stream.result().error_message == (
        "401 UNAUTHENTICATED: Request had invalid authentication credentials: Bearer *** "
        "(check the Application Default Credentials: `gcloud auth application-default login`, "
        "or GOOGLE_APPLICATION_CREDENTIALS naming a key file)")
    assert mock_server.requests[0].header("Authorization") == f"Bearer {token}"
    assert token not in said
    assert token[8:-8] not in said


def test_vertex_express_403_is_readable_and_never_shows_the_key(
    mock_server: MockServer, gcp_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gcp_env.setenv("GOOGLE_CLOUD_API_KEY", KEY)
    mock_server.status(403, json.dumps([{"error": {
        "code": 403, "status": "PERMISSION_DENIED",
        "message": f"API key {KEY} is not authorized for aiplatform.googleapis.com"}}]))
    stream = ac.stream(vertex(mock_server.url), CONTEXT, OPTIONS)
    said = everything_said(stream, caplog)
    assert stream.result().error_message == (
        "403 PERMISSION_DENIED: API key *** is not authorized for aiplatform.googleapis.com "
        "(check that the API key may use the Vertex AI API in express mode)")
    assert KEY not in said


def test_vertex_adc_403_says_which_role_is_needed(mock_server: MockServer, adc: Adc) -> None:
    adc.grant("ya29.t")
    mock_server.status(403, json.dumps({"error": {
        "code": 403, "status": "PERMISSION_DENIED",
        "message": "Permission 'aiplatform.endpoints.predict' denied on resource"}}))
    reply = ac.complete(vertex(mock_server.url), CONTEXT, OPTIONS)
    assert reply.error_message == (
        "403 PERMISSION_DENIED: Permission 'aiplatform.endpoints.predict' denied on resource "
        "(the account needs the Vertex AI User role (roles/aiplatform.user) on the project, "
        "and the project the Vertex AI API enabled)")


def test_vertex_error_with_an_empty_message_says_what_it_holds(mock_server: MockServer,
                                                              adc: Adc) -> None:
    adc.grant("ya29.t")
    mock_server.status(500, json.dumps({"error": {"code": 500, "status": "INTERNAL",
                                                  "message": ""}}))
    reply = ac.complete(vertex(mock_server.url), CONTEXT, attrs.evolve(OPTIONS, max_retries=0))
    assert reply.error_message == (
        '500 INTERNAL: {"code":500,"status":"INTERNAL","message":""}')


def test_vertex_access_repr_has_no_credential() -> None:
    found = _gcp.Access("ya29.secret-0123456789", "p", "global", "quota-p")
    assert "secret" not in repr(found)
    assert found.headers() == {"Authorization": "Bearer ya29.secret-0123456789",
                               "x-goog-user-project": "quota-p"}
    assert _gcp.Access("AIza-k").headers() == {"x-goog-api-key": "AIza-k"}
