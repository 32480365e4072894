"""Who may use the app: the request checks every route passes first (API §28).

A local agent server is a target: any web page a person opens can send requests to
`127.0.0.1`, and an agent runs tools (with `--mcp`, file or shell tools). `Guard` is the ASGI
middleware in front of every route, refusing before a route runs:

- a `Host` that names another site while the app is served on a loopback address (DNS
  rebinding: a page of `evil.example` whose name resolves to 127.0.0.1 is same-origin with
  the server as far as the browser knows, but its requests say `Host: evil.example`), or one
  outside `allowed_hosts` when those are given: 403;
- a request that changes something (any method but GET, HEAD, OPTIONS) from a browser page of
  another origin: its `Origin` (or, without one, its `Referer`) must name the page's own origin
  (the same host and port as the request's `Host`) or one of `allowed_origins`: 403. A request
  with neither header (curl, an SDK, another server) is not a browser's, and passes;
- such a request with a body that is not `application/json`: 415. HTML forms can only send
  `text/plain`, `application/x-www-form-urlencoded` and `multipart/form-data`, so no form of
  another site starts a run, and a script of another site sending JSON must ask first (a CORS
  preflight), which only `allowed_origins` are answered;
- a request without the app's `token` (an `Authorization: Bearer` header, the cookie the page
  keeps, or `?token=` in the URL, as Jupyter prints it) or that the application's own `auth`
  function refuses: 401.

Refusals are JSON (`{"error": ...}`), except the page's own 401, which is a short HTML page
saying where the token comes from. Allowed origins get CORS headers and their preflights an
answer.
"""

from __future__ import annotations

import hmac
import inspect
import ipaddress
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ._body import json_error

__all__ = ["TOKEN_COOKIE", "Auth", "Guard", "origin_of", "token_cookie"]

_log = logging.getLogger(__name__)

TOKEN_COOKIE = "agentcore_token"
"""The cookie in which the page keeps the app's token once it was opened with `?token=`
(followed by `_<port>` when the address has a port: `token_cookie`)."""

Auth = Callable[[Request], "bool | Awaitable[bool]"]
"""An application's own check of a request (its headers, cookies, client): true lets it in."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost",
                             "ip6-loopback"})
_CORS_METHODS = "GET, POST, PATCH, DELETE"
_CORS_HEADERS = "Content-Type, Authorization"
_TOKEN_PAGE = """<!doctype html><meta charset="utf-8"><title>agentcore: token needed</title>
<h1>agentcore</h1><p>This server asks for its token. Open the address it printed when it
started (the one ending in <code>?token=...</code>); the page then keeps the token in a
cookie.</p>"""


def origin_of(url: str) -> str | None:
    """`scheme://host[:port]` of a URL, lowercased, default ports dropped; None if it has none."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in ("http", "https") or not host:
        return None
    if ":" in host:  # an IPv6 address: bracketed in an origin
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + ("" if port in (None, default) else f":{port}")


def check_origins(origins: Iterable[str]) -> frozenset[str]:
    """`allowed_origins` as `origin_of` writes them; raises naming the field for a bad one."""
    if isinstance(origins, str) or not isinstance(origins, Iterable):
        raise TypeError(f"'allowed_origins' must be a list of origins such as "
                        f"'https://example.com', got {origins!r}")
    out = set()
    for origin in origins:
        written = origin_of(origin) if isinstance(origin, str) else None
        if written is None or urllib.parse.urlsplit(origin.strip()).path.strip("/"):
            raise ValueError(f"'allowed_origins': {origin!r} is not an origin (scheme://host"
                             "[:port], such as 'https://example.com')")
        out.add(written)
    return frozenset(out)


