"""The shared workload: a zero-latency model, 10 turns × 4 parallel no-op tools.

Each run makes 11 model calls: ten turns that each call `noop` four times in parallel (with
distinct arguments, so the duplicate guard never answers), then a plain-text answer. The model
answers each call whole, at once, as a non-streaming server would; it is stateless (the turn
is read off the conversation), so one instance serves any number of concurrent runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    ModelChunk,
    ModelRequest,
    RunFinishedEvent,
    TextChunk,
    Usage,
    UsageChunk,
    event_adapter,
)

TURNS = 10
WORKSPACE = Path(__file__).parent / "workspace"


SHM = Path("/dev/shm")


def scratch() -> tempfile.TemporaryDirectory[str]:
    """Where the timed runs write their trajectories: tmpfs, when the machine has room in one.

    agentrt and the instrumented floor each create a file per run, and what creating one costs
    is the file system's, not either side's: on the development machine's disk 0.1-0.6 ms of
    system CPU a file, varying with the disk's state: about 60 µs added alike to both sides'
    turns (one file for a run of 10), which pulled the ratio toward 1 and made it swing between
    runs (same session: 2.45x per turn on disk, 3.18x on tmpfs; per tool call 2.8-2.9x on
    both)."""
    room = SHM.is_dir() and os.access(SHM, os.W_OK) and shutil.disk_usage(SHM).free > 256 << 20
    return tempfile.TemporaryDirectory(dir=SHM if room else None)


class BenchModel:
    native_tools = False  # it writes its calls as text, which the prompt describes

    def __init__(self, tools_per_turn: int) -> None:
        self.turns = []
        for t in range(TURNS):
            calls = (
                "<tool_call>"
                + json.dumps({"name": "noop", "arguments": {"i": t * tools_per_turn + k}})
                + "</tool_call>"
                for k in range(tools_per_turn)
            )
            self.turns.append("".join(calls))
        self.turns.append("All done.")

    @property
    def name(self) -> str:
        return "bench"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        yield TextChunk(text=self.turns[turn])
        yield UsageChunk(usage=Usage(prompt_tokens=10, completion_tokens=10))


def make_agent(
    trajectory_dir: Path | None, tools_per_turn: int = 4, instrument: Any = False
) -> Agent:
    """The workload's agent; `instrument` as `Agent(instrument=…)` takes it."""
    return Agent(
        workspace=WORKSPACE,
        model=BenchModel(tools_per_turn),
        settings=AgentSettings(trajectory_dir=trajectory_dir, default_strategy="bench"),
        instrument=instrument,
    )


async def run_once(agent: Agent) -> None:
    """One run, consumed as a streaming backend would: each event handled, none retained."""
    end = None
    async for event in agent.run("bench", strategy="bench"):
        if isinstance(event, RunFinishedEvent):
            end = event
    if end is None or end.status != "ok":
        raise RuntimeError(f"a benchmark run did not end ok: {end}")


async def floor_once(tools_per_turn: int = 4) -> None:
    """The same workload with nothing but asyncio: the cost of the work itself."""

    async def noop(i: int) -> int:
        return i

    messages: list[dict[str, object]] = [{"role": "user", "content": "bench"}]
    for t in range(TURNS):
        results = await asyncio.gather(
            *(noop(t * tools_per_turn + k) for k in range(tools_per_turn))
        )
        messages.append({"role": "assistant", "content": ""})
        messages.extend({"role": "tool", "content": str(r)} for r in results)
    messages.append({"role": "assistant", "content": "All done."})


# The instrumented floor: what this workload costs a plain asyncio program that reports as
# agentrt does, i.e. the bare floor's loop (the conversation kept as dict messages, as any
# loop must to send it back to its model) that also builds the same events (same types, keys
# and values) as dicts and appends each to the run's own JSON-lines file as it happens.
# json.dumps, because agentrt depends on no faster encoder and a plain implementation would
# reach for the standard one.
# It parses the model's text with json.loads as any loop reading text tool calls must.

_SETTINGS = {
    "tool_timeout": 30.0,
    "max_concurrency": 8,
    "max_observation_chars": 8000,
    "max_turn_observation_chars": 16000,
    "trajectory_dir": None,
    "default_strategy": "bench",
    "token_budget": None,
    "max_turn_tokens": 4096,
    "constrain_tools": "auto",
    "turn_retries": 1,
    "session_store": None,
    "history_tokens": 2000,
    "embedding_model": None,
    "tool_format": "auto",
    "cache_dir": None,
}
_USAGE = {"prompt_tokens": 10, "completion_tokens": 10}


