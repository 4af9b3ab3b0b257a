"""The instrumented floor: workload.py's `instrumented_floor_once` (a plain asyncio loop that
parses the model's text calls, runs them with `asyncio.gather`, builds agentrt's events as
dicts and appends each as a JSON line to the run's own file), driven by the same call data
and calling the counted tools of peer_adapters."""

from __future__ import annotations

import tempfile
from pathlib import Path

from workload import TURNS as WORKLOAD_TURNS
from workload import BenchModel, FloorTools, instrumented_floor_once

from peer_adapters import (
    COUNTS,
    TOOLS_PER_TURN,
    TURNS,
    Run,
    check_answer,
    noop,
    sleep_ms,
    text_turns,
)

TOOLS: FloorTools = {"noop": noop, "sleep_ms": sleep_ms}


class _Runs:
    """Runs of the floor; their JSON-lines files go to a folder removed with this object."""

    def __init__(self, tool_ms: int, per_turn: int) -> None:
        self._trajectories = tempfile.TemporaryDirectory(prefix="peers-floor-")
        self.folder = Path(self._trajectories.name)
        self.model = BenchModel(per_turn)
        self.model.turns = text_turns(tool_ms, per_turn)

    async def __call__(self) -> None:
        finished = await instrumented_floor_once(self.folder, self.model, TOOLS)
        # The floor's loop makes one model call a step, and says how many steps it took.
        steps = finished["steps"]
        COUNTS.model_calls += steps if isinstance(steps, int) else 0
        check_answer(finished["answer"], "instrumented floor")


def build(tool_ms: int, per_turn: int = TOOLS_PER_TURN) -> Run:
    if WORKLOAD_TURNS != TURNS:
        msg = f"workload.py has {WORKLOAD_TURNS} turns, peer_adapters {TURNS}: make them agree"
        raise RuntimeError(msg)
    return _Runs(tool_ms, per_turn)
