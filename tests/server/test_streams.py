"""A live run's stream: events that are ready together go out in one chunk, and a quiet SSE
stream gets a comment once the registry's keep-alive clock has struck three times."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from pathlib import Path

import anyio
import pytest

from agentrt import AgentRun, Trajectory, UserError
from agentrt.events import Event
from agentrt.server.runs import RunHandle, RunRegistry
from agentrt.server.streams import StreamFormat, run_chunks
from tests.helpers import MakeAgent, call, check_stream, finish, last

KEEPALIVE = b": keep-alive\n\n"


@pytest.fixture
async def events(make_agent: MakeAgent) -> list[Event]:
    """The events of a real run: two tool calls, then an answer."""
    agent = make_agent([call("nap", seconds=0, label="a"), call("nap", seconds=0), finish("Ok.")])
    result = await agent.run("Take two naps", strategy="exploratory")
    assert len(result.trajectory.events) > 8
    return result.trajectory.events


def sse_frames(chunk: bytes) -> list[tuple[str, int, bytes]]:
    """An SSE chunk's events as (event, id, data)."""
    frames = []
    for block in chunk.split(b"\n\n")[:-1]:
        fields = dict(line.split(b": ", 1) for line in block.split(b"\n"))
        frames.append((fields[b"event"].decode(), int(fields[b"id"]), fields[b"data"]))
    assert chunk.endswith(b"\n\n")
    return frames


async def waiting(chunks: AsyncGenerator[bytes, None]) -> asyncio.Task[bytes]:
    """The stream's next chunk, asked for in a task that is now waiting for news."""
    task = asyncio.ensure_future(anext(chunks))
    await anyio.wait_all_tasks_blocked()
    assert not task.done()
    return task


class TestCoalescing:
    @pytest.mark.parametrize("fmt", ["sse", "ndjson"])
    async def test_queued_events_go_out_together(
        self, events: list[Event], fmt: StreamFormat
    ) -> None:
        """Events published while the stream was away arrive in one chunk: whole, in order,
        each with its id; then the stream waits for more, and ends after the run's last."""
        handle = RunHandle("q", None, None)
        handle._publish(events[:1])
        chunks = run_chunks(handle, -1, fmt)
        first = await anext(chunks)
        next_chunk = await waiting(chunks)
        handle._publish(events[1:5])  # four at once, before the stream wakes
        handle._publish(events[5:7])  # and two more
        together = await next_chunk
        if fmt == "sse":
            assert sse_frames(first) == [(events[0].type, 0, events[0].json_bytes)]
            assert sse_frames(together) == [(e.type, e.seq, e.json_bytes) for e in events[1:7]]
        else:
            assert together.split(b"\n")[:-1] == [e.json_bytes for e in events[1:7]]
            assert [json.loads(line)["seq"] for line in together.split(b"\n")[:-1]] == [
                *range(1, 7)
            ]
        rest = await waiting(chunks)
        handle._publish(events[7:])
        handle.state = "ok"
        assert (await rest).count(b"\n") == (len(events) - 7) * (1 if fmt == "ndjson" else 4)
        with pytest.raises(StopAsyncIteration):
            await anext(chunks)

    async def test_resumes_after_last_event_id(self, events: list[Event]) -> None:
        """A stream after `Last-Event-ID` starts with everything after it, in one chunk."""
        handle = RunHandle("q", None, None)
        handle._publish(events)
        handle.state = "ok"
        chunks = [chunk async for chunk in run_chunks(handle, 3, "sse")]
        assert len(chunks) == 1
        assert [seq for _, seq, _ in sse_frames(chunks[0])] == [e.seq for e in events[4:]]


