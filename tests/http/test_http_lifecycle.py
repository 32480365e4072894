"""The life of an HTTP request: abort in every phase, keep-alive, who owns the connections.

Real sockets on 127.0.0.1 only: a listener whose accept queue is full (connects never finish),
the scripted `sse_server` (headers that never come, bodies that never end) and a small counting
server (how many TCP connections a series of replies opens and closes), from `http_phases`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import paths
import pytest
import requests
from _internals import default_client
from http_phases import (
    CONTEXT,
    KEY,
    WAIT_S,
    CountingServer,
    consume_with_abort,
    never_accepts,
    wait_until,
)
from sse_server import HOLD, SSEServer

import agentcore as ac
from agentcore.providers import HttpClient, Urllib3Transport, new_http_session

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


@contextlib.contextmanager
def own_client() -> Iterator[HttpClient]:
    with HttpClient(Urllib3Transport(proxies={})) as client:
        yield client


@pytest.mark.parametrize("own", [False, True], ids=["shared-client", "own-client"])
def test_lifecycle_abort_while_connecting_ends_at_once(own: bool,
                                                      hour_long_http_waits: None) -> None:
    """Connecting may take an hour here: a run that ends was ended by the abort."""
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(own_client()) if own else None
        with never_accepts() as url:
            started = time.monotonic()
            result, _ = consume_with_abort(
                model_for(url), lambda: time.monotonic() - started > 0.2, http_client=client)
    assert_aborted(result)
    # the connecting thread is woken too: no thread outlives the test (conftest checks)


@pytest.mark.parametrize("own", [False, True], ids=["shared-client", "own-client"])
def test_lifecycle_abort_while_waiting_for_headers_closes_the_connection(
    sse_server: SSEServer, own: bool
) -> None:
    gone = sse_server.hang_headers(HOLD)  # only the client's close ends the wait
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(own_client()) if own else None
        result, _ = consume_with_abort(model_for(sse_server.url),
                                             lambda: bool(sse_server.requests),
                                             http_client=client)
    assert_aborted(result)
    assert gone.seen.wait(WAIT_S), "the server never saw the connection close"


def test_lifecycle_abort_while_waiting_for_headers_with_a_plain_session(
    sse_server: SSEServer,
) -> None:
    """Through a caller's session: the run ends with the abort while the server still holds the
    request; the abandoned request ends at its own pace (here the server gives up after a
    second), on a daemon thread."""
    gone = sse_server.hang_headers(1.0)
    with requests.Session() as session:
        result, _ = consume_with_abort(model_for(sse_server.url),
                                       lambda: bool(sse_server.requests),
                                       http_session=session)
        answered = gone.seen.is_set()
        assert_aborted(result)
        assert not answered or gone.at is not None


def test_lifecycle_the_client_opens_on_the_calling_thread(sse_server: SSEServer) -> None:
    """No thread per request: the wait for headers happens on the caller's thread, which the
    abort wakes by shutting the socket down."""
    sse_server.hang_headers(HOLD)
    seen: list[list[str]] = []

    def waiting() -> bool:
        if sse_server.requests:
            seen.append([t.name for t in threading.enumerate()])
            return True
        return False

    result, _ = consume_with_abort(model_for(sse_server.url), waiting)
    assert_aborted(result)
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
        result, _ = consume_with_abort(model_for("http://slow-dns.test:9"),
                                       lambda: time.monotonic() - started > 0.2)
        still_looking_up = not release.is_set()
    finally:
        release.set()
    assert_aborted(result)
    assert still_looking_up  # the run ended while the lookup still hung


def test_lifecycle_a_proxy_from_the_environment_is_used(
    counting_server: Callable[[bytes], CountingServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`HTTP_PROXY` is read when the transport is made, and honoured (aborts included): the
    counting server plays the proxy for a host that does not exist."""
    proxy = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    for name in ("NO_PROXY", "no_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    with HttpClient(Urllib3Transport()) as client:
        for _ in range(2):
            controller = ac.AbortController()
            reply = ac.complete(model_for("http://api.example.test"), CONTEXT, ac.StreamOptions(
                api_key=KEY, http_client=client, signal=controller.signal))
            assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert proxy.accepted == 1  # the proxy's connection is kept alive too


def test_lifecycle_no_proxy_and_a_transport_made_before_are_direct(
    counting_server: Callable[[bytes], CountingServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host `NO_PROXY` names goes direct; so does every request of a transport made before
    the proxy was set (the environment is read once)."""
    body = (FIXTURES / "openai_completions/text.sse").read_bytes()
    server, proxy = counting_server(body), counting_server(body)
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    before = HttpClient(Urllib3Transport())
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with before, HttpClient(Urllib3Transport()) as after:
        for client in (before, after):
            reply = ac.complete(model_for(server.url), CONTEXT,
                                ac.StreamOptions(api_key=KEY, http_client=client))
            assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert (server.arrived, proxy.arrived) == (2, 0)


def test_lifecycle_the_client_sends_a_plain_request(sse_server: SSEServer) -> None:
    """The provider's headers, agentcore's User-Agent unless one is given, a body length."""
    for _ in range(2):
        sse_server.sse((FIXTURES / "openai_completions/text.sse").read_bytes())
    for headers in (None, {"User-Agent": "mine/1.0"}):
        reply = ac.complete(model_for(sse_server.url), CONTEXT,
                            ac.StreamOptions(api_key=KEY, headers=headers))
        assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    first, second = sse_server.requests
    assert first.header("User-Agent") == f"agentcore/{ac.__version__}"
    assert second.header("User-Agent") == "mine/1.0"  # the request's own header wins
    assert first.header("Content-Length") == str(len(first.body))
    assert first.header("Authorization") == f"Bearer {KEY}"


def test_lifecycle_a_redirect_is_not_followed_by_the_client(sse_server: SSEServer) -> None:
    """A credential header must never reach another host: the answer says where it pointed."""
    sse_server.status(307, b"", headers={"Location": "https://elsewhere.test/v1"})
    reply = ac.complete(model_for(sse_server.url), CONTEXT, ac.StreamOptions(api_key=KEY))
    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message == ("307 redirect to https://elsewhere.test/v1 (not followed: "
                                   "point the model's base_url there)")
    assert len(sse_server.requests) == 1


def test_lifecycle_a_session_with_hooks_goes_through_requests(sse_server: SSEServer) -> None:
    """A caller's session does all requests does per request (hooks here; cookies, auth and
    redirects below), and keeps its own headers."""
    sse_server.sse((FIXTURES / "openai_completions/text.sse").read_bytes())
    seen: list[int] = []
    with new_http_session() as session:
        session.headers["X-Team"] = "evals"
        session.hooks["response"].append(lambda response, **_: seen.append(response.status_code))
        reply = ac.complete(model_for(sse_server.url), CONTEXT,
                            ac.StreamOptions(api_key=KEY, http_session=session))
    assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert seen == [200]
    assert sse_server.requests[0].header("X-Team") == "evals"


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
    """Through a caller's session, requests follows a redirect as it always does."""
    sse_server.status(307, b"", headers={"Location": "/v1/moved/chat/completions"})
    sse_server.sse((FIXTURES / "openai_completions/text.sse").read_bytes())
    with new_http_session() as session:
        reply = ac.complete(model_for(sse_server.url), CONTEXT,
                            ac.StreamOptions(api_key=KEY, http_session=session))
    assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert [r.path for r in sse_server.requests] == [
        "/v1/chat/completions", "/v1/moved/chat/completions"]
    assert all(r.method == "POST" for r in sse_server.requests)


def test_lifecycle_abort_while_reading_the_body(sse_server: SSEServer) -> None:
    gone = sse_server.slow_sse([b'data: {"choices": []}\n\n'], interval_s=HOLD)
    result, _ = consume_with_abort(model_for(sse_server.url), lambda: bool(sse_server.requests))
    assert_aborted(result)
    assert gone.seen.wait(WAIT_S)


def test_lifecycle_abort_while_sleeping_before_a_retry(sse_server: SSEServer) -> None:
    """The server asked for 30 s: a run that ends with one request sent was ended by the abort."""
    sse_server.status(429, '{"error": {"message": "slow down"}}', {"Retry-After": "30"})
    result, _ = consume_with_abort(model_for(sse_server.url), lambda: bool(sse_server.requests))
    assert_aborted(result)
    assert len(sse_server.requests) == 1


# --- connections --------------------------------------------------------------------------------


@pytest.mark.parametrize("api", list(APIS))
def test_lifecycle_replies_through_one_client_reuse_one_connection(
    counting_server: Callable[[bytes], CountingServer], api: str
) -> None:
    server = counting_server((FIXTURES / APIS[api][2]).read_bytes())
    model = model_for(server.url, api)
    with own_client() as client:
        for _ in range(20):
            controller = ac.AbortController()  # as an Agent's run passes one
            reply = ac.complete(model, CONTEXT, ac.StreamOptions(
                api_key=KEY, http_client=client, signal=controller.signal))
            assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
        assert server.accepted <= 2
    assert wait_until(lambda: server.closed == server.accepted)  # close() closed them


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


def test_lifecycle_without_a_client_replies_share_the_process_pool(
    counting_server: Callable[[bytes], CountingServer],
) -> None:
    server = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    for _ in range(3):
        reply = ac.complete(model_for(server.url), CONTEXT, ac.StreamOptions(api_key=KEY))
        assert reply.stop_reason == ac.StopReason.STOP, reply.error_message
    assert (server.accepted, server.closed) == (1, 0)
    default_client().close()  # what `HttpClient.close()` of the shared client does
    assert wait_until(lambda: server.closed == 1)


def test_lifecycle_a_failed_reply_closes_its_connection(sse_server: SSEServer) -> None:
    gone = sse_server.slow_sse([b'data: {"choices": 5}\n\n'], interval_s=HOLD)
    reply = ac.complete(model_for(sse_server.url), CONTEXT, ac.StreamOptions(api_key=KEY))
    assert reply.stop_reason == ac.StopReason.ERROR
    assert gone.seen.wait(WAIT_S)


def test_lifecycle_a_body_that_goes_on_after_the_last_event_is_not_waited_for(
    sse_server: SSEServer,
) -> None:
    body = (FIXTURES / "openai_completions/text.sse").read_bytes()
    gone = sse_server.slow_sse([body], interval_s=HOLD)  # [DONE], then the body never ends
    reply = ac.complete(model_for(sse_server.url), CONTEXT, ac.StreamOptions(api_key=KEY))
    assert reply.stop_reason == ac.StopReason.STOP  # it came although the body never ended
    assert gone.seen.wait(WAIT_S)  # closed, not kept


def test_lifecycle_new_http_session_is_a_requests_session() -> None:
    with new_http_session() as session:
        assert isinstance(session, requests.Session)
        assert type(session.get_adapter("https://api.openai.com")) is type(
            session.get_adapter("http://127.0.0.1"))


# --- agents share the process's pool ---------------------------------------------------------


def test_lifecycle_agents_share_the_process_pool(
    counting_server: Callable[[bytes], CountingServer],
) -> None:
    """Agent after agent, and run after run: one connection, left open by `Agent.close()`
    (the process's, not the agent's)."""
    server = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    for _ in range(5):
        with ac.Agent(model_for(server.url), api_key=KEY) as agent:
            for _ in range(4):
                run = agent.prompt("hi")
                assert run.result(WAIT_S)[-1].stop_reason == ac.StopReason.STOP
    assert (server.accepted, server.closed) == (1, 0)
    default_client().close()
    assert wait_until(lambda: server.closed == 1)


def test_lifecycle_agents_at_once_open_as_many_connections_as_stream(
    counting_server: Callable[[bytes], CountingServer],
) -> None:
    """N agents streaming at once open N connections; once they are done, the next N runs
    reuse them (no connection per agent)."""
    server = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    count = 12
    agents = [ac.Agent(model_for(server.url), api_key=KEY) for _ in range(count)]
    try:
        server.hold = threading.Event()  # every reply waits until all requests are in
        runs = [agent.prompt("hi") for agent in agents]
        assert wait_until(lambda: server.arrived == count)
        server.hold.set()
        assert all(run.result(WAIT_S)[-1].stop_reason == ac.StopReason.STOP for run in runs)
        assert server.accepted == count
        server.hold = None
        for agent in agents:
            assert agent.prompt("again").result(WAIT_S)[-1].stop_reason == ac.StopReason.STOP
        assert server.accepted == count
    finally:
        for agent in agents:
            agent.close()
        default_client().close()


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


def test_lifecycle_agent_uses_a_given_client_and_leaves_it_open(
    counting_server: Callable[[bytes], CountingServer],
) -> None:
    server = counting_server((FIXTURES / "openai_completions/text.sse").read_bytes())
    with own_client() as client:
        with ac.Agent(model_for(server.url), api_key=KEY, http_client=client) as agent:
            for _ in range(3):
                agent.prompt("hi").result(WAIT_S)
        assert (server.accepted, server.closed) == (1, 0)  # the caller's client keeps it
    assert wait_until(lambda: server.closed == 1)
