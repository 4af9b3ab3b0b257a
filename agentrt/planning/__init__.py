"""Planners: how a run gets from the query to an answer."""

from agentrt.planning.base import Planner, PlannerInput, PlannerResult
from agentrt.planning.react import run_react

__all__ = ["PLANNERS", "Planner", "PlannerInput", "PlannerResult"]

PLANNERS: dict[str, Planner] = {"react": run_react}
"""Planner kinds by the name a strategy gives in its `planner` field."""
