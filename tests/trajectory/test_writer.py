"""Trajectories: written as the run goes, read back whole, rendered, replayed."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentrt import (
    ScriptedModel,
    ToolFinishedEvent,
    Trajectory,
    TurnStartedEvent,
    UserError,
    __version__,
)
from agentrt.events import event_adapter
from agentrt.run import EventFeed, RunContext
from agentrt.trajectory.replay import replay
from agentrt.trajectory.writer import TrajectoryWriter
from tests.helpers import TEST_WORKSPACE, MakeAgent, call, classified, finish, header


async def recorded(make_agent: MakeAgent, token_delay: float = 0.0) -> Trajectory:
    agent = make_agent(
        [
            classified("exploratory"),
            "Adding both at once. "
            + call("add", a=2, b=3)
            + call("echo", text="hi")
            + " Then done.",
            call("finish", answer="2 + 3 = 5"),
        ],
        token_delay=token_delay,
    )
    result = await agent.run("What is 2 + 3?")
    assert result.path is not None
    return Trajectory.read(result.path)


async def test_file_layout(make_agent: MakeAgent, tmp_path: Path) -> None:
    """One JSONL file per run under <dir>/<date>/<run_id>.jsonl: a header, then every event."""
    t = await recorded(make_agent)
    (path,) = (tmp_path / "trajectories").glob("*/*.jsonl")
    assert path.name == f"{t.header.run_id}.jsonl"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["type"] == "header"
    assert header["format_version"] == 1
    assert header["agentrt_version"] == __version__
    assert header["model"] == "scripted"
    assert header["strategy"] == "exploratory"
    assert set(header["tools"]) >= {"add", "echo", "finish"}
    assert all(len(h) == 16 for h in header["tools"].values())
    assert [json.loads(x)["seq"] for x in lines[1:]] == list(range(len(lines) - 1))
    assert json.loads(lines[-1])["type"] == "run_finished"


async def test_turned_off(make_agent: MakeAgent, tmp_path: Path) -> None:
    """With no folder, no file: the result's trajectory is kept in memory, whole."""
    agent = make_agent(["hi"], trajectory_dir=None)
    run = agent.run("Hello", strategy="direct")
    streamed = [event async for event in run]
    assert run.result.path is None
    assert not (tmp_path / "trajectories").exists()
    assert [e.json_bytes for e in run.result.trajectory.events] == [e.json_bytes for e in streamed]


async def test_the_result_reads_its_events_back_from_the_file(make_agent: MakeAgent) -> None:
    """A run holds no events while it goes: its result reads them from the trajectory file
    the first time they are asked for, then keeps them; once the file is gone, asking says
    which file and why."""
    agent = make_agent([classified("exploratory"), call("add", a=2, b=3), finish("5")])
    run = agent.run("What is 2 + 3?")
    streamed = [event.json_bytes async for event in run]
    result = run.result
    assert result.path is not None
    assert [e.json_bytes for e in result.trajectory.events] == streamed
    assert result.trajectory is result.trajectory  # read once
    assert result.path.read_bytes().splitlines()[1:] == streamed

    again = await agent.run("What is 2 + 3?")
    assert again.path is not None
    again.path.unlink()
    with pytest.raises(UserError, match=rf"trajectory {again.path} cannot be read back"):
        _ = again.trajectory


def test_events_a_full_disk_refused_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a write fails (here the disk fills in the middle of the second write), the writer
    stops writing and keeps the events the file lacks: the trajectory it gives back is whole,
    the first write's events read from the file and the rest from memory."""
    path = tmp_path / "run.jsonl"
    writer = TrajectoryWriter(path)
    ctx = RunContext("run", ScriptedModel([]), header(), writer)
    real_write = os.write
    writes = 0

    def fill_up(fd: int, data: memoryview | bytes) -> int:
        nonlocal writes
        writes += 1
        if writes == 1:
            return real_write(fd, data)
        real_write(fd, bytes(data[:10]))  # a torn line, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", fill_up)
    for step in range(1, 4):
        ctx.emit(TurnStartedEvent, step=step)
        writer.flush(ctx.header)
    monkeypatch.undo()
    assert writes == 2  # the third flush does not try
    assert len(path.read_bytes().splitlines()) == 3  # the header, the first event, a torn line
    recorded = writer.recorded(ctx.header)
    assert [(e.seq, e.type) for e in recorded.events] == [(n, "turn_started") for n in range(3)]


