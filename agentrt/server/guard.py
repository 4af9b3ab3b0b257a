"""Internal. What every request passes before the app sees it: its Host, its token when it has a
body, and the size of that body.

The routes check tokens too (`auth.authenticate`), but FastAPI reads and parses a request's
body before a route's dependencies run: a 256 MB body sent without a token cost 677 MB before
its 401. Here, in order, without reading the body first:

1. **Host** (421): a server without a token answers only to the loopback names `localhost`,
   `127.0.0.1` and `[::1]`, so that a web page elsewhere cannot reach it by DNS rebinding (its
   name made to resolve to 127.0.0.1: the browser then sends that name as the Host).
   `ServerSettings.allowed_hosts` adds names (`*`: any); given, it binds a server with tokens
   too.
2. **Token** (401): a request with a body, or with a method other than GET and HEAD, shows a
   token the server accepts before any of its body is read.
3. **Size** (413): a body declared larger than `ServerSettings.max_body` is refused at once;
   one without a declared size is read up to that limit and refused past it. The body read is
   handed to the app as if it came from the client.

Refusals are `ErrorBody` JSON and close the connection, so that no unread body is drained.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentrt.server.auth import LOOPBACK_NAMES, match_token

__all__ = ["RequestGuard", "host_name"]

_BODILESS = frozenset({"GET", "HEAD"})


def host_name(header: str) -> str:
    """The name of a `Host` header, without its port, lower-cased (`[::1]` keeps its brackets)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header.partition("]")[0] + "]"
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class RequestGuard:
    """ASGI middleware that refuses, before the app reads anything, a request to a foreign
    host, one with a body and no valid token, or one with too large a body (module docstring).

    :param token_keys: the accepted tokens, each with its name (`auth.token_keys`)
    :param allowed_hosts: host names answered besides the loopback ones (`*`: any)
    :param max_body: most bytes of a request body read
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token_keys: Mapping[str, str],
        allowed_hosts: tuple[str, ...],
        max_body: int,
    ) -> None:
        self.app = app
        self.token_keys = dict(token_keys)
        self.hosts: frozenset[str] | None = None
        if "*" not in allowed_hosts and (allowed_hosts or not token_keys):
            self.hosts = LOOPBACK_NAMES | {host_name(h) for h in allowed_hosts}
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        has_body = "transfer-encoding" in headers or headers.get("content-length", "0") != "0"
        refusal = self._host(headers) or self._token(scope["method"], headers, has_body)
        if refusal is None and has_body:
            refusal = self._declared_size(headers)
            if refusal is None:
                receive, refusal = await self._read_body(receive)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _host(self, headers: Headers) -> JSONResponse | None:
        given = headers.get("host")
        # Browsers always send a Host; a request without one is no DNS rebinding.
        if self.hosts is None or given is None or host_name(given) in self.hosts:
            return None
        named = [h for h in ("localhost", "127.0.0.1", "[::1]") if h in self.hosts]
        hosts = ", ".join(named + sorted(self.hosts - LOOPBACK_NAMES))
        why = (
            "this server has no token, so it answers only to loopback names"
            if not self.token_keys
            else "it answers only to the hosts it was given"
        )
        msg = (
            f"Host {given!r} is not a name this server answers to: {why} ({hosts}), so that a "
            "web page elsewhere cannot reach it through DNS rebinding. Add the name to "
            "ServerSettings.allowed_hosts (agentrt serve --allowed-host)"
        )
        return _refusal(421, msg)

    def _token(self, method: str, headers: Headers, has_body: bool) -> JSONResponse | None:
        if not self.token_keys or (method in _BODILESS and not has_body):
            return None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            msg = "this server needs a bearer token: send 'Authorization: Bearer <token>'"
            return _refusal(401, msg, {"WWW-Authenticate": "Bearer"})
        if match_token(self.token_keys, given.strip()) is None:
            msg = "the bearer token is not one this server accepts"
            return _refusal(401, msg, {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        return None

    def _declared_size(self, headers: Headers) -> JSONResponse | None:
        declared = headers.get("content-length")
        if declared is None or not declared.isdigit() or int(declared) <= self.max_body:
            return None  # no size, or a malformed one the server itself answers
        return _too_large(f"{int(declared)} bytes", self.max_body)

    async def _read_body(self, receive: Receive) -> tuple[Receive, JSONResponse | None]:
        """Read the body up to the limit; a `receive` that hands it to the app, then goes on
        with the client's messages (a disconnect)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                chunks.clear()
                break
            size += len(message.get("body", b""))
            if size > self.max_body:
                return receive, _too_large(f"over {self.max_body} bytes", self.max_body)
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        pending: list[Message] = [
            {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            if chunks
            else message
        ]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        return replay, None


def _too_large(size: str, limit: int) -> JSONResponse:
    msg = (
        f"the request body is {size}; this server reads at most {limit} bytes "
        "(ServerSettings.max_body)"
    )
    return _refusal(413, msg)


def _refusal(status: int, detail: str, headers: dict[str, Any] | None = None) -> JSONResponse:
    # Closing the connection: the client's unread body is not drained into the server.
    return JSONResponse(
        {"detail": detail}, status_code=status, headers={**(headers or {}), "Connection": "close"}
    )