def check_hosts(hosts: Iterable[str] | None) -> frozenset[str] | None:
    """`allowed_hosts` lowercased; raises naming the field for anything but host names."""
    if hosts is None:
        return None
    if isinstance(hosts, str) or not isinstance(hosts, Iterable):
        raise TypeError(f"'allowed_hosts' must be a list of host names, got {hosts!r}")
    out = set()
    for host in hosts:
        if not isinstance(host, str) or not host.strip() or any(c in host for c in "/@ "):
            raise ValueError(f"'allowed_hosts': {host!r} is not a host name (such as "
                             "'chat.example.com', or 'chat.example.com:8443')")
        out.add(host.strip().lower())
    return frozenset(out)


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine."""
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """The name part of a `Host` header value (`[::1]:8000` → `::1`, `a.b:80` → `a.b`)."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """ASGI middleware running the checks of the module docstring before `app`."""

    def __init__(self, app: App, *, allowed_origins: frozenset[str],
                 allowed_hosts: frozenset[str] | None, token: str | None,
                 auth: Auth | None) -> None:
        self.app = app
        self.allowed_origins = allowed_origins
        self.allowed_hosts = allowed_hosts
        self.token = token
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal, cors = await self._check(request)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if cors is None:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      (b"access-control-allow-origin", cors.encode()),
                                      (b"access-control-allow-credentials", b"true"),
                                      (b"vary", b"Origin")]
            await send(message)

        await self.app(scope, receive, send_with_cors)

    async def _check(self, request: Request) -> tuple[Response | None, str | None]:
        """The refusal of `request` (None: let it in), and the origin to answer with CORS."""
        host = request.headers.get("host", "")
        if not self._host_allowed(request, host):
            _log.warning("refused %s %s: Host %r", request.method, request.url.path, host[:100])
            return json_error(403, f"the Host {host[:100]!r} is not one this server answers to "
                          "(see allowed_hosts)"), None
        origin = self._browser_origin(request)
        listed = origin if origin is not None and origin in self.allowed_origins else None
        if request.method == "OPTIONS" and listed is not None \
                and "access-control-request-method" in request.headers:
            return Response(status_code=204, headers={  # a preflight of an allowed origin
                "Access-Control-Allow-Origin": listed,
                "Access-Control-Allow-Credentials": "true",
                "Access-Control-Allow-Methods": _CORS_METHODS,
                "Access-Control-Allow-Headers": _CORS_HEADERS,
                "Access-Control-Max-Age": "600", "Vary": "Origin"}), None
        if request.method not in _SAFE_METHODS:
            if origin is not None and listed is None and not _same_origin(origin, host):
                _log.warning("refused %s %s from origin %r", request.method,
                             request.url.path, origin)
                return json_error(403, f"requests from {origin} are not allowed (this server "
                              "answers its own page, and the allowed_origins it was given)"
                              ), None
            if not _is_json(request.headers.get("content-type", "")) \
                    and not (request.method == "DELETE" and not _has_body(request)):
                return json_error(415, "the body must be JSON: send Content-Type: "
                              "application/json"), None
        refusal = await self._authenticate(request)
        if refusal is not None:
            return refusal, None
        return None, listed

    def _host_allowed(self, request: Request, host: str) -> bool:
        """The DNS-rebinding check (see the module docstring)."""
        value = host.strip().lower()
        if self.allowed_hosts is not None and (
                value in self.allowed_hosts or _host_name(value) in self.allowed_hosts):
            return True
        server: Any = request.scope.get("server")
        served_on_loopback = bool(server) and is_loopback(str(server[0]))
        if served_on_loopback:
            return bool(value) and is_loopback(_host_name(value))
        return self.allowed_hosts is None

    @staticmethod
    def _browser_origin(request: Request) -> str | None:
        """The origin a browser says the request comes from (`Origin`, else `Referer`).

        `Origin: null` (a sandboxed frame, a file page) gives `"null"`, which no check admits.
        """
        origin = request.headers.get("origin")
        if origin is not None:
            return origin_of(origin) or "null"
        referer = request.headers.get("referer")
        if referer is not None:
            return origin_of(referer) or "null"
        return None

    async def _authenticate(self, request: Request) -> Response | None:
        """The 401 of a request without the token or refused by `auth`; None when it passes.

        `?token=` on a page's GET sets the cookie and sends the browser to the same address
        without it, so the token stays out of the address bar and the history.
        """
        if self.token is not None:
            given = _given_tokens(request)
            how = next((how for how, value in given if hmac.compare_digest(
                value.encode(), self.token.encode())), None)
            if how is None:
                return _unauthorized(request, "wrong token" if given
                                     else "this server needs its token")
            if how == "query" and request.method == "GET" and _wants_html(request):
                kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                target = request.url.replace(query=urllib.parse.urlencode(kept))
                redirect = RedirectResponse(str(target), status_code=303)
                redirect.set_cookie(token_cookie(request), self.token, httponly=True,
                                    samesite="strict",
                                    path=request.scope.get("root_path") or "/")
                return redirect
        if self.auth is not None:
            try:
                verdict = self.auth(request)
                if inspect.isawaitable(verdict):
                    verdict = await verdict
            except Exception:
                _log.exception("the app's auth function raised: the request is refused")
                verdict = False
            if not verdict:
                return _unauthorized(request, "not authorized")
        return None


def token_cookie(request: Request) -> str:
    """The name of the cookie keeping the token: one per port.

    Cookies ignore ports: two servers on one host would otherwise overwrite each other's.
    """
    port = request.url.port
    return TOKEN_COOKIE if port is None else f"{TOKEN_COOKIE}_{port}"


def _given_tokens(request: Request) -> list[tuple[str, str]]:
    """The tokens the request carries, each with how: a bearer header, the cookie, the query."""
    given = []
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        given.append(("header", value.strip()))
    cookie = request.cookies.get(token_cookie(request))
    if cookie:
        given.append(("cookie", cookie))
    if "token" in request.query_params:
        given.append(("query", request.query_params["token"]))
    return given


def _same_origin(origin: str, host: str) -> bool:
    """Whether `origin` names the host and port the request was sent to (its `Host`).

    The scheme is not compared: behind a proxy that ends TLS the app sees http for a page
    served over https. The Host check has already refused names of other sites.
    """
    written = origin_of(f"http://{host}") if host else None
    if written is None or origin == "null":
        return False
    netloc = origin.split("://", 1)[1]
    own = written.split("://", 1)[1]
    return netloc == own or _without_default_port(netloc) == _without_default_port(own)


def _without_default_port(netloc: str) -> str:
    for port in (":80", ":443"):
        if netloc.endswith(port):
            return netloc[: -len(port)]
    return netloc


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/")
                                           and media.endswith("+json"))


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return "transfer-encoding" in request.headers or (length is not None and length != "0")


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def _unauthorized(request: Request, message: str) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="agentcore"'}
    if request.method == "GET" and _wants_html(request):
        return HTMLResponse(_TOKEN_PAGE, status_code=401, headers=headers)
    return json_error(401, message, headers)