def _header(run_id: str, started: str) -> dict[str, object]:
    return {
        "type": "header",
        "format_version": 1,
        "agentrt_version": "0.1.0",
        "run_id": run_id,
        "created": started,
        "query": "bench",
        "session_id": None,
        "scope": None,
        "model": "bench",
        "tool_format": "hermes",
        "workspace": str(WORKSPACE),
        "workspace_fingerprint": "0" * 16,
        "strategy": "bench",
        "tools": {"finish": "0" * 16, "noop": "0" * 16},
        "mcp_servers": {},
        "settings": _SETTINGS,
        "deps_type": None,
        "output_type": None,
        "resumed_from": None,
    }


def _prelude(started: str) -> list[dict[str, object]]:
    """What a run reports before its first turn: the same four events agentrt emits."""
    return [
        {
            "type": "run_started",
            "started_at": started,
            "query": "bench",
            "session_id": None,
            "model": "bench",
            "tool_format": "hermes",
        },
        {
            "type": "classified",
            "query_type": "bench",
            "language": "und",
            "suggested_contexts": [],
            "method": "forced",
            "reason": None,
        },
        {
            "type": "strategy_selected",
            "strategy": "bench",
            "planner": "react",
            "step_budget": TURNS + 1,
        },
        {
            "type": "tools_narrowed",
            "tools": [
                {"name": "finish", "source": "builtin", "score": None, "duplicates": []},
                {"name": "noop", "source": "template", "score": None, "duplicates": []},
            ],
            "missed": [],
            "fit": None,
            "no_fit": False,
        },
    ]


FloorTools = Mapping[str, Callable[..., Awaitable[object]]]
"""The instrumented floor's tools by name, called with the model's arguments."""


async def instrumented_floor_once(
    trajectory_dir: Path, model: BenchModel, tools: FloorTools | None = None
) -> dict[str, object]:
    """The workload with nothing but asyncio and json, every event reported and written;
    returns the `run_finished` event. `tools` defaults to this workload's `noop`
    (benchmarks/peer_adapters/ passes its own, which count their calls)."""
    run_id, started = _new_run()
    t0 = time.perf_counter()
    seq = 0
    with (trajectory_dir / f"{run_id}.jsonl").open("w") as out:
        out.write(json.dumps(_header(run_id, started)) + "\n")

        def emit(event: dict[str, object]) -> None:
            nonlocal seq
            head = {"run_id": run_id, "seq": seq, "t": round(time.perf_counter() - t0, 6)}
            out.write(json.dumps(head | event) + "\n")
            seq += 1

        return await _floor_run(emit, model, tools or {"noop": _noop}, started, t0)


class _NoopArguments(BaseModel):
    i: int


_WRITTEN_THROUGH = ("model_response", "tool_started", "tool_finished")
"""The events after which agentrt writes the trajectory at once (`RunContext.durable`)."""


async def required_floor_once(trajectory_dir: Path, model: BenchModel) -> None:
    """The instrumented floor plus what the issue and the project's bar require of any runtime,
    written as leanly as plain code can: each event one of agentrt's published models
    (`event_adapter`), validated as it is built and serialised once; the trajectory written
    through (one append) after each model answer and each batch of tool starts and ends, as
    agentrt writes it, so that a crash loses no call that ran; each call's arguments checked
    against a model of its parameters, and run under a timeout and a concurrency limit; the
    events read in another task, as a run's reader reads them. What it lacks of agentrt is
    agentrt's own: planners, the streaming parser of every call format, guards, approvals."""
    events: asyncio.Queue[Event | None] = asyncio.Queue()
    run = asyncio.create_task(_required_run(trajectory_dir, model, events.put_nowait))
    while await events.get() is not None:
        pass
    await run


