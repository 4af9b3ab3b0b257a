"""Planners: how a run gets from the query to an answer."""

from agentrt.planning.base import Planner, PlannerInput, PlannerResult
from agentrt.planning.dag import run_dag
from agentrt.planning.react import run_react

__all__ = ["PLANNERS", "Planner", "PlannerInput", "PlannerResult"]

PLANNERS: dict[str, Planner] = {"react": run_react, "dag": run_dag}
"""Planner kinds by the name a strategy gives in its `planner` field."""
