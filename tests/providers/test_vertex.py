"""Google Vertex AI (`google-vertex`): Gemini's wire at Vertex's URLs, and its catalogue rows.

Vertex speaks Gemini's wire (the body, the events): every Gemini fixture replayed through Vertex
gives the events and the reply it gives through `google-generative-ai`, from the same request
body, whole and one byte at a time. These streams use express mode (an API key); credentials,
projects and locations are `test_vertex_auth.py`'s. Translation is tested on `mock_server` (no
socket); one reply goes over real HTTP (`sse_server`).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import paths
import pytest
from _internals import _gcp
from mock_server import MockServer, ScriptedServer
from sse_server import SSEServer

import agentcore as ac
from agentcore import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentcore.providers.vertex import endpoint_host, url_for

GOOGLE = paths.FIXTURES / "google"
SSE_FIXTURES = sorted(p.name for p in GOOGLE.glob("*.sse"))
WAIT_S = 5.0
KEY = "AIza-express-key-0123456789"
OPTIONS = StreamOptions(api_key=KEY, reasoning="medium", timeout=WAIT_S)
WEATHER = Tool("get_weather", "The weather in a city.",
               {"type": "object", "properties": {"city": {"type": "string"}}})
SIG = "CiQB0e2Kb7xSDmZ4U0k2YzR3cWpCa1p6N0x6dGtHbXRNbmRqVGc="  # valid base64, as Gemini's
EXPRESS_PATH = "/v1/publishers/google/models/{}:streamGenerateContent?alt=sse"


def on(url: str, provider: str, model_id: str = "gemini-2.5-flash") -> Model:
    """The catalogue's model of `provider` (google or google-vertex), at a local server."""
    model = ac.get_model(provider, model_id)
    return attrs.evolve(model, base_url=url + ("/v1" if provider == "google-vertex" else "/v1beta"))


def replay(server: ScriptedServer, model: Model, body: bytes, chunking: Any = "whole",
           context: Context | None = None) -> tuple[list[Any], AssistantMessage]:
    server.sse(body, chunking)
    stream = ac.stream(model, context or Context("Be brief.", [UserMessage("hi")]), OPTIONS)
    return list(stream), stream.result(WAIT_S)


def comparable(events: list[Any], reply: AssistantMessage) -> tuple[list[Any], AssistantMessage]:
    """Events as (type, index, delta) and the reply without what differs between providers
    (api, provider, timestamp) or between runs (the tool-call ids Gemini leaves to us)."""
    content = [attrs.evolve(b, id="") if isinstance(b, ToolCall) else b for b in reply.content]
    shape = [(e.type, getattr(e, "content_index", None), getattr(e, "delta", None))
             for e in events]
    return shape, attrs.evolve(reply, api="", provider="", timestamp=0, content=content)


@pytest.mark.parametrize("name", SSE_FIXTURES)
def test_vertex_replays_every_gemini_fixture_as_gemini_does(mock_server: MockServer,
                                                            name: str) -> None:
    body = (GOOGLE / name).read_bytes()
    model_id = "gemini-3-pro-preview" if "gemini3" in name else "gemini-2.5-flash"
    google = replay(mock_server, on(mock_server.url, "google", model_id), body)
    whole = replay(mock_server, on(mock_server.url, "google-vertex", model_id), body)
    bytewise = replay(mock_server, on(mock_server.url, "google-vertex", model_id), body, "bytewise")
    assert comparable(*whole) == comparable(*google)
    assert comparable(*bytewise) == comparable(*google)
    assert (whole[1].api, whole[1].provider) == ("google-vertex", "google-vertex")
    google_request, *vertex_requests = mock_server.requests
    assert [r.path for r in vertex_requests] == [EXPRESS_PATH.format(model_id)] * 2
    assert all(r.json == google_request.json for r in vertex_requests)


def test_vertex_sends_gemini_s_body_and_replays_its_own_signatures(
    mock_server: MockServer,
) -> None:
    call = ToolCall("call_1", "get_weather", {"city": "Paris"}, thought_signature=SIG)
    earlier = AssistantMessage([ThinkingContent("Checking.", SIG), TextContent("Let me look."),
                                call], api="google-vertex", provider="google-vertex",
                               model="gemini-2.5-flash")
    context = Context("Be brief.", [
        UserMessage([TextContent("Weather?"), ImageContent("iVBORw0KGgo=", "image/png")]),
        earlier, ToolResultMessage("call_1", "get_weather", [TextContent("21C")]),
    ], tools=[WEATHER])
    reply = (GOOGLE / "text.sse").read_bytes()
    replay(mock_server, on(mock_server.url, "google-vertex"), reply, context=context)
    vertex_body = mock_server.requests[0].json
    assert vertex_body["contents"][1] == {"role": "model", "parts": [
        {"thought": True, "text": "Checking.", "thoughtSignature": SIG},
        {"text": "Let me look."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
         "thoughtSignature": SIG}]}
    # the same conversation, had it been Gemini's own, gets the same body from Gemini
    own = attrs.evolve(earlier, api="google-generative-ai", provider="google")
    messages = [context.messages[0], own, context.messages[2]]
    replay(mock_server, on(mock_server.url, "google"), reply,
           context=attrs.evolve(context, messages=messages))
    assert mock_server.requests[1].json == vertex_body


