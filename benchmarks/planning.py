"""How close the `dag` planner's schedule comes to the critical path, against a level barrier.

    .venv/bin/python benchmarks/planning.py            # DAGs of 10, 25, 50, 100, 200 nodes
    .venv/bin/python benchmarks/planning.py --quick    # 10 and 25 nodes, one plan each

For each size, seeded random DAGs (each node depends on up to three earlier ones; durations
10-80 ms) are run through the real planner: a scripted model writes the plan, the executor runs
`sleep_ms` nodes with no concurrency cap, each starting when its own dependencies finish. Its
wall time (first node started → last node finished, from the events) is set against the
critical path (the longest chain of durations, the least any schedule can take) and against a
level-barrier schedule of the same plan (each topological level waits for its slowest node),
which is measured too, with the same sleeps.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentrt import (
    Agent,
    AgentSettings,
    PlanNode,
    ScriptedModel,
    ToolFinishedEvent,
    ToolStartedEvent,
)
from agentrt.planning.dag import plan_levels

WORKSPACE = Path(__file__).parent / "workspace"


def random_plan(size: int, rng: random.Random) -> tuple[list[PlanNode], dict[str, int]]:
    nodes: list[PlanNode] = []
    durations: dict[str, int] = {}
    for i in range(size):
        node_id = f"n{i}"
        earlier = [n.id for n in nodes[max(0, i - 12) : i]]
        deps = rng.sample(earlier, k=min(len(earlier), rng.randint(0, 3)))
        durations[node_id] = rng.randint(10, 80)
        args = {"ms": durations[node_id], "node": node_id}
        nodes.append(PlanNode(id=node_id, tool="sleep_ms", args=args, depends_on=deps))
    return nodes, durations


def critical_path(nodes: list[PlanNode], durations: dict[str, int]) -> float:
    finish: dict[str, int] = {}
    for n in nodes:  # generated in topological order
        finish[n.id] = durations[n.id] + max((finish[d] for d in n.depends_on), default=0)
    return max(finish.values()) / 1000


async def agentrt_wall(nodes: list[PlanNode]) -> float:
    plan = json.dumps({"plan": "", "nodes": [n.model_dump() for n in nodes]})
    done = json.dumps({"action": "finish", "answer": "done", "reason": "all ran"})
    agent = Agent(
        workspace=WORKSPACE,
        model=ScriptedModel([plan, done]),
        settings=AgentSettings(
            trajectory_dir=None, default_strategy="plan", max_concurrency=len(nodes)
        ),
    )
    starts, ends = [], []
    async for event in agent.run("bench", strategy="plan"):
        if isinstance(event, ToolStartedEvent):
            starts.append(event.t)
        elif isinstance(event, ToolFinishedEvent):
            ends.append(event.t)
            if event.status != "ok":
                raise RuntimeError(f"node {event.call_id} ended {event.status}")
    if len(ends) != len(nodes):
        raise RuntimeError(f"{len(ends)} of {len(nodes)} nodes ran")
    return max(ends) - min(starts)


async def barrier_wall(nodes: list[PlanNode], durations: dict[str, int]) -> float:
    started = time.perf_counter()
    for level in plan_levels(nodes):
        await asyncio.gather(*(asyncio.sleep(durations[n] / 1000) for n in level))
    return time.perf_counter() - started


async def main(sizes: list[int], plans: int) -> None:
    rng = random.Random(7)
    table = Table(title="dag scheduling: wall time ÷ critical path (median over plans)")
    for column in ("nodes", "critical path (ms)", "agentrt", "level barrier", "target"):
        table.add_column(column, justify="right")
    for size in sizes:
        ours, barrier, critical = [], [], []
        for _ in range(plans):
            nodes, durations = random_plan(size, rng)
            cp = critical_path(nodes, durations)
            critical.append(cp)
            ours.append(await agentrt_wall(nodes) / cp)
            barrier.append(await barrier_wall(nodes, durations) / cp)
        table.add_row(
            str(size),
            f"{statistics.median(critical) * 1000:.0f}",
            f"{statistics.median(ours):.3f}×",
            f"{statistics.median(barrier):.3f}×",
            "≤ 1.05×",
        )
    Console().print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small plans, one each")
    args = parser.parse_args()
    sizes, plans = ([10, 25], 1) if args.quick else ([10, 25, 50, 100, 200], 5)
    asyncio.run(main(sizes, plans))
