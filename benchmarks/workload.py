"""The shared workload: a zero-latency model, 10 turns × 4 parallel no-op tools.

Each run makes 11 model calls: ten turns that each call `noop` four times in parallel (with
distinct arguments, so the duplicate guard never answers), then a plain-text answer. The model
answers each call whole, at once, as a non-streaming server would; it is stateless (the turn
is read off the conversation), so one instance serves any number of concurrent runs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentrt import (
    Agent,
    AgentSettings,
    ModelChunk,
    ModelRequest,
    RunFinishedEvent,
    TextChunk,
    Usage,
    UsageChunk,
)

TURNS = 10
WORKSPACE = Path(__file__).parent / "workspace"


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
