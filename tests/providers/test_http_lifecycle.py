"""The life of an HTTP request: abort in every phase, keep-alive, who owns the session.

Real sockets on 127.0.0.1 only: a listener whose accept queue is full (connects never finish),
the scripted `sse_server` (headers that never come, bodies that never end) and a small counting
server (how many TCP connections a series of replies opens and closes), from `http_phases`.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import paths
import pytest
import requests
from http_phases import (
    ABORT_BOUND_S,
    CONTEXT,
    KEY,
    WAIT_S,
    CountingServer,
    consume_with_abort,
    never_accepts,
    wait_until,
)
from sse_server import SSEServer

import agentcore as ac
from agentcore.providers import new_http_session

FIXTURES = paths.FIXTURES

# api, provider, base-URL suffix, a text reply fixture
APIS = {
    "openai-completions": ("openai", "/v1", "openai_completions/text.sse"),
    "openai-responses": ("openai", "/v1", "openai_responses/text.sse"),
    "anthropic-messages": ("anthropic", "", "anthropic/text.sse"),
    "google-generative-ai": ("google", "/v1beta", "google/text.sse"),
    "google-vertex": ("google-vertex", "/v1", "google/text.sse"),
}


def model_for(base_url: str, api: str = "openai-completions") -> ac.Model:
    provider, suffix, _ = APIS[api]
    return ac.Model("m-1", "M", api, provider, base_url + suffix)


@pytest.fixture
def counting_server() -> Iterator[Callable[[bytes], CountingServer]]:
    servers: list[CountingServer] = []

    def start(body: bytes) -> CountingServer:
        servers.append(CountingServer(body))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


# --- abort in every phase -----------------------------------------------------------------------


def assert_aborted(result: ac.AssistantMessage) -> None:
    assert result.stop_reason == ac.StopReason.ABORTED


@pytest.mark.parametrize("own_session", [False, True], ids=["per-call", "new_http_session"])
def test_lifecycle_abort_while_connecting_ends_at_once(own_session: bool) -> None:
    session = new_http_session() if own_session else None
    try:
        with never_accepts() as url:
            started = time.monotonic()
            result, latency = consume_with_abort(
                model_for(url), lambda: time.monotonic() - started > 0.2, http_session=session)
    finally:
        if session is not None:
            session.close()
    assert_aborted(result)
    assert latency < ABORT_BOUND_S
    # the connecting thread is woken too: no thread outlives the test (conftest checks)


@pytest.mark.parametrize("own_session", [False, True], ids=["per-call", "new_http_session"])
def test_lifecycle_abort_while_waiting_for_headers_closes_the_connection(
    sse_server: SSEServer, own_session: bool
) -> None:
    gone = sse_server.hang_headers(WAIT_S)
    session = new_http_session() if own_session else None
    try:
        result, latency = consume_with_abort(model_for(sse_server.url),
                                             lambda: bool(sse_server.requests),
                                             http_session=session)
    finally:
        if session is not None:
            session.close()
    assert_aborted(result)
    assert latency < ABORT_BOUND_S
    assert gone.seen.wait(WAIT_S), "the server never saw the connection close"


def test_lifecycle_abort_while_waiting_for_headers_with_a_plain_session(
    sse_server: SSEServer,
) -> None:
    """A session not made by agentcore: the abort still returns at once; the abandoned request
    ends at its own pace (here the server gives up after a second), on a daemon thread."""
    gone = sse_server.hang_headers(1.0)
    with requests.Session() as session:
        result, latency = consume_with_abort(model_for(sse_server.url),
                                             lambda: bool(sse_server.requests),
                                             http_session=session)
        assert_aborted(result)
        assert latency < ABORT_BOUND_S
        assert not gone.seen.is_set() or gone.at is not None


def test_lifecycle_new_http_session_opens_on_the_calling_thread(sse_server: SSEServer) -> None:
    """No thread per request: the wait for headers happens on the caller's thread, which the
    abort wakes by shutting the socket down."""
    sse_server.hang_headers(WAIT_S)
    seen: list[list[str]] = []

    def waiting() -> bool:
        if sse_server.requests:
            seen.append([t.name for t in threading.enumerate()])
            return True
        return False

    with new_http_session() as session:
        result, latency = consume_with_abort(model_for(sse_server.url), waiting,
                                             http_session=session)
    assert_aborted(result)
    assert latency < ABORT_BOUND_S
    assert seen
    assert not any(name.startswith("agentcore-http") for name in seen[0]), seen


def test_lifecycle_abort_while_resolving_a_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host name is looked up on a thread of its own, which the abort stops waiting for (a
    lookup cannot be interrupted: here it hangs until the test lets it go)."""
    release = threading.Event()
    real = socket.getaddrinfo

    def slow_dns(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "slow-dns.test":
            release.wait(WAIT_S)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow_dns)
    started = time.monotonic()
    try:
        result, latency = consume_with_abort(model_for("http://slow-dns.test:9"),
                                             lambda: time.monotonic() - started > 0.2)
    finally:
        release.set()
    assert_aborted(result)
    assert latency < ABORT_BOUND_S