async def _required_run(
    trajectory_dir: Path, model: BenchModel, hand: Callable[[Event | None], None]
) -> None:
    run_id, started = _new_run()
    path = trajectory_dir / f"{run_id}.jsonl"
    lines = [json.dumps(_header(run_id, started)).encode()]
    t0 = time.perf_counter()
    seq, pending = 0, False
    loop = asyncio.get_running_loop()

    def write() -> None:
        nonlocal pending
        pending = False
        if not lines:  # a write scheduled before the last one, which took everything
            return
        with open(path, "ab") as out:  # the plain builtin: pathlib's open costs more
            out.write(b"\n".join(lines) + b"\n")
        lines.clear()

    def emit(event: dict[str, object]) -> None:
        nonlocal seq, pending
        head = {"run_id": run_id, "seq": seq, "t": round(time.perf_counter() - t0, 6)}
        built = event_adapter.validate_python(head | event)  # less than picking the class
        seq += 1
        lines.append(built.__pydantic_serializer__.to_json(built))
        if event["type"] in _WRITTEN_THROUGH and not pending:
            pending = True
            loop.call_soon(write)
        hand(built)

    slots = asyncio.Semaphore(8)

    async def noop(**arguments: object) -> object:
        checked = _NoopArguments.model_validate(arguments)
        async with slots, asyncio.timeout(30.0):
            return await _noop(checked.i)

    await _floor_run(emit, model, {"noop": noop}, started, t0)
    write()
    hand(None)


def _new_run() -> tuple[str, str]:
    """A run id and its start time, as agentrt writes them."""
    started = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return f"{started[:19].replace('-', '').replace(':', '')}-{uuid.uuid4().hex[:8]}", started


async def _floor_run(
    emit: Callable[[dict[str, object]], None],
    model: BenchModel,
    tools: FloorTools,
    started: str,
    t0: float,
) -> dict[str, object]:
    """A floor's run: the events before the first turn, the turns, the run's end."""
    for event in _prelude(started):
        emit(event)
    timings = {"model": 0.0, "tools": 0.0}
    messages: list[dict[str, object]] = [{"role": "user", "content": "bench"}]
    for step in range(1, TURNS + 2):
        await _floor_turn(emit, model, tools, step, timings, messages)
    finished: dict[str, object] = {
        "type": "run_finished",
        "status": "ok",
        "answer": model.turns[-1],
        "output": None,
        "error": None,
        "doubt": None,
        "steps": TURNS + 1,
        "usage": _total_usage(TURNS + 1),
        "timings": {"total": round(time.perf_counter() - t0, 6), **timings},
    }
    emit(finished)
    return finished


def _total_usage(calls: int) -> dict[str, int]:
    return {key: value * calls for key, value in _USAGE.items()}


async def _noop(i: int) -> int:
    return i


async def _floor_turn(
    emit: Callable[[dict[str, object]], None],
    model: BenchModel,
    tools: FloorTools,
    step: int,
    timings: dict[str, float],
    messages: list[dict[str, object]],
) -> None:
    emit({"type": "turn_started", "step": step})
    t = time.perf_counter()
    await asyncio.sleep(0)  # the model call: an await that answers at once
    text = model.turns[step - 1]
    parts = text.split("</tool_call>")[:-1]
    calls = [json.loads(part.removeprefix("<tool_call>")) for part in parts]
    for k, call in enumerate(calls, 1):
        emit(
            {
                "type": "tool_call",
                "step": step,
                "call_id": f"call_{step}_{k}",
                "name": call["name"],
                "arguments": call["arguments"],
                "format": "hermes",
                "depends_on": [],
            }
        )
    if not calls:
        emit({"type": "text_delta", "step": step, "text": text})
    duration = round(time.perf_counter() - t, 6)
    timings["model"] += duration
    emit(
        {
            "type": "model_response",
            "step": step,
            "purpose": "turn",
            "text": text,
            "reasoning": "",
            "tool_calls": [],
            "tool_confidence": None,
            "tools_withheld": False,
            "usage": _USAGE,
            "duration": duration,
        }
    )
    t = time.perf_counter()

    async def run_tool(k: int, call: dict[str, Any]) -> object:
        call_id = f"call_{step}_{k}"
        emit({"type": "tool_started", "step": step, "call_id": call_id, "name": call["name"]})
        t1 = time.perf_counter()
        output = await tools[call["name"]](**call["arguments"])
        emit(
            {
                "type": "tool_finished",
                "step": step,
                "call_id": call_id,
                "name": call["name"],
                "status": "ok",
                "output": output,
                "error": None,
                "duration": round(time.perf_counter() - t1, 6),
                "cached": False,
            }
        )
        return output

    outputs = await asyncio.gather(*(run_tool(k, call) for k, call in enumerate(calls, 1)))
    timings["tools"] += round(time.perf_counter() - t, 6)
    messages.append({"role": "assistant", "content": text, "tool_calls": calls})
    messages.extend(
        {"role": "tool", "tool_call_id": f"call_{step}_{k}", "content": json.dumps(output)}
        for k, output in enumerate(outputs, 1)
    )