async def test_markdown(make_agent: MakeAgent) -> None:
    md = (await recorded(make_agent)).to_markdown()
    assert md.startswith("# Run ")
    assert "**Query:** What is 2 + 3?" in md
    assert "| scripted | exploratory | ok | 2 |" in md
    assert "Classified as **exploratory** (model)." in md
    assert "Adding both at once." in md
    assert '- call `call_1_1` **add** `{"a": 2, "b": 3}`' in md
    assert "## Answer\n\n2 + 3 = 5" in md
    assert "Tool calls: add × 1, echo × 1, finish × 1" in md


def test_bad_file(tmp_path: Path) -> None:
    """A damaged file is refused with the line at fault."""
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type": "header"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: not a trajectory header"):
        Trajectory.read(path)


class TestReplay:
    async def test_identical(self, make_agent: MakeAgent) -> None:
        """Replaying with today's (unchanged) code reproduces every event. The recording
        streamed slowly, so its tools ran while the model wrote; the replay streams at once,
        so they run after: an interleaving of timing, not a difference."""
        t = await recorded(make_agent, token_delay=0.005)
        started = next(e.seq for e in t.events if e.type == "tool_started")
        turn_end = next(e.seq for e in t.events if e.type == "model_response" and e.step == 1)  # type: ignore[union-attr]
        assert started < turn_end
        again, difference = await replay(t)
        assert difference is None
        assert again.finished is not None
        assert again.finished.answer == "2 + 3 = 5"

    async def test_a_changed_tool_is_found(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """When the code changes, replay points at the first event that differs."""
        t = await recorded(make_agent)
        changed = Path(shutil.copytree(TEST_WORKSPACE, tmp_path / "changed"))
        pack = changed / "tools" / "testing.py"
        pack.write_text(pack.read_text().replace("return a + b", "return a * b"))
        _, difference = await replay(t, workspace=changed)
        assert difference is not None
        assert difference.recorded is not None
        assert difference.replayed is not None
        assert difference.recorded["type"] == "tool_finished"
        assert (difference.recorded["output"], difference.replayed["output"]) == (5, 6)


async def test_a_malformed_event_is_never_written(tmp_path: Path) -> None:
    """`RunContext.emit` validates every event it builds: one that is not a member of the
    published union raises where it is emitted, before it takes a `seq`, so neither the
    trajectory nor the stream ever gets it, and the run's events stay gap-free."""
    path = tmp_path / "run.jsonl"
    ctx = RunContext("run", ScriptedModel([]), header(), TrajectoryWriter(path))
    feed = EventFeed()
    ctx.attach(feed)
    ctx.emit(TurnStartedEvent, step=1)
    malformed: list[dict[str, Any]] = [
        {"status": "weird"},  # not one of the `Literal`'s values
        {"duration": "fast"},  # not a float
        {"output": object()},  # not JSON
        {"name": None},  # a required field left empty
        {"unknown": 1},  # a field the event does not have (ignored by the model: see below)
    ]
    fields = {"step": 1, "call_id": "c1", "name": "noop", "status": "ok", "duration": 0.0}
    for bad in malformed[:-1]:
        with pytest.raises(ValidationError):
            ctx.emit(ToolFinishedEvent, **{**fields, **bad})
    with pytest.raises(ValidationError):
        ctx.emit(ToolFinishedEvent, step=1, call_id="c1", status="ok", duration=0.0)
    # An unknown field is dropped, as pydantic drops it: the event written is still whole.
    ctx.emit(ToolFinishedEvent, **fields, **malformed[-1])
    ctx.close()
    lines = path.read_bytes().splitlines()[1:]
    written = [event_adapter.validate_json(line) for line in lines]
    streamed = []
    while (event := await feed.get()) is not None:
        streamed.append(event)
    assert [(e.seq, e.type) for e in written] == [(0, "turn_started"), (1, "tool_finished")]
    assert [e.json_bytes for e in streamed] == lines
    assert b"unknown" not in lines[1]


def test_events_given_the_same_fields_share_one_set_of_their_names() -> None:
    """pydantic keeps, per instance, the names of the fields it was given (728 bytes once five);
    `emit` lets events given the same share one, and a copy with an update gets its own."""
    ctx = RunContext("run", ScriptedModel([]), header(), None)
    first = ctx.emit(
        ToolFinishedEvent, step=1, call_id="c1", name="noop", status="ok", duration=0.0
    )
    second = ctx.emit(
        ToolFinishedEvent, step=2, call_id="c2", name="noop", status="ok", duration=0.0
    )
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    assert first.model_fields_set == {
        "run_id",
        "seq",
        "t",
        "step",
        "call_id",
        "name",
        "status",
        "duration",
    }
    copied = first.model_copy(update={"cached": True})
    assert copied.model_fields_set == first.model_fields_set | {"cached"}
    assert "cached" not in second.model_fields_set
    assert first.model_dump(exclude_unset=True).keys() == first.model_fields_set
