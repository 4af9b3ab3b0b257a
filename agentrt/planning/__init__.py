"""Internal. Planners: how a run gets from the query to an answer."""

from agentrt.planning.base import Planner, PlannerInput, PlannerResult
from agentrt.planning.dag import run_dag
from agentrt.planning.pipeline import run_pipeline
from agentrt.planning.react import run_react
from agentrt.planning.vm import run_vm

__all__ = ["PLANNERS", "Planner", "PlannerInput", "PlannerResult"]

PLANNERS: dict[str, Planner] = {
    "react": run_react,
    "dag": run_dag,
    "vm": run_vm,
    "pipeline": run_pipeline,
}
"""Planner kinds by the name a strategy gives in its `planner` field."""
