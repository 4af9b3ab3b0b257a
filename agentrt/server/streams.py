"""Internal. Events on the wire: SSE or NDJSON, chosen by `Accept`, or a UI protocol over SSE
(`?protocol=`), from a live run or a file.

    SSE      event: <type>\\nid: <seq>\\ndata: <event json>\\n\\n     text/event-stream
    NDJSON   <event json>\\n                                         application/x-ndjson
    ag-ui    data: <AG-UI event json>\\n\\n …                        text/event-stream
    vercel   data: <UI message chunk json>\\n\\n …                   text/event-stream

A UI protocol's frames carry `id: <seq>` on the last frame an event gives, so that a client
resumes after `Last-Event-ID` where it stopped: the stream's translator is fed the events up to
that seq first, unsent, so that it goes on in the state it was in.

Each event goes out as its `json_bytes`: the very bytes of its trajectory line, serialised once
for the trajectory and every stream. Events that are ready together go out in one chunk. An SSE
stream that has been quiet for a while gets a comment line, which keeps proxies from closing it
and costs clients nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from typing import Literal

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from agentrt.events import Event
from agentrt.server.protocols import Translator, UiProtocol, translator
from agentrt.server.protocols.vercel import HEADER as VERCEL_HEADER
from agentrt.server.runs import RunHandle
from agentrt.trajectory.format import Trajectory

__all__ = [
    "NDJSON",
    "SSE",
    "Encoder",
    "EventStream",
    "StreamFormat",
    "encode",
    "file_chunks",
    "negotiate",
    "relay_chunks",
    "run_chunks",
]

SSE = "text/event-stream"
NDJSON = "application/x-ndjson"
StreamFormat = Literal["sse", "ndjson"] | UiProtocol
"""agentrt's events as SSE or NDJSON, or a UI protocol's frames (over SSE)."""

_FORMATS: dict[str, StreamFormat] = {
    SSE: "sse",
    NDJSON: "ndjson",
    # Other names NDJSON goes by.
    "application/jsonl": "ndjson",
    "application/jsonlines": "ndjson",
    # Anything at all: SSE, what browsers and most clients stream.
    "*/*": "sse",
    "text/*": "sse",
}

_FILE_BATCH = 256


def negotiate(
    accept: str | None, offered: tuple[StreamFormat, ...] = ("sse", "ndjson")
) -> StreamFormat | None:
    """The format to stream in for an `Accept` header, among those `offered`; None when it
    allows none of them.

    The highest `q` wins, the first listed among equals; no header means SSE.
    """
    if not accept or not accept.strip():
        return "sse"
    best: tuple[float, StreamFormat] | None = None
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        fmt = _FORMATS.get(media.lower())
        if fmt is None or fmt not in offered:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0 and (best is None or q > best[0]):
            best = (q, fmt)
    return best[1] if best else None


def encode(events: list[Event], fmt: StreamFormat) -> bytes:
    """agentrt's own events on the wire, each its `json_bytes` (its trajectory line, serialised
    once for every stream); a UI protocol's frames need an `Encoder`, which keeps the
    protocol's state from one batch to the next."""
    if fmt == "ndjson":
        return b"".join([e.json_bytes + b"\n" for e in events])
    return b"".join(
        [
            b"event: %s\nid: %d\ndata: %s\n\n" % (e.type.encode(), e.seq, e.json_bytes)
            for e in events
        ]
    )


class Encoder:
    """One stream's events as bytes, batch after batch, in `fmt`."""

    def __init__(self, fmt: StreamFormat) -> None:
        self.fmt = fmt
        self._translator: Translator | None = (
            translator(fmt) if fmt in ("ag-ui", "vercel") else None
        )

    def skip(self, events: list[Event]) -> None:
        """Take in the events a client already has (those up to its `Last-Event-ID`)
        without sending them: a protocol's frames after them depend on them."""
        if self._translator is not None:
            for e in events:
                self._translator.frames(e)

    def encode(self, events: list[Event]) -> bytes:
        if self._translator is None:
            return encode(events, self.fmt)
        out = []
        for e in events:
            frames = self._translator.frames(e)
            if frames:
                out += [f"data: {f}\n\n" for f in frames[:-1]]
                out.append(f"id: {e.seq}\ndata: {frames[-1]}\n\n")
        return "".join(out).encode()


