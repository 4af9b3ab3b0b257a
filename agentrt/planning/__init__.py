"""Internal. Planners: how a run gets from the query to an answer.

Each planner file holds only its own algorithm; what they all do the same way (the opening
conversation, a model turn and its retry, one JSON answer, a plan's tool call, the budgets)
is in `kernel.py`.
"""

from typing import assert_never

from agentrt.planning.base import PlannerInput, PlannerResult, Progress, Retrieve
from agentrt.planning.react import run_react
from agentrt.strategy import DagStrategy, PipelineStrategy, ReactStrategy, Strategy, VmStrategy
from agentrt.workspace import Workspace

__all__ = ["PlannerInput", "PlannerResult", "Progress", "Retrieve", "run_planner"]


async def run_planner(
    task: PlannerInput, strategy: Strategy, workspace: Workspace, retrieve: Retrieve
) -> PlannerResult:
    """Run `task` with the planner `strategy` names, given that planner's own policy.

    :param workspace: its pipeline vocabulary, templates and registry (for `pipeline`)
    :param retrieve: finds the workspace's tools for a requirement (for `pipeline`)
    """
    # The other planners' modules are imported by the first run that uses them: most programs
    # use `react` only, and importing the other three costs every `import agentrt` ~10 ms.
    if isinstance(strategy, ReactStrategy):
        return await run_react(task, strategy)
    if isinstance(strategy, DagStrategy):
        from agentrt.planning.dag import run_dag

        return await run_dag(task, strategy)
    if isinstance(strategy, VmStrategy):
        from agentrt.planning.vm import run_vm

        return await run_vm(task, strategy)
    if isinstance(strategy, PipelineStrategy):
        from agentrt.planning.pipeline import run_pipeline

        return await run_pipeline(task, strategy, workspace, retrieve)
    assert_never(strategy)
