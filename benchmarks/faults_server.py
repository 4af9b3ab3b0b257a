"""Faults tried on the HTTP server (`agentrt.server`): requests with bad tokens, oversized
bodies, foreign Host headers. Loopback only.

    .venv/bin/python benchmarks/faults_server.py

`measure()` returns rows for `benchmarks/faults.py`. The servers run in a thread of this
process (uvicorn, as `agentrt serve` runs it) over a scripted model that is never asked: no
request here should start a run. Bodies are announced over raw sockets, so that a server that
waited for a body it should refuse unread shows as a failure (no answer in 10 s), and the
process's peak memory is read before and after a body is actually sent.
"""

from __future__ import annotations

import asyncio
import resource
import select
import socket
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from agentrt import Agent, AgentSettings, ScriptedModel
from agentrt.server import Server, ServerSettings, create_app

WORKSPACE = Path(__file__).parent / "workspace"
FOREIGN_HOSTS = [
    "evil.example",
    "evil.example:8000",
    "127.0.0.1.nip.io",
    "localhost.evil.example",
    "0.0.0.0",
    "[::ffff:127.0.0.1]",
    "10.0.0.1",
    "LOCALHOST.",
]
ROUTES = [
    ("GET", "/"),
    ("GET", "/trajectories"),
    ("GET", "/runs/r1"),
    ("POST", "/runs"),
    ("POST", "/runs/r1/cancel"),
    ("POST", "/sessions/s1/messages"),
]
AUTH = [
    "",
    "Authorization: Bearer wrong",
    "Authorization: Basic YWxwaGE=",
    "Authorization: Bearer ",
]


@contextmanager
def _serving(settings: ServerSettings) -> Iterator[int]:
    """A server with `settings` on a free loopback port, until the block ends."""
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(
            workspace=WORKSPACE,
            model=ScriptedModel([]),
            settings=AgentSettings(trajectory_dir=Path(tmp), default_strategy="bench"),
        )
        sock = socket.create_server(("127.0.0.1", 0))
        server = Server(uvicorn.Config(create_app(agent, settings), log_level="critical"))
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=lambda: loop.run_until_complete(server.serve(sockets=[sock])), daemon=True
        )
        thread.start()
        try:
            yield sock.getsockname()[1]
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            sock.close()


def _status(port: int, head: list[str], body: Iterable[bytes] = ()) -> int | None:
    """The status of the answer to `head`, `body` sent in pieces until an answer comes; None
    if none came within 10 s."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for piece in body:
                if select.select([sock], [], [], 0)[0]:
                    break  # answered: the rest of the body is not wanted
                sock.sendall(piece)
        except OSError:
            # The server answered and closed while a piece was on its way (a refused body is
            # not read): its answer is still waiting to be read.
            pass
        try:
            answer = sock.recv(64)
        except OSError:
            return None
    return int(answer.split()[1]) if answer.startswith(b"HTTP/") else None


def _row(attempt: str, results: list[bool], lost: str) -> dict[str, Any]:
    failures = results.count(False)
    return {
        "area": "server",
        "attempt": attempt,
        "attempts": len(results),
        "failures": failures,
        "lost": lost if failures else "nothing",
    }


def _bad_auth(port: int) -> dict[str, Any]:
    results = []
    for method, path in ROUTES[1:]:
        for auth in AUTH:
            head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Length: 2"]
            results.append(_status(port, [*head, auth] if auth else head, [b"{}"]) == 401)
    return _row("API requests with no or a bad token", results, "a route answered without one")


def _bodies(port: int, size: int) -> dict[str, Any]:
    token = "Authorization: Bearer alpha"
    announced = ["POST /runs HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {256 << 20}"]
    chunked = ["POST /runs HTTP/1.1", "Host: 127.0.0.1", "Transfer-Encoding: chunked", token]
    chunk = b"%x\r\n" % (64 << 10) + b" " * (64 << 10) + b"\r\n"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    results = [
        _status(port, announced) == 401,
        _status(port, [*announced, token]) == 413,
        _status(port, chunked, [chunk] * 32) == 413,
        # Actually sent, without a token: refused, and the server does not keep it.
        _status(port, [*announced[:2], f"Content-Length: {size}"], _spaces(size)) == 401,
    ]
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    # Peak memory moves with anything else the process does: a body kept would show as half
    # of it or more, above the noise.
    ok = grown < max(size / 2, 32 << 20) / (1 << 20)
    results.append(ok)
    lost = f"peak memory +{grown:.0f} MB for a {size >> 20} MB body"
    row = _row("oversized bodies, with and without a token", results, lost)
    row["lost"] = (
        row["lost"] if not ok or row["failures"] else f"nothing (peak memory +{grown:.0f} MB)"
    )
    return row


def _spaces(size: int) -> Iterator[bytes]:
    piece = b" " * (64 << 10)
    for _ in range(size // len(piece)):
        yield piece


def _hosts(port: int) -> dict[str, Any]:
    results = []
    for host in FOREIGN_HOSTS:
        for method, path in ROUTES:
            head = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Content-Length: 0"]
            results.append(_status(port, head) == 421)
    return _row("foreign Host headers (DNS rebinding)", results, "a route answered a foreign Host")


def measure(size: int = 64 << 20) -> list[dict[str, Any]]:
    """The rows of the server area; `size`: bytes of the body actually sent without a token."""
    with _serving(ServerSettings(tokens=("alpha",), max_body=1 << 20)) as port:
        rows = [_bad_auth(port), _bodies(port, size)]
    with _serving(ServerSettings()) as port:
        rows.append(_hosts(port))
    return rows


if __name__ == "__main__":
    for row in measure():
        print(f"{row['attempt']:<44} {row['attempts']:>5} {row['failures']:>5}  {row['lost']}")