def test_lifecycle_a_proxy_from_the_environment_is_used(
    counting_server: Callable[[bytes], CountingServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`HTTP_PROXY` is honoured (the request then goes through an `Opener` thread): the
    counting server plays the proxy for a host that does not exist."""
    proxy = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with new_http_session() as session:
        for _ in range(2):
            controller = ac.AbortController()
            reply = ac.complete(model_for("http://api.example.test"), CONTEXT, ac.StreamOptions(
                api_key=KEY, http_session=session, signal=controller.signal))
            assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert proxy.accepted >= 1


def test_lifecycle_a_proxy_set_later_is_used_once_the_settings_are_stale(
    counting_server: Callable[[bytes], CountingServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Environment settings are read at most every `ENV_SETTINGS_TTL_S` (shortened here), by
    all sessions together: a proxy set later is used from then on."""
    from _internals import _opener

    monkeypatch.setattr(_opener, "ENV_SETTINGS_TTL_S", 0.05)
    body = (FIXTURES / "openai_completions/text.sse").read_bytes()
    server, proxy = counting_server(body), counting_server(body)
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    options = ac.StreamOptions(api_key=KEY, signal=ac.AbortController().signal)
    assert ac.complete(model_for(server.url), CONTEXT, options).stop_reason == ac.StopReason.STOP
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    time.sleep(0.1)
    assert ac.complete(model_for(server.url), CONTEXT, options).stop_reason == ac.StopReason.STOP
    assert (server.accepted, proxy.accepted) == (1, 1)


def test_lifecycle_new_http_session_sends_what_requests_would(sse_server: SSEServer) -> None:
    """Sent through urllib3 directly, the request still carries the session's headers under
    the provider's own, and a body length; the reply reads as through requests."""
    sse_server.sse((FIXTURES / "openai_completions/text.sse").read_bytes())
    with new_http_session() as session:
        session.headers["X-Team"] = "evals"
        reply = ac.complete(model_for(sse_server.url), CONTEXT,
                            ac.StreamOptions(api_key=KEY, http_session=session,
                                             headers={"User-Agent": "mine/1.0"}))
    assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    [sent] = sse_server.requests
    assert sent.header("X-Team") == "evals"
    assert sent.header("User-Agent") == "mine/1.0"  # the request's own header wins
    assert sent.header("Accept-Encoding") == session.headers["Accept-Encoding"]
    assert sent.header("Content-Length") == str(len(sent.body))
    assert sent.header("Authorization") == f"Bearer {KEY}"


def test_lifecycle_a_session_with_hooks_goes_through_requests(sse_server: SSEServer) -> None:
    """What only requests does per request (hooks here; also cookies, auth, redirects) makes
    the request take requests' own path."""
    sse_server.sse((FIXTURES / "openai_completions/text.sse").read_bytes())
    seen: list[int] = []
    with new_http_session() as session:
        session.hooks["response"].append(lambda response, **_: seen.append(response.status_code))
        reply = ac.complete(model_for(sse_server.url), CONTEXT,
                            ac.StreamOptions(api_key=KEY, http_session=session))
    assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert seen == [200]


def test_lifecycle_a_cookie_a_reply_sets_is_sent_back(sse_server: SSEServer) -> None:
    """As through requests: the session keeps a cookie set by a reply (a load balancer's, say)
    and sends it with the next request."""
    body = (FIXTURES / "openai_completions/text.sse").read_bytes()
    sse_server.sse(body, headers={"Set-Cookie": "lb=blue; Path=/"})
    sse_server.sse(body)
    with new_http_session() as session:
        for _ in range(2):
            reply = ac.complete(model_for(sse_server.url), CONTEXT,
                                ac.StreamOptions(api_key=KEY, http_session=session))
            assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
        assert session.cookies.get("lb") == "blue"
    assert [r.header("Cookie") for r in sse_server.requests] == [None, "lb=blue"]


def test_lifecycle_a_redirect_is_followed_as_requests_does(sse_server: SSEServer) -> None:
    """A redirect answer sends the request again through requests, which follows it."""
    for _ in range(2):
        sse_server.status(307, b"", headers={"Location": "/v1/moved/chat/completions"})
    sse_server.sse((FIXTURES / "openai_completions/text.sse").read_bytes())
    with new_http_session() as session:
        reply = ac.complete(model_for(sse_server.url), CONTEXT,
                            ac.StreamOptions(api_key=KEY, http_session=session))
    assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert [r.path for r in sse_server.requests] == [
        "/v1/chat/completions", "/v1/chat/completions", "/v1/moved/chat/completions"]
    assert all(r.method == "POST" for r in sse_server.requests)


def test_lifecycle_abort_while_reading_the_body(sse_server: SSEServer) -> None:
    gone = sse_server.slow_sse([b'data: {"choices": []}\n\n'], interval_s=WAIT_S)
    result, latency = consume_with_abort(model_for(sse_server.url),
                                         lambda: bool(sse_server.requests))
    assert_aborted(result)
    assert latency < ABORT_BOUND_S
    assert gone.seen.wait(WAIT_S)


def test_lifecycle_abort_while_sleeping_before_a_retry(sse_server: SSEServer) -> None:
    sse_server.status(429, '{"error": {"message": "slow down"}}', {"Retry-After": "30"})
    result, latency = consume_with_abort(model_for(sse_server.url),
                                         lambda: bool(sse_server.requests))
    assert_aborted(result)
    assert latency < ABORT_BOUND_S
    assert len(sse_server.requests) == 1


# --- connections --------------------------------------------------------------------------------


@pytest.mark.parametrize("api", list(APIS))
def test_lifecycle_replies_through_one_session_reuse_one_connection(
    counting_server: Callable[[bytes], CountingServer], api: str
) -> None:
    server = counting_server((FIXTURES / APIS[api][2]).read_bytes())
    model = model_for(server.url, api)
    with new_http_session() as session:
        for _ in range(20):
            controller = ac.AbortController()  # as an Agent's run passes one
            reply = ac.complete(model, CONTEXT, ac.StreamOptions(
                api_key=KEY, http_session=session, signal=controller.signal))
            assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
        assert server.accepted <= 2
    assert wait_until(lambda: server.closed == server.accepted)


def test_lifecycle_a_given_session_is_used_and_never_closed(
    counting_server: Callable[[bytes], CountingServer],
) -> None:
    server = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    session = requests.Session()
    sent: list[str] = []
    session.hooks["response"].append(lambda response, **kwargs: sent.append(response.url))
    try:
        for _ in range(3):
            reply = ac.complete(model_for(server.url), CONTEXT,
                                ac.StreamOptions(api_key=KEY, http_session=session))
            assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
        assert sent == [f"{server.url}/v1/chat/completions"] * 3
        assert server.accepted == 1
        assert server.closed == 0  # the connection waits in the caller's pool
    finally:
        session.close()
    assert wait_until(lambda: server.closed == 1)


def test_lifecycle_without_a_session_each_reply_closes_its_own(
    counting_server: Callable[[bytes], CountingServer],
) -> None:
    server = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    for count in (1, 2):
        reply = ac.complete(model_for(server.url), CONTEXT, ac.StreamOptions(api_key=KEY))
        assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
        assert wait_until(lambda count=count: server.closed == count)  # not left to the GC
    assert server.accepted == 2


def test_lifecycle_a_failed_reply_closes_its_connection(sse_server: SSEServer) -> None:
    gone = sse_server.slow_sse([b'data: {"choices": 5}\n\n'], interval_s=WAIT_S)
    with new_http_session() as session:
        reply = ac.complete(model_for(sse_server.url), CONTEXT,
                            ac.StreamOptions(api_key=KEY, http_session=session))
        assert reply.stop_reason == ac.StopReason.ERROR
        assert gone.seen.wait(WAIT_S)


def test_lifecycle_a_body_that_goes_on_after_the_last_event_is_not_waited_for(
    sse_server: SSEServer,
) -> None:
    body = (FIXTURES / "openai_completions/text.sse").read_bytes()
    gone = sse_server.slow_sse([body], interval_s=WAIT_S)  # [DONE], then silence
    with new_http_session() as session:
        started = time.monotonic()
        reply = ac.complete(model_for(sse_server.url), CONTEXT,
                            ac.StreamOptions(api_key=KEY, http_session=session))
        assert reply.stop_reason == ac.StopReason.STOP
        assert time.monotonic() - started < 1.0
        assert gone.seen.wait(WAIT_S)  # closed, not kept: the body never ended


def test_lifecycle_new_http_session_is_a_requests_session() -> None:
    with new_http_session() as session:
        assert isinstance(session, requests.Session)
        assert type(session.get_adapter("https://api.openai.com")) is type(
            session.get_adapter("http://127.0.0.1"))


# --- the Agent's own session ----------------------------------------------------------------------


def test_lifecycle_agent_runs_share_one_connection_and_close_frees_it(
    counting_server: Callable[[bytes], CountingServer],
) -> None:
    server = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    with ac.Agent(model_for(server.url), api_key=KEY) as agent:
        for _ in range(20):
            run = agent.prompt("hi")
            assert run.result(WAIT_S)[-1].stop_reason == ac.StopReason.STOP
        assert server.accepted <= 2
        assert server.closed < server.accepted  # kept alive between runs
    assert wait_until(lambda: server.closed == server.accepted)  # close() closed the session


def test_lifecycle_agent_leaves_a_given_session_open(
    counting_server: Callable[[bytes], CountingServer],
) -> None:
    server = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    with new_http_session() as session:
        agent = ac.Agent(model_for(server.url), api_key=KEY, http_session=session)
        for _ in range(3):
            agent.prompt("hi").result(WAIT_S)
        agent.close()
        assert server.accepted == 1
        assert server.closed == 0  # still the caller's
    assert wait_until(lambda: server.closed == 1)


def test_lifecycle_agent_without_http_makes_no_session() -> None:
    from agentcore.providers.faux import faux_assistant_message, register_faux_provider

    faux = register_faux_provider()
    try:
        faux.set_responses([faux_assistant_message("hi")])
        with ac.Agent(faux.get_model()) as agent:
            agent.prompt("hi").result(WAIT_S)
            assert agent._http_session is None
    finally:
        faux.unregister()
