"""The server's floor (`benchmarks/server.py`'s `floor` columns): what streaming the same events
at the same pace costs a bare ASGI app on the same uvicorn, without agentrt or a web framework.

Each `POST /runs` replays one run of server.py's model, recorded once when the process starts
(with agentrt itself, which then plays no further part): the request's body is read and parsed;
each event is built as a dict (its `run_id`, `seq`, `t` and `run_started`'s `started_at` made
anew), dumped with `json.dumps`, appended to the run's own trajectory file (header first) and
sent as an SSE frame; before an event, the request waits out the words the model wrote since the
one before (an `asyncio.sleep(delay)` each, as the model does), and the events made together go
out in one write, as agentrt's server sends them. Nothing else: no routing, no validation, no
task but the request's own, no listening for the client going away.

So a target that this app misses on a machine cannot be met there by any server of these
streams on uvicorn, and agentrt's excess over it is what agentrt and its framework cost.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentrt import Agent, AgentSettings, TextChunk

Template = list[tuple[int, str, dict[str, Any]]]
"""A run's events in order: the model's words written before each, its type, its other fields."""

_STAMPS = ("run_id", "seq", "t")


async def record(workspace: Path, model: type[Any], directory: Path) -> Template:
    """One run of `model` (server.py's streaming model, made without its delay) through
    agentrt, its trajectory in `directory`: its events, each with the words written before
    it."""
    words = 0

    class Counting(model):  # type: ignore[misc]
        async def stream(self, request: Any) -> Any:
            nonlocal words
            async for chunk in super().stream(request):
                words += isinstance(chunk, TextChunk)
                yield chunk

    agent = Agent(
        workspace=workspace,
        model=Counting(0.0),
        settings=AgentSettings(trajectory_dir=directory, default_strategy="bench"),
    )
    template: Template = []
    seen = 0

    def keep(event: Any) -> None:
        nonlocal seen
        fields = {k: v for k, v in event.model_dump(mode="json").items() if k not in _STAMPS}
        template.append((words - seen, fields.pop("type"), fields))
        seen = words

    run = agent.run("Look it up twice.", strategy="bench")
    run._deliver(keep)  # each event in the run's task, as it is made: the words so far exact
    async for _ in run:  # delivered elsewhere, the stream yields nothing: it runs the run
        pass
    return template


def recorded_header(directory: Path) -> dict[str, Any]:
    """The trajectory header of the run `record` made in `directory`."""
    (path,) = directory.glob("*/*.jsonl")
    header: dict[str, Any] = json.loads(path.read_bytes().split(b"\n", 1)[0])
    return header


class FloorApp:
    """The ASGI app: each request streams `template` (see the module's docstring)."""

    def __init__(
        self, header: dict[str, Any], template: Template, delay: float, directory: Path
    ) -> None:
        self.header = header
        self.template = template
        self.delay = delay
        self.directory = directory

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        json.loads(body)
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await self._stream(send)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stream(self, send: Any) -> None:
        started = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        run_id = f"{started[:19].replace('-', '').replace(':', '')}-{uuid.uuid4().hex[:8]}"
        t0 = time.perf_counter()
        frames: list[bytes] = []
        with (self.directory / f"{run_id}.jsonl").open("w") as out:
            out.write(json.dumps(self.header | {"run_id": run_id}) + "\n")
            for seq, (words, kind, fields) in enumerate(self.template):
                if words:
                    if frames:
                        await send(_chunk(frames))
                        frames = []
                    for _ in range(words):
                        await asyncio.sleep(self.delay)
                stamps = {"run_id": run_id, "seq": seq, "t": round(time.perf_counter() - t0, 6)}
                event = {"type": kind, **stamps, **fields}
                if kind == "run_started":
                    event["started_at"] = started
                line = json.dumps(event)
                out.write(line + "\n")
                frames.append(
                    b"event: %s\nid: %d\ndata: %s\n\n" % (kind.encode(), seq, line.encode())
                )
        await send(_chunk(frames))


def _chunk(frames: list[bytes]) -> dict[str, Any]:
    """The events made together, as one write of the response."""
    return {"type": "http.response.body", "body": b"".join(frames), "more_body": True}
