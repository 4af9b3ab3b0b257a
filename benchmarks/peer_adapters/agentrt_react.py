"""agentrt: the agent of workload.py (its `react` strategy, events built, the trajectory
written), each run consumed as a streaming backend would, counting what its events report."""

from __future__ import annotations

import tempfile
from pathlib import Path

from workload import TURNS as WORKLOAD_TURNS
from workload import WORKSPACE, BenchModel, make_agent

from agentrt import (
    Agent,
    AgentSettings,
    ModelResponseEvent,
    RunFinishedEvent,
    ToolFinishedEvent,
    Workspace,
)
from peer_adapters import COUNTS, TOOLS_PER_TURN, TURNS, Run, check_answer, text_turns


class _SleepModel(BenchModel):
    """workload.py's model, playing workload B's `sleep_ms` calls instead of `noop`."""

    def __init__(self, tool_ms: int) -> None:
        super().__init__(TOOLS_PER_TURN)
        self.turns = text_turns(tool_ms)


def _sleep_agent(tool_ms: int, trajectory_dir: Path) -> Agent:
    workspace = Workspace(WORKSPACE)
    # The workspace's `bench` strategy offers `noop`; workload B offers `sleep_ms` in its place.
    bench = workspace.strategies["bench"]
    workspace.strategies["bench"] = bench.model_copy(update={"tools": ["sleep_ms"]})
    return Agent(
        workspace=workspace,
        model=_SleepModel(tool_ms),
        settings=AgentSettings(trajectory_dir=trajectory_dir, default_strategy="bench"),
    )


class _Runs:
    """Runs of one agent; its trajectories go to a folder removed with this object."""

    def __init__(self, tool_ms: int, per_turn: int) -> None:
        self._trajectories = tempfile.TemporaryDirectory(prefix="peers-agentrt-")
        folder = Path(self._trajectories.name)
        if tool_ms == 0:
            self.agent = make_agent(folder, tools_per_turn=per_turn)
        else:
            self.agent = _sleep_agent(tool_ms, folder)

    async def __call__(self) -> None:
        end = None
        async for event in self.agent.run("bench", strategy="bench"):
            if isinstance(event, ModelResponseEvent):
                COUNTS.model_calls += 1
            elif isinstance(event, ToolFinishedEvent) and event.status == "ok" and not event.cached:
                COUNTS.tool_calls += 1
            elif isinstance(event, RunFinishedEvent):
                end = event
        if end is None or end.status != "ok":
            msg = f"an agentrt run did not end ok: {end}"
            raise RuntimeError(msg)
        check_answer(end.answer, "agentrt")


def build(tool_ms: int, per_turn: int = TOOLS_PER_TURN) -> Run:
    if WORKLOAD_TURNS != TURNS:
        msg = f"workload.py has {WORKLOAD_TURNS} turns, peer_adapters {TURNS}: make them agree"
        raise RuntimeError(msg)
    if tool_ms and per_turn != TOOLS_PER_TURN:
        msg = f"workload B runs {TOOLS_PER_TURN} tools a turn, not {per_turn}"
        raise ValueError(msg)
    return _Runs(tool_ms, per_turn)