def test_vertex_reads_vertex_s_own_fields_in_its_events(sse_server: SSEServer) -> None:
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}],
         "usageMetadata": {"trafficType": "ON_DEMAND"}, "modelVersion": "gemini-2.5-flash",
         "createTime": "2026-12-02T10:00:00.123456Z", "responseId": "vx-1"},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": " there"}]},
                         "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2,
                           "thoughtsTokenCount": 3, "totalTokenCount": 10,
                           "trafficType": "ON_DEMAND"},
         "modelVersion": "gemini-2.5-flash", "createTime": "2026-12-02T10:00:00.123456Z",
         "responseId": "vx-1"},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)
    _, reply = replay(sse_server, on(sse_server.url, "google-vertex"), body)
    assert (reply.text, reply.response_id, reply.stop_reason) == ("Hi there", "vx-1", "stop")
    assert (reply.usage.input, reply.usage.output, reply.usage.total_tokens) == (5, 5, 10)


# --- the URL ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("base_url", "access", "url"), [
    ("https://aiplatform.googleapis.com/v1", _gcp.Access("t", "p", "global"),
     "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google/models/"
     "m:streamGenerateContent?alt=sse"),
    ("https://aiplatform.googleapis.com/v1", _gcp.Access("t", "p", "us-central1"),
     "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/"
     "publishers/google/models/m:streamGenerateContent?alt=sse"),
    ("https://aiplatform.googleapis.com/v1beta1/", _gcp.Access("t", "p", "eu"),
     "https://aiplatform.eu.rep.googleapis.com/v1beta1/projects/p/locations/eu/publishers/"
     "google/models/m:streamGenerateContent?alt=sse"),
    ("https://aiplatform.googleapis.com/v1", _gcp.Access("k"),
     "https://aiplatform.googleapis.com/v1/publishers/google/models/m:streamGenerateContent"
     "?alt=sse"),
    ("https://vertex-proxy.example.com/v1/", _gcp.Access("t", "example.com:p", "asia-east1"),
     "https://vertex-proxy.example.com/v1/projects/example.com:p/locations/asia-east1/"
     "publishers/google/models/m:streamGenerateContent?alt=sse"),
    ("https://us-central1-aiplatform.googleapis.com/v1", _gcp.Access("t", "p", "global"),
     "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/"
     "google/models/m:streamGenerateContent?alt=sse"),
])
def test_vertex_url_follows_the_location_on_google_s_global_host_only(
    base_url: str, access: _gcp.Access, url: str
) -> None:
    model = Model("m", "m", "google-vertex", "google-vertex", base_url)
    assert url_for(model, access) == url


def test_vertex_endpoint_hosts() -> None:
    assert [endpoint_host(loc) for loc in (None, "global", "us", "eu", "me-west1")] == [
        "aiplatform.googleapis.com", "aiplatform.googleapis.com",
        "aiplatform.us.rep.googleapis.com", "aiplatform.eu.rep.googleapis.com",
        "me-west1-aiplatform.googleapis.com"]


# --- the catalogue ------------------------------------------------------------------------------


def test_vertex_catalogue_mirrors_the_gemini_rows() -> None:
    gemini = {m.id: m for m in ac.get_models("google")}
    rows = ac.get_models("google-vertex")
    assert [m.id for m in rows] == list(gemini)
    for model in rows:
        twin = gemini[model.id]
        assert (model.api, model.provider, model.base_url) == (
            "google-vertex", "google-vertex", "https://aiplatform.googleapis.com/v1")
        assert model.name == f"{twin.name} (Vertex)"
        assert (model.compat, model.reasoning, model.input, model.context_window,
                model.max_tokens) == (twin.compat, twin.reasoning, twin.input,
                                      twin.context_window, twin.max_tokens)
    assert ac.providers.env_var_for("google-vertex") == "GOOGLE_CLOUD_API_KEY"
