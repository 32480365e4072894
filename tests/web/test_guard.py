"""Who may use `agentcore.web.app`: Host, Origin, JSON bodies, the token, `auth` (API §28).

Over real HTTP: each test serves the app with uvicorn on 127.0.0.1 (a thread, port 0) and
sends what a browser on another site, a DNS-rebinding page, a stalled or vanishing uploader, or
a client without the token would send; the agent must not run (its maker is never called). The
rules that depend on the address the app is served on (loopback or not) are also checked on
the middleware alone, with that address in the ASGI scope.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("ag_ui")
pytest.importorskip("uvicorn")

import requests
from _internals import Guard, origin_of
from served import WAIT, Maker, Served, error_of
from served import run_body as body
from starlette.requests import Request
from starlette.responses import PlainTextResponse

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, register_faux_provider
from agentcore.web import app


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    provider = register_faux_provider()
    provider.set_responses([faux_assistant_message("hello")] * 20)
    yield provider
    provider.unregister()


@pytest.fixture
def serve(faux: FauxProvider) -> Iterator[Callable[..., tuple[Served, Maker]]]:
    servers: list[Served] = []

    def start(**options: Any) -> tuple[Served, Maker]:
        maker = Maker(faux.get_model())
        servers.append(Served(app(maker, **options)))
        return servers[-1], maker

    yield start
    for served in servers:
        served.stop()


def ran(reply: requests.Response) -> bool:
    """Whether the reply is a run's stream that finished."""
    return reply.status_code == 200 and '"RUN_FINISHED"' in reply.text


# --- Origin, Referer and the body's type -------------------------------------------------------


def test_a_request_from_another_origin_is_refused_and_runs_nothing(serve: Any) -> None:
    served, maker = serve()
    refused = served.post(body(), headers={"Origin": "http://evil.example"})
    assert "requests from http://evil.example are not allowed" in error_of(refused, 403)
    by_referer = served.post(body(), headers={"Referer": "http://evil.example/page.html"})
    assert "http://evil.example" in error_of(by_referer, 403)
    sandboxed = served.post(body(), headers={"Origin": "null"})
    error_of(sandboxed, 403)
    assert maker.calls == []
    # the page's own origin, and a client that is no browser (neither header), are served
    assert ran(served.post(body("own"), headers={"Origin": served.url}))
    assert ran(served.post(body("own"), headers={"Referer": f"{served.url}/?x=1"}))
    assert ran(served.post(body("curl")))
    assert maker.calls == ["own", "curl"]


