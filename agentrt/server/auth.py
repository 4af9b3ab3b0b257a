"""Internal. Bearer tokens: who may start and read runs, and the rule that exposes no server without
one.

Every API route needs `Authorization: Bearer <token>` when the server has tokens; the web page
and the OpenAPI schema do not (they hold nothing secret; the page asks for the token). All
holders of a token see the same runs: tokens gate access and share out the run limits, they do
not separate users.

A server without tokens serves its API over loopback only. `agentrt serve` refuses to bind
elsewhere (`check_exposure`); and since `create_app` may be served by any ASGI server, bound
anywhere, every request is checked too: one that reached the server at an address beyond
loopback is refused (403), and one whose Host is not a loopback name is refused (421) before
it reaches the app (`guard.RequestGuard`: DNS rebinding).
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from collections.abc import Sequence
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from agentrt.exceptions import UserError

__all__ = [
    "LOOPBACK_NAMES",
    "Caller",
    "CallerDep",
    "authenticate",
    "check_exposure",
    "is_loopback",
    "match_token",
    "token_keys",
]

Caller = str | None
"""A short, stable name for the token a request came with (None when the server has none):
what per-token limits count by, and what logs may show."""

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
"""The host names (as a `Host` header writes them, without the port) a server without a token
answers to."""

_scheme = HTTPBearer(
    auto_error=False,
    description="Required when the server was started with tokens (`agentrt serve --token`).",
)


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False  # a name, which may resolve to anything
    # An IPv4 client of a dual-stack socket shows as ::ffff:127.0.0.1, which Python before
    # 3.13 does not count as loopback.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def check_exposure(host: str, tokens: Sequence[str]) -> None:
    """Refuse to serve beyond loopback without a token: anyone who could reach the address
    could run the agent, and its tools, on this machine.

    :raises UserError: `host` is not a loopback address and `tokens` is empty
    """
    if not tokens and not is_loopback(host):
        msg = (
            f"refusing to serve on {host} without a token: anyone who can reach it could run "
            "the agent and its tools. Give --token (or set AGENTRT_TOKEN), or bind to 127.0.0.1"
        )
        raise UserError(msg)


def token_keys(tokens: Sequence[str]) -> dict[str, str]:
    """Each token with a short, stable name for it that does not reveal it (for per-token
    counters and logs)."""
    return {token: hashlib.sha256(token.encode()).hexdigest()[:12] for token in tokens}


def match_token(keys: dict[str, str], given: str) -> str | None:
    """The name of the token `given` is, among `keys` (`token_keys`), or None."""
    raw = given.encode()
    # Compare with every token, in constant time, so that timing tells nothing about any.
    found = None
    for token, key in keys.items():
        if secrets.compare_digest(raw, token.encode()):
            found = key
    return found


async def authenticate(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_scheme)],
) -> Caller:
    """Check the bearer token against the app's (`app.state.token_keys`); say who called.

    A coroutine though it never waits: FastAPI runs a plain function dependency in a worker
    thread, a round trip through the thread pool for every request."""
    keys: dict[str, str] = request.app.state.token_keys
    if not keys:
        # The local address the request arrived at (None, or no port, for a Unix socket).
        server = request.scope.get("server")
        if server is not None and server[1] is not None and not is_loopback(server[0]):
            msg = (
                f"this server has no token, so it serves over loopback only, and this request "
                f"reached it at {server[0]}: start it with a token (agentrt serve --token)"
            )
            raise HTTPException(403, msg)
        return None
    if credentials is None:
        msg = "this server needs a bearer token: send 'Authorization: Bearer <token>'"
        raise HTTPException(401, msg, headers={"WWW-Authenticate": "Bearer"})
    found = match_token(keys, credentials.credentials)
    if found is None:
        msg = "the bearer token is not one this server accepts"
        raise HTTPException(401, msg, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    return found


CallerDep = Annotated[Caller, Depends(authenticate)]
"""A route parameter that is the caller, its token checked."""
