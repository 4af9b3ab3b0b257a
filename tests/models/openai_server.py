"""An OpenAI-compatible chat-completions server for tests, failing on cue.

It speaks HTTP/1.1 by hand over asyncio streams, so a reply can stop anywhere: before its
headers, between two events, in the middle of a line. Each request takes the next `Reply` of
the script; every request is recorded with its headers and JSON body.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self


@dataclass(frozen=True)
class Cut:
    """Close the connection at once, whatever was sent so far."""


@dataclass(frozen=True)
class Stall:
    """Send nothing more; wait until the client hangs up."""


Piece = str | Cut | Stall
"""Part of a streamed reply: SSE text (sent as one HTTP chunk), or an action."""


@dataclass
class Reply:
    """One scripted response."""

    status: int = 200
    pieces: list[Piece] = field(default_factory=list)
    """For a 200 event stream, the body piece by piece; otherwise the body is their text."""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    before: Cut | Stall | None = None
    """What to do instead of sending the status line and headers, if anything."""


@dataclass
class Received:
    """One request as the server read it."""

    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: dict[str, Any]
    hung_up: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the client closed the connection while this request's reply was open."""


def sse(payload: Any) -> str:
    return f"data: {json.dumps(payload)}\n\n"


DONE = "data: [DONE]\n\n"


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> str:
    """One `chat.completion.chunk` event; with `usage` and no delta, the final usage chunk."""
    payload: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [],
    }
    if delta is not None or finish is not None:
        payload["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        payload["usage"] = usage
    return sse(payload)


def text_reply(*deltas: str, usage: dict[str, int] | None = None, done: bool = True) -> Reply:
    """A streamed text answer: a role-only delta, one delta per string, the finish, usage."""
    pieces: list[Piece] = [chunk({"role": "assistant", "content": ""})]
    pieces += [chunk({"content": d}) for d in deltas]
    pieces.append(chunk({}, finish="stop"))
    if usage is not None:
        pieces.append(chunk(usage=usage))
    if done:
        pieces.append(DONE)
    return Reply(pieces=pieces)


def tool_call_delta(index: int, id: str, name: str, arguments: str) -> str:
    """A `tool_calls` delta that repeats the id and name, as vLLM and llama.cpp do."""
    function = {"name": name, "arguments": arguments}
    return chunk(
        {"tool_calls": [{"index": index, "id": id, "type": "function", "function": function}]}
    )


def error_reply(status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    text = body if isinstance(body, str) else json.dumps(body)
    return Reply(
        status=status,
        pieces=[text],
        headers=headers or {},
        content_type="application/json" if not isinstance(body, str) else "text/plain",
    )


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    418: "I'm a teapot",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class FakeServer:
    """Serves its script on 127.0.0.1 on a free port; use as `async with`."""

    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[Received] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def add(self, *replies: Reply) -> None:
        self.script.extend(replies)

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        # Python 3.11 leaves connection handlers running after close. Closing their
        # connections ends them normally; a cancelled handler would be logged as an error.
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._tasks)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while (received := await _read_request(reader)) is not None:
                self.requests.append(received)
                reply = self.script.popleft() if self.script else _unscripted()
                if not await _send(reply, reader, writer, received):
                    break
        except ConnectionError:
            pass
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


def _unscripted() -> Reply:
    return error_reply(418, {"error": {"message": "the fake server has no reply scripted"}})


async def _read_request(reader: asyncio.StreamReader) -> Received | None:
    line = await reader.readline()
    if not line:
        return None
    path = line.decode().split()[1]
    headers: dict[str, str] = {}
    while (header := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = header.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    raw = await reader.readexactly(int(headers.get("content-length", "0")))
    return Received(path=path, headers=headers, body=json.loads(raw) if raw else {})


async def _send(
    reply: Reply, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: Received
) -> bool:
    """Send one reply; False when the connection must not be used again."""
    if reply.before is not None:
        return await _act(reply.before, reader, received)
    streaming = reply.status == 200 and reply.content_type == "text/event-stream"
    headers = {"content-type": reply.content_type, **reply.headers}
    if streaming:
        headers["transfer-encoding"] = "chunked"
    else:
        body = "".join(p for p in reply.pieces if isinstance(p, str)).encode()
        headers["content-length"] = str(len(body))
    head = f"HTTP/1.1 {reply.status} {_REASONS[reply.status]}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    writer.write(head.encode())
    if not streaming:
        writer.write(body)
        await writer.drain()
        return True
    for piece in reply.pieces:
        if not isinstance(piece, str):
            await writer.drain()
            return await _act(piece, reader, received)
        data = piece.encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return True


async def _act(action: Cut | Stall, reader: asyncio.StreamReader, received: Received) -> bool:
    if isinstance(action, Stall):
        # The request was read whole, so the next thing the client can do is hang up.
        await reader.read()
        received.hung_up.set()
    return False