@pytest.mark.parametrize("content_type", [
    "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None])
def test_a_body_that_is_not_declared_json_is_415(serve: Any, content_type: str | None) -> None:
    served, maker = serve()
    # what a cross-site form with enctype text/plain sends: JSON-looking text, no Origin check
    # needed to refuse it (here it even comes from the page's own origin)
    data = json.dumps(body()).encode()
    headers = {"Origin": served.url} | ({} if content_type is None
                                        else {"Content-Type": content_type})
    reply = served.http.post(f"{served.url}/ag-ui", data=data, headers=headers, timeout=WAIT)
    assert "the body must be JSON" in error_of(reply, 415)
    assert maker.calls == []
    assert ran(served.post(body(), headers={"Content-Type": "application/json; charset=utf-8"}))


def test_allowed_origins_are_served_with_cors_and_their_preflight_answered(serve: Any) -> None:
    served, maker = serve(allowed_origins=["http://app.example:3000"])
    preflight = served.http.options(f"{served.url}/ag-ui", headers={
        "Origin": "http://app.example:3000", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"}, timeout=WAIT)
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "http://app.example:3000"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "Content-Type" in preflight.headers["access-control-allow-headers"]
    reply = served.post(body(), headers={"Origin": "http://app.example:3000"})
    assert ran(reply)
    assert reply.headers["access-control-allow-origin"] == "http://app.example:3000"
    assert reply.headers["vary"] == "Origin"
    # another origin's preflight gets no CORS answer, and its request is refused
    other = served.http.options(f"{served.url}/ag-ui", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, timeout=WAIT)
    assert "access-control-allow-origin" not in other.headers
    error_of(served.post(body(), headers={"Origin": "http://evil.example"}), 403)
    assert maker.calls == ["t"]


# --- Host: DNS rebinding -----------------------------------------------------------------------


def test_served_on_loopback_a_host_naming_another_site_is_refused(serve: Any) -> None:
    served, maker = serve()
    evil = f"evil.example:{served.port}"
    page = served.http.get(f"{served.url}/", headers={"Host": evil}, timeout=WAIT)
    assert "is not one this server answers to" in error_of(page, 403)
    # the rebinding page's own origin is the evil name too: same-origin for the browser
    refused = served.post(body(), headers={"Host": evil, "Origin": f"http://{evil}"})
    error_of(refused, 403)
    assert maker.calls == []
    for host in (f"localhost:{served.port}", f"127.0.0.1:{served.port}", "localhost"):
        assert served.http.get(f"{served.url}/", headers={"Host": host},
                               timeout=WAIT).status_code == 200


def test_allowed_hosts_admit_a_proxy_s_public_name(serve: Any) -> None:
    served, maker = serve(allowed_hosts=["chat.example.com"])
    reply = served.post(body(), headers={"Host": "chat.example.com",
                                         "Origin": "https://chat.example.com"})
    assert ran(reply)
    error_of(served.post(body(), headers={"Host": "evil.example"}), 403)
    assert maker.calls == ["t"]


async def _call(guard: Guard, server: tuple[str, int], headers: dict[str, str],
                method: str = "GET") -> int:
    """Status of one request through `guard` (in front of a 200 app) served on `server`."""
    scope = {"type": "http", "method": method, "path": "/", "raw_path": b"/",
             "query_string": b"", "root_path": "", "scheme": "http", "server": server,
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    return int(sent[0]["status"])


def test_beyond_loopback_any_host_passes_unless_allowed_hosts_say_otherwise() -> None:
    ok = PlainTextResponse("ok")
    open_guard = Guard(ok, allowed_origins=frozenset(), allowed_hosts=None, token=None,
                       auth=None)
    listed = Guard(ok, allowed_origins=frozenset(), allowed_hosts=frozenset({"chat.example"}),
                   token=None, auth=None)
    lan = ("192.0.2.10", 8000)
    assert asyncio.run(_call(open_guard, lan, {"Host": "anything.example"})) == 200
    assert asyncio.run(_call(listed, lan, {"Host": "chat.example:8000"})) == 200
    assert asyncio.run(_call(listed, lan, {"Host": "anything.example"})) == 403
    for loopback in (("127.0.0.1", 8000), ("::1", 8000)):
        assert asyncio.run(_call(open_guard, loopback, {"Host": "anything.example"})) == 403
        assert asyncio.run(_call(open_guard, loopback, {"Host": "[::1]:8000"})) == 200
        assert asyncio.run(_call(open_guard, loopback, {})) == 403  # no Host at all


def test_origin_of_writes_origins_as_browsers_send_them() -> None:
    assert origin_of("HTTP://Example.COM:80/a?b") == "http://example.com"
    assert origin_of("https://example.com:443") == "https://example.com"
    assert origin_of("https://example.com:8443/") == "https://example.com:8443"
    assert origin_of("http://[::1]:8000/x") == "http://[::1]:8000"
    assert origin_of("file:///etc/passwd") is None
    assert origin_of("http://host:99999") is None
    assert origin_of("null") is None


# --- bodies: nesting, stalls, clients that leave ----------------------------------------------


@pytest.mark.parametrize("data", [
    pytest.param(b"[" * 100_000, id="100KB-of-brackets"),
    pytest.param(b'{"a":' * 5000 + b"1" + b"}" * 5000, id="deep-but-valid"),
    pytest.param(json.dumps(body() | {"forwardedProps": json.loads("[" * 70 + "]" * 70)}
                            ).encode(), id="just-over-the-limit"),
])
def test_a_body_nested_too_deep_is_400_not_500(serve: Any, caplog: pytest.LogCaptureFixture,
                                               data: bytes) -> None:
    served, maker = serve()
    with caplog.at_level(logging.INFO):
        reply = served.post(data, headers={"Content-Type": "application/json"})
    assert "the body nests deeper than 64 levels" in error_of(reply, 400)
    assert maker.calls == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    nested = json.loads("[" * 60 + "]" * 60)  # within the limit: the run goes on
    assert ran(served.post(body() | {"forwardedProps": {"deep": nested}}))


def _raw(port: int, head: bytes) -> socket.socket:
    """A connection to the server that has sent `head` (request line, headers, some body)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.sendall(head)
    return sock


def _request_head(port: int, length: int) -> bytes:
    return (f"POST /ag-ui HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
            f"application/json\r\nContent-Length: {length}\r\n\r\n").encode()


def test_a_stalled_upload_times_out_with_408(serve: Any) -> None:
    served, maker = serve(upload_timeout=0.3)
    with _raw(served.port, _request_head(served.port, 1000) + b'{"threadId": ') as sock:
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 408 "), reply[:200]
    assert b"the body did not arrive within 0.3 s" in reply
    assert maker.calls == []


def test_a_client_leaving_during_its_upload_logs_one_line_not_a_traceback(
        serve: Any, caplog: pytest.LogCaptureFixture) -> None:
    served, maker = serve()
    with caplog.at_level(logging.INFO):
        sock = _raw(served.port, _request_head(served.port, 5000) + b'{"threadId": "t", ')
        sock.close()
        for _ in range(200):  # the server notices as its event loop gets to it
            if any("left while sending its body" in r.getMessage() for r in caplog.records):
                break
            asyncio.run(asyncio.sleep(0.02))
    left = [r for r in caplog.records if "left while sending its body" in r.getMessage()]
    assert [(r.levelno, r.exc_info) for r in left] == [(logging.INFO, None)]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert maker.calls == []


# --- the token and the application's own check ------------------------------------------------


def test_with_a_token_every_request_needs_it_and_the_page_keeps_it_in_a_cookie(
        serve: Any) -> None:
    served, maker = serve(token="s3cret-token")
    page = served.http.get(f"{served.url}/", headers={"Accept": "text/html"}, timeout=WAIT)
    assert page.status_code == 401
    assert "?token=" in page.text
    assert page.headers["www-authenticate"].startswith("Bearer")
    assert "needs its token" in error_of(served.post(body()), 401)
    assert "wrong token" in error_of(
        served.post(body(), headers={"Authorization": "Bearer nope"}), 401)
    history = served.http.get(f"{served.url}/ag-ui/threads/t", timeout=WAIT)
    error_of(history, 401)
    assert maker.calls == []
    # an SDK: the bearer header
    assert ran(served.post(body("sdk"), headers={"Authorization": "Bearer s3cret-token"}))
    # a browser: the printed URL once, then the cookie (the URL loses its token)
    opened = served.http.get(f"{served.url}/?token=s3cret-token&x=1",
                             headers={"Accept": "text/html"}, allow_redirects=False,
                             timeout=WAIT)
    assert opened.status_code == 303
    assert opened.headers["location"] == f"{served.url}/?x=1"
    cookie = opened.headers["set-cookie"]
    assert f"agentcore_token_{served.port}=s3cret-token" in cookie  # a cookie per port
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert served.http.get(f"{served.url}/?x=1", timeout=WAIT).status_code == 200
    assert ran(served.post(body("page"), headers={"Origin": served.url}))
    # another server's cookie on this host (cookies ignore ports) does not hide the right token
    served.http.cookies.set("agentcore_token_1", "another-server-s")
    assert ran(served.post(body("page"), headers={"Authorization": "Bearer s3cret-token"}))
    assert maker.calls == ["sdk", "page"]


def test_an_auth_function_decides_and_one_that_raises_refuses(serve: Any,
                                                              caplog: pytest.LogCaptureFixture,
                                                              ) -> None:
    seen: list[str] = []

    def auth(request: Request) -> bool:
        seen.append(request.url.path)
        key = request.headers.get("x-api-key")
        if key == "boom":
            raise RuntimeError("the key store is down")
        return key == "good"

    served, maker = serve(auth=auth)
    assert "not authorized" in error_of(served.post(body()), 401)
    with caplog.at_level(logging.ERROR):
        error_of(served.post(body(), headers={"X-API-Key": "boom"}), 401)
    assert "auth function raised" in caplog.text
    assert maker.calls == []
    assert ran(served.post(body(), headers={"X-API-Key": "good"}))
    assert seen == ["/ag-ui"] * 3


def test_an_async_auth_function_is_awaited(serve: Any) -> None:
    async def auth(request: Request) -> bool:
        await asyncio.sleep(0)
        return request.headers.get("x-api-key") == "good"

    served, maker = serve(auth=auth)
    error_of(served.post(body()), 401)
    assert ran(served.post(body(), headers={"X-API-Key": "good"}))
    assert maker.calls == ["t"]


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"allowed_origins": "https://a.example"}, TypeError, "'allowed_origins' must be a list"),
    ({"allowed_origins": ["a.example"]}, ValueError, "'allowed_origins': 'a.example' is not"),
    ({"allowed_origins": ["https://a.example/path"]}, ValueError, "is not an origin"),
    ({"allowed_hosts": ["https://a.example"]}, ValueError, "'allowed_hosts'"),
    ({"allowed_hosts": "a.example"}, TypeError, "'allowed_hosts' must be a list"),
    ({"token": ""}, ValueError, "'token' must be a non-empty"),
    ({"token": 123}, TypeError, "'token' must be a string"),
    ({"auth": "yes"}, TypeError, "'auth' must be a callable"),
    ({"upload_timeout": 0}, ValueError, "'upload_timeout' must be positive"),
    ({"upload_timeout": "5"}, TypeError, "'upload_timeout' must be a number"),
])
def test_bad_options_name_their_field(options: dict[str, Any], error: type[Exception],
                                      message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(")):
        app(lambda thread_id: ac.Agent(ac.Model("m", "m", "openai-completions", "openai",
                                              "http://127.0.0.1:9")), **options)