def run_chunks(handle: RunHandle, after: int, fmt: StreamFormat) -> AsyncGenerator[bytes, None]:
    """The events of a run held in memory with `seq > after`, then each as it comes, until
    the run's last."""
    # The list is taken now, not once the response starts to stream: by then a quick run may
    # have ended and been evicted, which gives the handle an empty list in place of this one.
    return _follow(handle, handle.events, after, fmt)


async def _follow(
    handle: RunHandle, events: list[Event], after: int, fmt: StreamFormat
) -> AsyncGenerator[bytes, None]:
    encoder = Encoder(fmt)
    encoder.skip(events[: after + 1])
    index = after + 1
    # The registry's keep-alive clock wakes the stream (`RunRegistry.keepalive`): no timer of
    # its own per wait, which cost as much as the rest of the wake-up.
    sent = handle.strikes
    while True:
        if index < len(events):
            batch, index = events[index:], len(events)
            yield encoder.encode(batch)
            sent = handle.strikes
            continue
        if not handle.live:
            return
        await handle.changed()
        if handle.strikes - sent >= 3 and index == len(events) and fmt != "ndjson":
            yield b": keep-alive\n\n"
            sent = handle.strikes


async def relay_chunks(
    batches: AsyncGenerator[list[Event], None], after: int, fmt: StreamFormat, keepalive: float
) -> AsyncGenerator[bytes, None]:
    """The events with `seq > after` of a run another worker holds, as the relay reads them
    (`Relay.follow`: every event from the first, an empty batch when it has been quiet)."""
    encoder = Encoder(fmt)
    quiet_since = anyio.current_time()
    async with contextlib.aclosing(batches):
        async for batch in batches:
            encoder.skip([e for e in batch if e.seq <= after])
            fresh = [e for e in batch if e.seq > after]
            if fresh:
                quiet_since = anyio.current_time()
                yield encoder.encode(fresh)
            elif anyio.current_time() - quiet_since >= keepalive and fmt != "ndjson":
                quiet_since = anyio.current_time()
                yield b": keep-alive\n\n"


async def file_chunks(path: Path, after: int, fmt: StreamFormat) -> AsyncGenerator[bytes, None]:
    """The events of a recorded run with `seq > after`."""
    trajectory = await anyio.to_thread.run_sync(Trajectory.read, path)
    encoder = Encoder(fmt)
    encoder.skip(trajectory.events[: after + 1])
    events = trajectory.events[after + 1 :]
    for start in range(0, len(events), _FILE_BATCH):
        yield encoder.encode(events[start : start + _FILE_BATCH])


class EventStream(StreamingResponse):
    """A streamed response that reports when it is over, however it ended.

    It listens for the client's disconnect while it streams, and stops streaming at once when
    it comes; `on_close` then runs, which is how the owner's disconnect cancels a run.
    """

    def __init__(
        self,
        chunks: AsyncGenerator[bytes, None],
        fmt: StreamFormat,
        *,
        on_close: Callable[[], None] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        fixed = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        if fmt == "vercel":
            fixed[VERCEL_HEADER[0]] = VERCEL_HEADER[1]
        super().__init__(
            chunks,
            media_type=NDJSON if fmt == "ndjson" else SSE,
            headers={**fixed, **(headers or {})},
        )
        self._chunks = chunks
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Starlette listens for the disconnect only under ASGI servers older than spec 2.4;
        # under newer ones it learns of it on its next write, which a run waiting on a long
        # tool may not make for minutes (and an NDJSON stream sends no keep-alives). So listen
        # here whatever the server. The listener gets the new task and the stream keeps this
        # one: the first events go out without waiting a turn of the event loop, which with
        # 200 runs starting at once is most of their latency.
        try:
            async with anyio.create_task_group() as tg:

                async def listen() -> None:
                    await self.listen_for_disconnect(receive)
                    tg.cancel_scope.cancel()

                tg.start_soon(listen)
                # OSError: how an ASGI 2.4 server reports the client gone.
                with contextlib.suppress(OSError):
                    await self.stream_response(send)
                tg.cancel_scope.cancel()
        finally:
            if self._on_close is not None:
                self._on_close()
            with anyio.CancelScope(shield=True):
                await self._chunks.aclose()
