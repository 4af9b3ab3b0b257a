"""One serialisation per event: the trajectory line, the SSE `data:` and the NDJSON line are the
same bytes, made once however many streams send them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, get_args

import httpx
import pytest

from agentrt.events import Event, EventBase
from agentrt.server import create_app
from tests.helpers import MakeAgent, call, finish
from tests.server.serving import LiveServer

NAP = {"query": "Take a long nap", "strategy": "exploratory"}


class CountingSerializer:
    """An event class's own pydantic serializer, counting what it serialises by (run, seq)."""

    def __init__(self, real: Any, counts: Counter[tuple[str, int]]) -> None:
        self.real = real
        self.counts = counts

    def to_json(self, value: EventBase, **kwargs: Any) -> bytes:
        self.counts[value.run_id, value.seq] += 1
        result: bytes = self.real.to_json(value, **kwargs)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.fixture
def serialised(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, int]]:
    """How many times each event has been serialised, in this process (the server's too)."""
    counts: Counter[tuple[str, int]] = Counter()
    (union, *_) = get_args(Event)
    for cls in get_args(union):
        cls.model_rebuild()  # built now (they are deferred), so the real serializer is wrapped
        monkeypatch.setattr(
            cls, "__pydantic_serializer__", CountingSerializer(cls.__pydantic_serializer__, counts)
        )
    return counts


def test_streams_send_the_trajectory_bytes_serialised_once(
    make_agent: MakeAgent, tmp_path: Path, serialised: Counter[tuple[str, int]]
) -> None:
    """The stream that started a run (SSE) and two later ones (NDJSON, SSE) carry each event as
    the bytes of its trajectory line, and each event was serialised once for all four."""
    agent = make_agent([call("nap", seconds=0.01, label="a"), finish("Rested.")])
    with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
        owner = client.post("/runs", json=NAP, timeout=30)
        run_id = owner.headers["x-run-id"]
        again = f"/runs/{run_id}/events"
        ndjson = client.get(again, headers={"Accept": "application/x-ndjson"}, timeout=30)
        sse = client.get(again, headers={"Accept": "text/event-stream"}, timeout=30)
    (path,) = (tmp_path / "trajectories").glob(f"*/{run_id}.jsonl")
    lines = path.read_bytes().splitlines()[1:]
    as_sse = b"".join(
        b"event: %s\nid: %d\ndata: %s\n\n" % (json.loads(x)["type"].encode(), i, x)
        for i, x in enumerate(lines)
    )

    assert owner.content == sse.content == as_sse
    assert ndjson.content == b"".join(x + b"\n" for x in lines)
    assert serialised == {(run_id, seq): 1 for seq in range(len(lines))}


def test_a_copy_is_serialised_afresh() -> None:
    """An event copied with changes has its own JSON, not the original's."""
    from agentrt.events import TextDeltaEvent

    event = TextDeltaEvent(run_id="r", seq=0, t=0.0, step=1, text="before")
    assert b'"before"' in event.json_bytes
    copy = event.model_copy(update={"text": "after"})
    assert copy.json_bytes == copy.model_dump_json().encode()
    assert b'"after"' in copy.json_bytes
    assert event == TextDeltaEvent(run_id="r", seq=0, t=0.0, step=1, text="before")


async def test_a_run_outside_a_server_keeps_no_json(make_agent: MakeAgent) -> None:
    """Without a server's streams to serve, the trajectory's bytes are not kept on the events
    (they would live as long as the run's result)."""
    agent = make_agent([finish("Rested.")])
    events = [e async for e in agent.run("Take a nap", strategy="exploratory")]
    assert events[-1].type == "run_finished"
    assert not any("json_bytes" in e.__dict__ for e in events)
