"""The floor: the workload with nothing but asyncio, as in workload.floor_once (gather over the
turn's tool coroutines, dict messages appended to a list), driven by the same call data."""

from __future__ import annotations

import asyncio
from typing import Any

from peer_adapters import (
    ANSWER,
    COUNTS,
    TOOLS_PER_TURN,
    TURNS,
    Run,
    check_answer,
    noop,
    sleep_ms,
    turn_calls,
)

TOOLS: dict[str, Any] = {"noop": noop, "sleep_ms": sleep_ms}


def build(tool_ms: int, per_turn: int = TOOLS_PER_TURN) -> Run:
    async def run() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "bench"}]
        for turn in range(TURNS):
            COUNTS.model_calls += 1
            calls = turn_calls(turn, tool_ms, per_turn)
            messages.append({"role": "assistant", "tool_calls": calls})
            results = await asyncio.gather(*(TOOLS[name](**args) for name, args in calls))
            messages.extend({"role": "tool", "content": str(r)} for r in results)
        COUNTS.model_calls += 1
        messages.append({"role": "assistant", "content": ANSWER})
        check_answer(messages[-1]["content"], "floor")

    return run
