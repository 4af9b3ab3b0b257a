"""What a request passes before the app reads it: its Host, its token when it has a body, and
the body's size. Over raw sockets to a real server, so that "before the body is read" is seen:
the refusal arrives while the client has sent only the headers of a body it announced."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from agentrt.server import ServerSettings, create_app
from agentrt.server.guard import host_name
from tests.helpers import MakeAgent
from tests.server.serving import LiveServer

TOKEN = {"Authorization": "Bearer alpha"}


def exchange(server: LiveServer, head: str, body: bytes = b"") -> tuple[int, dict[str, str]]:
    """Send `head` (and `body`) on a connection of its own; the status and JSON body of the
    answer, read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])


def post_runs(length: int, *extra: str) -> str:
    lines = ["POST /runs HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    return "\n".join([*lines, f"Content-Length: {length}", *extra]) + "\n"


class TestTokenFirst:
    def test_no_token_is_refused_before_the_body_arrives(self, make_agent: MakeAgent) -> None:
        """256 MB announced, none sent: the 401 comes at once; the server reads nothing."""
        app = create_app(make_agent([]), ServerSettings(tokens=("alpha",)))
        with LiveServer(app) as server:
            missing = exchange(server, post_runs(256 << 20))
            wrong = exchange(server, post_runs(256 << 20, "Authorization: Bearer beta"))
        assert missing == (
            401,
            {"detail": "this server needs a bearer token: send 'Authorization: Bearer <token>'"},
        )
        assert wrong == (401, {"detail": "the bearer token is not one this server accepts"})

    def test_a_body_without_a_token_is_refused_on_a_get_too(self, make_agent: MakeAgent) -> None:
        app = create_app(make_agent([]), ServerSettings(tokens=("alpha",)))
        head = "GET /trajectories HTTP/1.1\nHost: localhost\nContent-Length: 1000000\n"
        with LiveServer(app) as server:
            assert exchange(server, head)[0] == 401


class TestBodySize:
    def test_an_announced_body_over_the_limit_is_refused_unread(
        self, make_agent: MakeAgent
    ) -> None:
        app = create_app(make_agent([]), ServerSettings(tokens=("alpha",), max_body=4096))
        with LiveServer(app) as server:
            answer = exchange(server, post_runs(256 << 20, "Authorization: Bearer alpha"))
        assert answer == (
            413,
            {
                "detail": "the request body is 268435456 bytes; this server reads at most 4096 "
                "bytes (ServerSettings.max_body)"
            },
        )

    def test_a_chunked_body_is_read_up_to_the_limit_only(self, make_agent: MakeAgent) -> None:
        """Without a declared length, the body is read until it passes the limit; no token is
        needed on a server without tokens, the limit holds all the same."""
        app = create_app(make_agent([]), ServerSettings(max_body=4096))
        head = "POST /runs HTTP/1.1\nHost: localhost\nTransfer-Encoding: chunked\n"
        chunk = b"1000\r\n" + b" " * 4096 + b"\r\n"
        with LiveServer(app) as server:
            answer = exchange(server, head, chunk * 4 + b"0\r\n\r\n")
        assert answer == (
            413,
            {
                "detail": "the request body is over 4096 bytes; this server reads at most 4096 "
                "bytes (ServerSettings.max_body)"
            },
        )

    def test_a_body_within_the_limit_reaches_the_app(self, make_agent: MakeAgent) -> None:
        """The guard hands the body it read to the app: a bad query is the app's 422."""
        app = create_app(make_agent([]), ServerSettings(tokens=("alpha",), max_body=4096))
        with LiveServer(app) as server:
            answer = httpx.post(f"{server.url}/runs", json={"query": ""}, headers=TOKEN)
        assert answer.status_code == 422
        assert answer.json()["errors"][0]["loc"] == ["body", "query"]


class TestHost:
    """A server without a token answers to loopback names only: DNS rebinding gets 421."""

    @pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:80", "[::1]:1"])
    def test_loopback_names_are_answered(self, make_agent: MakeAgent, host: str) -> None:
        with LiveServer(create_app(make_agent([]))) as server:
            answer = httpx.get(f"{server.url}/trajectories", headers={"Host": host})
        assert answer.status_code == 200

    @pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.nip.io"])
    def test_other_names_are_refused(self, make_agent: MakeAgent, host: str) -> None:
        with LiveServer(create_app(make_agent([]))) as server:
            api = httpx.get(f"{server.url}/trajectories", headers={"Host": host})
            page = httpx.get(server.url, headers={"Host": host})
            run = httpx.post(f"{server.url}/runs", json={"query": "x"}, headers={"Host": host})
        assert (api.status_code, page.status_code, run.status_code) == (421, 421, 421)
        assert api.json() == {
            "detail": f"Host {host!r} is not a name this server answers to: this server has no "
            "token, so it answers only to loopback names (localhost, 127.0.0.1, [::1]), so that "
            "a web page elsewhere cannot reach it through DNS rebinding. Add the name to "
            "ServerSettings.allowed_hosts (agentrt serve --allowed-host)"
        }

    def test_configured_names_are_answered(self, make_agent: MakeAgent) -> None:
        named = create_app(make_agent([]), ServerSettings(allowed_hosts=("Box.LAN",)))
        anything = create_app(make_agent([]), ServerSettings(allowed_hosts=("*",)))
        with LiveServer(named) as one, LiveServer(anything) as other:
            box = httpx.get(f"{one.url}/trajectories", headers={"Host": "box.lan:8000"})
            evil = httpx.get(f"{one.url}/trajectories", headers={"Host": "evil.example"})
            any_ = httpx.get(f"{other.url}/trajectories", headers={"Host": "evil.example"})
        assert (box.status_code, evil.status_code, any_.status_code) == (200, 421, 200)

    def test_a_server_with_tokens_answers_to_any_host(self, make_agent: MakeAgent) -> None:
        """A page elsewhere cannot send the token; the token is the defence there."""
        app = create_app(make_agent([]), ServerSettings(tokens=("alpha",)))
        with LiveServer(app) as server:
            answer = httpx.get(
                f"{server.url}/trajectories", headers={**TOKEN, "Host": "agents.example"}
            )
        assert answer.status_code == 200

    @pytest.mark.parametrize(
        ("header", "name"),
        [
            ("LocalHost:8000", "localhost"),
            ("[::1]:8000", "[::1]"),
            ("[::1]", "[::1]"),
            ("127.0.0.1", "127.0.0.1"),
            ("example.com:x", "example.com"),
            ("::1", "::1"),
        ],
    )
    def test_host_name(self, header: str, name: str) -> None:
        assert host_name(header) == name