class TestKeepAlive:
    async def test_comment_after_three_quiet_strikes(self, events: list[Event]) -> None:
        """Two strikes of the clock wake the stream but send nothing; the third sends a
        comment, and the count starts again from there and from every event sent."""
        handle = RunHandle("q", None, None)
        handle._publish(events[:1])
        chunks = run_chunks(handle, -1, "sse")
        await anext(chunks)
        pending = await waiting(chunks)
        for _ in range(2):
            handle._strike()
            await anyio.wait_all_tasks_blocked()
            assert not pending.done()  # woken, and waiting again
        handle._strike()
        assert await pending == KEEPALIVE
        next_chunk = await waiting(chunks)
        handle._strike()
        handle._strike()
        handle._publish(events[1:2])
        assert sse_frames(await next_chunk)[0][1] == 1
        next_chunk = await waiting(chunks)
        handle._strike()
        handle._strike()
        await anyio.wait_all_tasks_blocked()
        assert not next_chunk.done()  # two strikes since the event: not yet
        handle._strike()
        assert await next_chunk == KEEPALIVE

    async def test_ndjson_gets_no_comments(self, events: list[Event]) -> None:
        """NDJSON has no comment lines: a quiet NDJSON stream stays quiet."""
        handle = RunHandle("q", None, None)
        handle._publish(events[:1])
        chunks = run_chunks(handle, -1, "ndjson")
        await anext(chunks)
        pending = await waiting(chunks)
        for _ in range(5):
            handle._strike()
        await anyio.wait_all_tasks_blocked()
        assert not pending.done()
        handle._publish(events[1:])
        handle.state = "ok"
        assert (await pending).count(b"\n") == len(events) - 1

    async def test_the_clock_strikes_live_runs(self, tmp_path: Path) -> None:
        """The registry's one clock strikes every live run's handle, every half `keepalive`."""
        registry = RunRegistry(
            tmp_path,
            max_runs=1,
            max_runs_per_token=1,
            keep_finished=0,
            keepalive=0.02,
        )
        handle = RunHandle("q", None, None)
        registry._live.add(handle)
        async with registry.running():
            with anyio.fail_after(10):
                while handle.strikes < 3:
                    await handle.changed()


class TestDelivery:
    async def test_events_go_to_the_function_from_the_run_task(
        self, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """A delivered run hands every event, in order, to the function in the run's own
        tasks (not the reader's); its iterator yields nothing and ends with the run."""
        agent = make_agent([call("nap", seconds=0, label="a"), finish("Ok.")])
        run = agent.run("Take a nap", strategy="exploratory")
        got: list[Event] = []
        tasks: set[asyncio.Task[object] | None] = set()

        def take(event: Event) -> None:
            got.append(event)
            tasks.add(asyncio.current_task())

        run._deliver(take)
        assert [e async for e in run] == []
        (path,) = (tmp_path / "trajectories").glob("*/*.jsonl")
        assert got == Trajectory.read(path).events
        check_stream(got)
        assert asyncio.current_task() not in tasks  # the run's (and its tools')

    async def test_a_cancelled_run_delivers_its_end(self, make_agent: MakeAgent) -> None:
        """Its reader cancelled while a tool runs (as the registry cancels a run), a delivered
        run still hands over `run_finished: cancelled`: the server's streams end with it."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        run = agent.run("Take a long nap", strategy="exploratory")
        got: list[Event] = []
        started = anyio.Event()

        def take(event: Event) -> None:
            got.append(event)
            if event.type == "tool_started":
                started.set()

        run._deliver(take)
        async with anyio.create_task_group() as tg:
            tg.start_soon(collect, run)
            await started.wait()
            tg.cancel_scope.cancel()
        check_stream(got)
        assert (last(got).status, last(got).error) == ("cancelled", "the run was cancelled")

    async def test_not_after_reading(self, make_agent: MakeAgent) -> None:
        """Events already read cannot be delivered elsewhere."""
        run = make_agent([finish("Ok.")]).run("Hi", strategy="exploratory")
        async with run:
            await anext(run)
            with pytest.raises(UserError, match="deliver before iterating"):
                run._deliver(lambda e: None)


async def collect(run: AgentRun[str]) -> None:
    async with run:  # closed however it ends, as the registry closes it
        async for _ in run:
            pass
